#!/usr/bin/env python3
"""Numbers from pbc's GPU reduction kernels, without a GPU: each case (a
reduction over random shapes: sums, products, max/min with NaN-skipping and
NaN-propagating operators, a non-zero initial value from an input, rows
whose length is and is not a multiple of the warp, a column reduction that
keeps one thread per output) is compiled to S3, mapped to the GPU by the
first half of S4 (`pbc-gpu-map-parallel`, then MLIR's
convert-parallel-loops-to-gpu), and its gpu.launch ops run in the SIMT
simulator (simt.py: xor shuffles, masked lanes) on fresh random inputs,
compared with numpy. The warp-per-row kernels are required to appear
(gpu.shuffle) where the row is contiguous, and not where it is not.

  simt_reductions.py --pbc PBC --pbc-opt PBC_OPT [--mlir-opt MLIR_OPT] [--chip sm_80]
                     [--shapes N] [--seed S] [--only NAME]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simt  # noqa: E402

S4_PREFIX = ("func.func(lower-affine);canonicalize;"
             "pbc-gpu-map-parallel{threads=256 warp-size=32};"
             "func.func(convert-parallel-loops-to-gpu);func.func(lower-affine);canonicalize")

# name: (combiner op, numpy reduction, initial value: "fill" constant or
# "input", values' range, reduced dimension: "last" or "first", whether the
# warp-per-row mapping applies).
CASES = {
    "row_sum": ("arith.addf", np.sum, "fill", 0.0, (-1, 1), "last", True),
    "row_sum_into_input": ("arith.addf", np.sum, "input", None, (-1, 1), "last", True),
    "row_product": ("arith.mulf", np.prod, "fill", 1.0, (0.97, 1.03), "last", True),
    "row_max_num": ("arith.maxnumf", np.max, "fill", "0xFF800000", (-5, 5), "last", True),
    "row_min_propagating": ("arith.minimumf", np.min, "fill", "0x7F800000", (-5, 5), "last", True),
    "column_sum": ("arith.addf", np.sum, "fill", 0.0, (-1, 1), "first", False),
}


def shapes_for(rng, case):
    """Random (batch, rows, columns): columns below, at and past a warp,
    multiples of it or not."""
    cols = int(rng.choice([int(rng.integers(1, 32)), 32, 64, int(rng.integers(33, 300))]))
    return int(rng.integers(1, 4)), int(rng.integers(1, 21)), cols


def program(case, b, r, c):
    op, _, init, fill, _, dim, _ = CASES[case]
    out_shape = "%dx%d" % (b, r) if dim == "last" else "%dx%d" % (b, c)
    red = "(d0, d1, d2) -> (d0, d1)" if dim == "last" else "(d0, d1, d2) -> (d0, d2)"
    iters = ('"parallel", "parallel", "reduction"' if dim == "last"
             else '"parallel", "reduction", "parallel"')
    init_arg = ", %%i: tensor<%sxf32>" % out_shape if init == "input" else ""
    if init == "input":
        acc = "%i"
        pre = ""
    else:
        const = ("%s : f32" % fill) if isinstance(fill, str) else "%r : f32" % float(fill)
        pre = f"""  %z = arith.constant {const}
  %e = tensor.empty() : tensor<{out_shape}xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<{out_shape}xf32>) -> tensor<{out_shape}xf32>
"""
        acc = "%f"
    return f"""func.func @{case}(%x: tensor<{b}x{r}x{c}xf32>{init_arg}) -> tensor<{out_shape}xf32> {{
{pre}  %y = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<{red}>],
      iterator_types = [{iters}]}} ins(%x : tensor<{b}x{r}x{c}xf32>) outs({acc} : tensor<{out_shape}xf32>) {{
  ^bb0(%v: f32, %a: f32):
    %n = {op} %v, %a : f32
    linalg.yield %n : f32
  }} -> tensor<{out_shape}xf32>
  return %y : tensor<{out_shape}xf32>
}}
"""


def run_case(case, shape, tools, rng):
    _, reduce, init, _, (lo, hi), dim, warp_rows = CASES[case]
    b, r, c = shape
    text = program(case, b, r, c)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "in.mlir")
        with open(src, "w") as f:
            f.write(text)
        s3 = subprocess.run([tools.pbc, "--target=nvgpu", "--chip=" + tools.chip, "--emit=s3", src],
                            capture_output=True, text=True)
        if s3.returncode:
            return "pbc failed:\n" + s3.stderr
        s4 = subprocess.run([tools.pbc_opt, "--target=nvgpu", "-", "-p", S4_PREFIX],
                            input=s3.stdout, capture_output=True, text=True)
        if s4.returncode:
            return "pbc-opt failed:\n" + s4.stderr
        generic = subprocess.run([tools.mlir_opt, "--mlir-print-op-generic"], input=s4.stdout,
                                 capture_output=True, text=True)
        if generic.returncode:
            return "mlir-opt failed:\n" + generic.stderr
    shuffled = '"gpu.shuffle"' in generic.stdout
    # (A row of one leaves no loop to map; a single row of a single batch is
    # a whole-tensor reduction, not a parallel loop.)
    if shuffled != (warp_rows and c > 1 and b * r > 1):
        return "warp-per-row mapping %s" % ("missing" if warp_rows else "used on a column reduction")
    func = list(simt.parse_module(generic.stdout).values())[0]
    x = rng.uniform(lo, hi, size=(b, r, c)).astype(np.float32)
    axis = 2 if dim == "last" else 1
    if case.startswith("row_max") or case.startswith("row_min"):
        # NaNs: skipped by maxnumf, propagated by minimumf.
        x.reshape(-1)[rng.integers(0, x.size, size=max(1, x.size // 50))] = np.nan
    out_shape = (b, r) if dim == "last" else (b, c)
    args = [x]
    if init == "input":
        start = rng.uniform(-1, 1, size=out_shape).astype(np.float32)
        args.append(start)
    args.append(rng.uniform(-9, 9, size=out_shape).astype(np.float32))  # the result: unwritten shows
    with np.errstate(invalid="ignore"):
        if case == "row_max_num":
            expect = np.fmax.reduce(x, axis=axis)
            expect = np.where(np.isnan(expect), -np.inf, expect)
        else:
            expect = reduce(x.astype(np.float64), axis=axis)
        if init == "input":
            expect = expect + start
    for order in ("forward", "reverse"):
        run = [a.copy() for a in args]
        try:
            simt.run_function(func, run, order=order)
        except RuntimeError as e:
            return "%s warps: %s" % (order, e)
        got = run[-1].astype(np.float64)
        same = (got == expect) | (np.isnan(got) & np.isnan(expect)) | (
            np.abs(got - expect) <= 1e-5 * (1 + np.abs(expect)) * c)
        if not same.all():
            i = tuple(int(v) for v in np.argwhere(~same)[0])
            return "%s warps, shape %s: %d of %d off, first at %s: got %r, expected %r" % (
                order, shape, int((~same).sum()), same.size, i, got[i], expect[i])
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pbc", required=True)
    p.add_argument("--pbc-opt", required=True)
    p.add_argument("--mlir-opt", default="/usr/lib/llvm-22/bin/mlir-opt")
    p.add_argument("--chip", default="sm_80")
    p.add_argument("--shapes", type=int, default=4, help="random shapes per case")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--only")
    args = p.parse_args()
    # pbc-opt finds the nvgpu plugin where pbc's own build keeps it (lit
    # sets the path itself).
    os.environ.setdefault("PBC_PLUGIN_PATH", os.path.dirname(os.path.abspath(args.pbc)))
    seed = args.seed if args.seed is not None else int(time.time()) % 100000
    print("seed %d" % seed)
    rng = np.random.default_rng(seed)
    failed = 0
    for case in CASES:
        if args.only and case != args.only:
            continue
        for _ in range(args.shapes):
            shape = shapes_for(rng, case)
            problem = run_case(case, shape, args, rng)
            print(("FAIL %s %s: %s" % (case, shape, problem)) if problem
                  else "PASS %s %s" % (case, shape), flush=True)
            failed += bool(problem)
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
