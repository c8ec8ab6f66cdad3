#!/usr/bin/python3
"""Compile time of a 200-op program: 50 layers of (fill, matmul, bias add,
relu) on 64x64 tensors, i.e. 50 linalg.fill + 50 linalg.matmul + 100
elementwise linalg.generic. Compiles it with `pbc --timing --emit=obj` and
prints the time of each stage (S3 is the optimizer the issue's bar is on:
under 1 s on a 2-core machine), median of --runs runs.

usage: /usr/bin/python3 tools/bench/compile_time.py [--pbc PATH] [--runs N]
"""

import argparse
import os
import re
import statistics
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")


def program(layers=50, n=64):
    t = "tensor<%dx%dxf32>" % (n, n)
    ident = "affine_map<(i, j) -> (i, j)>"
    lines = ["func.func @deep(%%x: %s, %%w: %s, %%b: %s) -> %s {" % (t, t, t, t),
             "  %zero = arith.constant 0.0 : f32",
             "  %%e = tensor.empty() : %s" % t]
    cur = "%x"
    for i in range(layers):
        lines += [
            "  %%f%d = linalg.fill ins(%%zero : f32) outs(%%e : %s) -> %s" % (i, t, t),
            "  %%m%d = linalg.matmul ins(%s, %%w : %s, %s) outs(%%f%d : %s) -> %s"
            % (i, cur, t, t, i, t, t),
            "  %%a%d = linalg.generic {indexing_maps = [%s, %s, %s], iterator_types = "
            "[\"parallel\", \"parallel\"]} ins(%%m%d, %%b : %s, %s) outs(%%e : %s) {" %
            (i, ident, ident, ident, i, t, t, t),
            "  ^bb0(%p: f32, %q: f32, %o: f32):",
            "    %s = arith.addf %p, %q : f32",
            "    linalg.yield %s : f32",
            "  } -> %s" % t,
            "  %%r%d = linalg.generic {indexing_maps = [%s, %s], iterator_types = "
            "[\"parallel\", \"parallel\"]} ins(%%a%d : %s) outs(%%e : %s) {" %
            (i, ident, ident, i, t, t),
            "  ^bb0(%p: f32, %o: f32):",
            "    %s = arith.maximumf %p, %zero : f32",
            "    linalg.yield %s : f32",
            "  } -> %s" % t,
        ]
        cur = "%%r%d" % i
    lines += ["  return %s : %s" % (cur, t), "}"]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pbc", default=os.path.join(ROOT, "build", "bin", "pbc"))
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "deep.mlir")
        with open(src, "w") as f:
            f.write(program())
        stages = {}
        for _ in range(a.runs):
            r = subprocess.run([a.pbc, "--timing", "--emit=obj", "-o", os.path.join(d, "x.o"),
                                src], capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit("pbc failed:\n" + r.stderr)
            # "   15.264  s3     (stage total)" (milliseconds)
            for m in re.finditer(r"^\s*([0-9.]+)\s+(\S+)\s+\((?:stage total|all passes|"
                                 r"translation, LLVM -O3, emission)\)", r.stderr, re.M):
                stages.setdefault(m.group(2), []).append(float(m.group(1)))
        if not stages:
            raise SystemExit("no stage times in pbc --timing output:\n" + r.stderr)
    print("200-op program (50 x fill+matmul+bias+relu, 64x64 f32), %d runs, median ms:" % a.runs)
    for name, ts in stages.items():
        print("  %-8s %9.1f" % (name, statistics.median(ts)))


if __name__ == "__main__":
    main()
