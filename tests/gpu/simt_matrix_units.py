#!/usr/bin/env python3
"""Numbers from pbc's matrix-unit kernels, without a GPU: each case is
compiled to S3 (`pbc --target=nvgpu|amdgpu --emit=s3`), its gpu.launch ops
run in the SIMT simulator (simt.py) on fresh random inputs, and the result
is compared with numpy. NVIDIA: mma.sync block tiles (any shape); AMD:
amdgpu.mfma (waves of 64) or amdgpu.wmma (waves of 32), one wave per 16x16
tile, on shapes of whole tiles (the others stay on the generic mapping). Every case runs under two schedules: warps forward
with async copies landing as late as their waits allow, and warps in
reverse with copies landing at once, so a missing barrier or wait changes
the numbers. Outputs start random, so an element the kernel never writes
fails the comparison too, and one stored twice in a launch is an error.

  simt_matrix_units.py --pbc PBC [--mlir-opt MLIR_OPT] [--target nvgpu|amdgpu]
                       [--chip sm_80|gfx90a|gfx942|gfx1100] [--only NAME]
                       [--random N] [--family f16|bf16|i8] [--seed S]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simt  # noqa: E402


def conv_nhwc_hwcf(x, w, stride, dilation):
    n, h, wd, c = x.shape
    kh, kw, _, f = w.shape
    oh = (h - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, oh, ow, f))
    for i in range(kh):
        for j in range(kw):
            win = x[:, i * dilation:i * dilation + stride * (oh - 1) + 1:stride,
                    j * dilation:j * dilation + stride * (ow - 1) + 1:stride, :]
            out += np.einsum("nhwc,cf->nhwf", win, w[i, j])
    return out


def contraction(spec):
    """The operands' and the loops' index letters of an einsum spec."""
    ins, out = spec.split("->")
    a, b = ins.split(",")
    dims = sorted(set(a + b + out), key=(a + b + out).index)
    return a, b, out, dims


def mlir_for(name, spec, sizes, out_type, ab="f16"):
    a, b, c, dims = contraction(spec)
    shape = lambda s: "x".join(str(sizes[d]) for d in s)
    amap = lambda s: "affine_map<(%s) -> (%s)>" % (", ".join(dims), ", ".join(s))
    iters = ", ".join('"reduction"' if d not in c else '"parallel"' for d in dims)
    ot = out_type
    if ot == "i32":  # i8 x i8 -> i32
        ext = ("%xe = arith.extsi %x : i8 to i32\n    %ye = arith.extsi %y : i8 to i32\n"
               "    %p = arith.muli %xe, %ye : i32")
    else:
        ext = (f"%xe = arith.extf %x : {ab} to f32\n    %ye = arith.extf %y : {ab} to f32\n    %p = arith.mulf %xe, %ye : f32"
               if ot == "f32" else f"%p = arith.mulf %x, %y : {ab}")
    add = "addi" if ot == "i32" else "addf"
    return f"""
func.func @{name}(%a: tensor<{shape(a)}x{ab}>, %b: tensor<{shape(b)}x{ab}>, %c: tensor<{shape(c)}x{ot}>) -> tensor<{shape(c)}x{ot}> {{
  %r = linalg.generic {{indexing_maps = [{amap(a)}, {amap(b)}, {amap(c)}], iterator_types = [{iters}]}}
      ins(%a, %b : tensor<{shape(a)}x{ab}>, tensor<{shape(b)}x{ab}>) outs(%c : tensor<{shape(c)}x{ot}>) {{
  ^bb0(%x: {ab}, %y: {ab}, %acc: {ot}):
    {ext}
    %s = arith.{add} %acc, %p : {ot}
    linalg.yield %s : {ot}
  }} -> tensor<{shape(c)}x{ot}>
  return %r : tensor<{shape(c)}x{ot}>
}}
"""


CONV = """
func.func @conv(%x: tensor<{N}x{H}x{W}x{C}xf16>, %w: tensor<{KH}x{KW}x{C}x{F}xf16>, %o: tensor<{N}x{OH}x{OW}x{F}x{T}>) -> tensor<{N}x{OH}x{OW}x{F}x{T}> {{
  %r = linalg.conv_2d_nhwc_hwcf {{dilations = dense<{D}> : tensor<2xi64>, strides = dense<{S}> : tensor<2xi64>}}
      ins(%x, %w : tensor<{N}x{H}x{W}x{C}xf16>, tensor<{KH}x{KW}x{C}x{F}xf16>) outs(%o : tensor<{N}x{OH}x{OW}x{F}x{T}>) -> tensor<{N}x{OH}x{OW}x{F}x{T}>
  return %r : tensor<{N}x{OH}x{OW}x{F}x{T}>
}}
"""


def f16(rng, shape):
    return (rng.standard_normal(shape) * 0.5).astype(np.float16)


def accumulate_case(text, shapes, product, out):
    """C += A * B on the function (A, B, C) -> C: C starts random (C0), so
    an element the kernel never writes fails. The function's last argument
    is the result buffer; the nest that copies C into it runs outside the
    launches, so it starts as C0 too."""
    def make(rng):
        A, B = f16(rng, shapes[0]), f16(rng, shapes[1])
        C0 = rng.standard_normal(shapes[2]).astype(np.float16 if out == "f16" else np.float32)
        expect = C0.astype(np.float64) + product(A.astype(np.float64), B.astype(np.float64))
        return [A, B, C0, C0.copy()], expect
    return text, make, out


def gemm_case(spec, sizes, out="f32"):
    a, b, c, _ = contraction(spec)
    shapes = [tuple(sizes[d] for d in s) for s in (a, b, c)]
    return accumulate_case(mlir_for("k", spec, sizes, out), shapes,
                           lambda A, B: np.einsum(spec, A, B), out)


def bf16_gemm_case(spec, sizes, out="f32"):
    """The same contraction on bf16 operands (bit patterns in the buffers,
    as pbc's C interface takes them), C f32 or bf16."""
    a, b, c, _ = contraction(spec)
    shapes = [tuple(sizes[d] for d in s) for s in (a, b, c)]

    def make(rng):
        A, B = (simt.f32_to_bf16(rng.standard_normal(s).astype(np.float32) * 0.5)
                for s in shapes[:2])
        C0 = rng.standard_normal(shapes[2]).astype(np.float32)
        if out == "bf16":
            C0 = simt.f32_to_bf16(C0)
        c0 = simt.bf16_to_f32(C0) if out == "bf16" else C0
        expect = c0.astype(np.float64) + np.einsum(
            spec, simt.bf16_to_f32(A).astype(np.float64), simt.bf16_to_f32(B).astype(np.float64))
        return [A, B, C0, C0.copy()], expect
    return mlir_for("k", spec, sizes, out, ab="bf16"), make, out


def int8_gemm_case(spec, sizes):
    """The contraction on i8 operands into i32 (exact): any wrong element
    shows."""
    a, b, c, _ = contraction(spec)
    shapes = [tuple(sizes[d] for d in s) for s in (a, b, c)]

    def make(rng):
        A, B = (rng.integers(-128, 128, s).astype(np.int8) for s in shapes[:2])
        C0 = rng.integers(-1000, 1000, shapes[2]).astype(np.int32)
        expect = C0.astype(np.int64) + np.einsum(spec, A.astype(np.int64), B.astype(np.int64))
        return [A, B, C0, C0.copy()], expect
    return mlir_for("k", spec, sizes, "i32", ab="i8"), make, "i32"


def conv_case(n, h, w, c, kh, kw, f, stride, dilation, out="f32"):
    oh = (h - dilation * (kh - 1) - 1) // stride + 1
    ow = (w - dilation * (kw - 1) - 1) // stride + 1
    text = CONV.format(N=n, H=h, W=w, C=c, KH=kh, KW=kw, F=f, OH=oh, OW=ow, T=out, S=stride, D=dilation)
    shapes = [(n, h, w, c), (kh, kw, c, f), (n, oh, ow, f)]
    return accumulate_case(text, shapes, lambda X, W: conv_nhwc_hwcf(X, W, stride, dilation), out)


# The fill before the contraction and the pointwise nest after it run in the
# kernel: relu(A * B + bias) truncated to f16, with no f32 intermediate.
EPILOGUE = """
func.func @k(%a: tensor<{A}xf16>, %b: tensor<{B}xf16>, %bias: tensor<{N}xf32>) -> tensor<{C}xf16> {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{C}xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<{C}xf32>) -> tensor<{C}xf32>
  %m = {OP} ins(%a, %b : tensor<{A}xf16>, tensor<{B}xf16>) outs(%z : tensor<{C}xf32>) -> tensor<{C}xf32>
  %eh = tensor.empty() : tensor<{C}xf16>
  %h = linalg.generic {{indexing_maps = [{ID}, {LAST}, {ID}], iterator_types = [{PAR}]}}
      ins(%m, %bias : tensor<{C}xf32>, tensor<{N}xf32>) outs(%eh : tensor<{C}xf16>) {{
    ^bb0(%x: f32, %y: f32, %o: f16):
      %s = arith.addf %x, %y : f32
      %r = arith.maximumf %s, %zero : f32
      %t = arith.truncf %r : f32 to f16
      linalg.yield %t : f16
  }} -> tensor<{C}xf16>
  return %h : tensor<{C}xf16>
}}
"""


def epilogue_case(op, a, b, c, product):
    dims = ", ".join("d%d" % i for i in range(len(c)))
    text = EPILOGUE.format(
        OP=op, A="x".join(map(str, a)), B="x".join(map(str, b)), C="x".join(map(str, c)), N=c[-1],
        ID="affine_map<(%s) -> (%s)>" % (dims, dims),
        LAST="affine_map<(%s) -> (d%d)>" % (dims, len(c) - 1),
        PAR=", ".join(['"parallel"'] * len(c)))

    def make(rng):
        A, B = f16(rng, a), f16(rng, b)
        bias = rng.standard_normal(c[-1]).astype(np.float32)
        D = rng.standard_normal(c).astype(np.float16)  # unwritten elements fail
        expect = np.maximum(product(A.astype(np.float64), B.astype(np.float64)) + bias, 0)
        return [A, B, bias, D], expect
    return text, make, "f16"


CONV_OP = ("linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, "
           "strides = dense<1> : tensor<2xi64>}")

CASES = {
    # 32x32 block tiles, 2 stages, 16-byte async copies of A and B.
    "mm": gemm_case("mk,kn->mn", dict(m=128, k=64, n=96)),
    # B read as [n][k] (element copies), f16 C.
    "mm_bt_f16": gemm_case("mk,nk->mn", dict(m=64, k=48, n=48), out="f16"),
    # A read as [k][m] (element copies).
    "mm_at": gemm_case("km,kn->mn", dict(m=64, k=96, n=32)),
    "bmm": gemm_case("bmk,bkn->bmn", dict(b=3, m=32, k=64, n=48)),
    # Implicit GEMM: rows n*oh*ow, reduction kh*kw*c read through the
    # window's subscripts (16-byte copies along c).
    "conv_s2": conv_case(1, 33, 33, 32, 3, 3, 64, 2, 1),
    "conv_d2_f16": conv_case(2, 12, 12, 16, 3, 3, 32, 1, 2, out="f16"),
    # 128x128 block tiles of 2x2 warps (64x64 each), 4 stages.
    "mm_large": gemm_case("mk,kn->mn", dict(m=1536, k=128, n=1536)),
    # Fill and bias + relu + truncf absorbed (fused copy-out).
    "mm_bias_relu": epilogue_case("linalg.matmul", (64, 96), (96, 128), (64, 128),
                                  lambda A, B: A @ B),
    "conv_bias_relu": epilogue_case(CONV_OP, (1, 10, 10, 32), (3, 3, 32, 64), (1, 8, 8, 64),
                                    lambda X, W: conv_nhwc_hwcf(X, W, 1, 1)),
    # The epilogue's f16 result staged in shared memory, 16-byte stores
    # (whole tiles; the two above too), batched.
    "bmm_bias_relu": epilogue_case("linalg.batch_matmul", (2, 64, 48), (2, 48, 64), (2, 64, 64),
                                   lambda A, B: A @ B),
    # Partial tiles: M and K past the tiles' edge (16-byte copies with zero
    # fill), N past it with element copies and f16 C, a convolution with
    # K = 7*7*3 (element copies), and a partial tile with the copy-out
    # absorbing bias + relu.
    "mm_partial": gemm_case("mk,kn->mn", dict(m=100, k=72, n=48)),
    "qk_partial_f16": gemm_case("mk,nk->mn", dict(m=64, k=64, n=77), out="f16"),
    "conv7x7_c3": conv_case(1, 21, 21, 3, 7, 7, 32, 2, 1),
    "mm_bias_relu_partial": epilogue_case("linalg.matmul", (50, 40), (40, 24), (50, 24),
                                          lambda A, B: A @ B),
    # bf16 operands (nvvm.mma.sync): f32 and bf16 C, B n x k, partial tiles.
    "bf16_mm": bf16_gemm_case("mk,kn->mn", dict(m=64, k=64, n=96)),
    "bf16_bmm_bt_bf16": bf16_gemm_case("bmk,bnk->bmn", dict(b=2, m=48, k=40, n=72), out="bf16"),
    # i8 x i8 -> i32 (mma.sync m16n8k32): B n x k (16-byte copies) and k x
    # n (element copies into an n-major tile), partial tiles.
    "i8_mm_bt": int8_gemm_case("mk,nk->mn", dict(m=64, k=128, n=64)),
    "i8_bmm": int8_gemm_case("bmk,bkn->bmn", dict(b=2, m=40, k=72, n=24)),
    # Whole tiles (what AMD's per-wave kernels take): bf16 C with B n x k,
    # i8 with A k x m, batched i8 (k a multiple of 32: CDNA3's i8 k).
    "bf16_bmm_bt_bf16_whole": bf16_gemm_case("bmk,bnk->bmn", dict(b=2, m=48, k=48, n=64),
                                             out="bf16"),
    "i8_mm_at": int8_gemm_case("km,kn->mn", dict(m=32, k=64, n=48)),
    "i8_bmm_whole": int8_gemm_case("bmk,bkn->bmn", dict(b=2, m=48, k=96, n=32)),
}

# The cases of whole 16x16 tiles (k a multiple of 32), which AMD's kernels
# take; the partial ones (mma.sync's masked tiles) are NVIDIA's only.
WHOLE_TILES = {"mm", "mm_bt_f16", "mm_at", "bmm", "conv_s2", "conv_d2_f16", "mm_large",
               "mm_bias_relu", "conv_bias_relu", "bmm_bias_relu", "bf16_mm",
               "bf16_bmm_bt_bf16_whole", "i8_mm_bt", "i8_mm_at", "i8_bmm_whole"}


def random_case(rng, bf16=False, i8=False, whole=False):
    """A contraction of random shape: C = A B with B k x n (k-major tile) or
    n x k (n-major tile), A m x k or k x m, batched or not, f32 or f16 C
    (bf16: bf16 operands, f32 or bf16 C); sizes from 8 to 160 (partial
    tiles), k a multiple of 8 (16-byte copies) or not (element copies).
    whole: sizes multiples of 16 (k of 32 for i8)."""
    spec = str(rng.choice(["mk,kn->mn", "mk,nk->mn", "bmk,bnk->bmn", "bmk,bkn->bmn"] +
                          (["km,kn->mn", "km,nk->mn"] if whole else [])))
    if whole:
        kq = 32 if i8 else 16
        sizes = dict(b=int(rng.integers(1, 4)), m=16 * int(rng.integers(1, 11)),
                     n=16 * int(rng.integers(1, 11)), k=kq * int(rng.integers(1, 160 // kq + 1)))
    else:
        k = int(rng.choice([8 * int(rng.integers(1, 21)), int(rng.integers(8, 161))]))
        sizes = dict(b=int(rng.integers(1, 4)), m=int(rng.integers(8, 161)),
                     n=int(rng.integers(8, 161)), k=k)
    if i8:
        name = "%s %s i8 x i8 -> i32" % (spec, " ".join("%s=%d" % kv for kv in sizes.items()
                                                         if kv[0] in spec))
        return name, int8_gemm_case(spec, sizes)
    out = str(rng.choice(["f32", "bf16" if bf16 else "f16"]))
    name = "%s %s %s%s" % (spec, " ".join("%s=%d" % kv for kv in sizes.items() if kv[0] in spec),
                           "bf16 x bf16 -> " if bf16 else "", out)
    return name, (bf16_gemm_case if bf16 else gemm_case)(spec, sizes, out)


# The matrix instructions each target's kernels must contain, and the width
# of a wave per chip (RDNA3 runs wave 32 for WMMA; CDNA is wave 64).
UNIT_OPS = {"nvgpu": ("nvgpu.mma.sync", "nvvm.mma.sync"), "amdgpu": ("amdgpu.mfma", "amdgpu.wmma")}
WAVE = {"gfx1100": 32, "gfx90a": 64, "gfx942": 64}


def run_case(name, pbc, mlir_opt, chip, rng, case=None, target="nvgpu"):
    text, make, out = case or CASES[name]
    generic, problem = simt.s3_generic(pbc, mlir_opt, chip, text, target=target)
    if problem:
        return problem
    if not any(u in generic for u in UNIT_OPS[target]):
        return "no %s in the S3 output" % " or ".join(UNIT_OPS[target])
    func = list(simt.parse_module(generic).values())[0]
    args, expect = make(rng)
    tol = {"f16": 4e-3, "bf16": 8e-3, "i32": 0}.get(out, 1e-4)
    for order, late in (("forward", True), ("reverse", False)):
        run = [x.copy() for x in args]
        try:
            simt.run_function(func, run, order=order, late_copies=late, warp=WAVE.get(chip, 32))
        except RuntimeError as e:  # a race, a barrier mismatch, copies in flight
            return "%s warps: %s" % (order, e)
        got = simt.bf16_to_f32(run[-1]) if out == "bf16" else run[-1]
        err = np.max(np.abs(got.astype(np.float64) - expect)) / np.max(np.abs(expect))
        if not np.isfinite(err) or err > tol:  # i32: exact
            bad = np.argwhere(~np.isclose(got, expect, rtol=tol, atol=tol * np.max(np.abs(expect))))
            return "%s warps, %s copies: relative error %.3g (%d elements off, first at %s)" % (
                order, "late" if late else "eager", err, len(bad), tuple(bad[0]) if len(bad) else "-")
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pbc", required=True)
    p.add_argument("--mlir-opt", default="/usr/lib/llvm-22/bin/mlir-opt")
    p.add_argument("--target", choices=("nvgpu", "amdgpu"), default="nvgpu")
    p.add_argument("--chip", help="default sm_80 (nvgpu), gfx90a (amdgpu)")
    p.add_argument("--only")
    p.add_argument("--random", type=int, default=0, help="also N contractions of random shape")
    p.add_argument("--family", choices=("f16", "bf16", "i8"), default="f16",
                   help="operand type of the fixed cases (by name prefix) and random ones")
    p.add_argument("--seed", type=int, default=None)
    args = p.parse_args()
    amd = args.target == "amdgpu"
    chip = args.chip or ("gfx90a" if amd else "sm_80")
    seed = args.seed if args.seed is not None else int(time.time()) % 100000
    print("seed %d" % seed)
    rng = np.random.default_rng(seed)
    failed = 0
    for _ in range(args.random):
        name, case = random_case(rng, args.family == "bf16", args.family == "i8", whole=amd)
        problem = run_case(name, args.pbc, args.mlir_opt, chip, rng, case, args.target)
        print(("FAIL %s: %s" % (name, problem)) if problem else "PASS %s" % name, flush=True)
        failed += bool(problem)
    for name in CASES:
        family = name.split("_")[0] if name.split("_")[0] in ("bf16", "i8") else "f16"
        if (args.only and name != args.only) or (not args.only and family != args.family):
            continue
        if amd and name not in WHOLE_TILES:
            continue
        problem = run_case(name, args.pbc, args.mlir_opt, chip, rng, target=args.target)
        print(("FAIL %s: %s" % (name, problem)) if problem else "PASS %s" % name, flush=True)
        failed += bool(problem)
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
