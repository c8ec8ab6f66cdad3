#!/usr/bin/python3
"""Attention on the cpu target against PyTorch's fused CPU kernel,
F.scaled_dot_product_attention (torch >= 2.0), fp32, batch 1.

pbc compiles softmax(Q Kᵀ / sqrt(D)) V in the form its torch bridge emits
(K transposed by linalg.transpose, linalg.softmax between two
linalg.batch_matmul) and times it with `pbc --run` (median of --runs calls
on fresh random inputs); the peer runs in its own process (no two OpenMP
runtimes in one process) and times --runs calls of SDPA the same way. The
two alternate for --rounds rounds; the table shows each side's median over
the rounds and the ratio SDPA time / pbc time (> 1: pbc is faster).
`--unfused` also times pbc with --disable=attention-fusion.

usage: /usr/bin/python3 tools/bench/bench_attention.py --torch-python PY
           [--configs H,N,D;...] [--threads T] [--rounds R] [--runs N]
Peer settings: torch.set_num_threads(T) (default 2), pbc with
OMP_NUM_THREADS=T. PY: a Python with torch >= 2.0 (PyPI's; Debian's 1.13
has no SDPA).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PBC = os.environ.get("PBC", os.path.join(HERE, "..", "..", "build", "bin", "pbc"))

PEER = r"""
import statistics, sys, time, torch
h, n, d, runs, threads = map(int, sys.argv[1:6])
torch.set_num_threads(threads)
q, k, v = (torch.randn(1, h, n, d) for _ in range(3))
f = torch.nn.functional.scaled_dot_product_attention
for _ in range(3):
    f(q, k, v)
ts = []
for _ in range(runs):
    t = time.perf_counter(); f(q, k, v); ts.append(time.perf_counter() - t)
print(statistics.median(ts) * 1e3)
"""


def program(h, n, d):
    t = lambda *s: "tensor<%sxf32>" % "x".join(map(str, s))
    return "\n".join([
        "func.func @attention(%%q: %s, %%k: %s, %%v: %s) -> %s {" % (t(h, n, d), t(h, n, d), t(h, n, d), t(h, n, d)),
        "  %z = arith.constant 0.0 : f32",
        "  %%sc = arith.constant %r : f32" % (1.0 / d ** 0.5),
        "  %%es = tensor.empty() : %s" % t(h, n, n),
        "  %%zs = linalg.fill ins(%%z : f32) outs(%%es : %s) -> %s" % (t(h, n, n), t(h, n, n)),
        "  %%ekt = tensor.empty() : %s" % t(h, d, n),
        "  %%kt = linalg.transpose ins(%%k : %s) outs(%%ekt : %s) permutation = [0, 2, 1]" % (t(h, n, d), t(h, d, n)),
        "  %%s = linalg.batch_matmul ins(%%q, %%kt : %s, %s) outs(%%zs : %s) -> %s" % (t(h, n, d), t(h, d, n), t(h, n, n), t(h, n, n)),
        "  %%ss = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], "
        "iterator_types = [\"parallel\", \"parallel\", \"parallel\"]} ins(%%s : %s) outs(%%es : %s) {" % (t(h, n, n), t(h, n, n)),
        "  ^bb0(%a: f32, %o: f32):",
        "    %r = arith.mulf %a, %sc : f32",
        "    linalg.yield %r : f32",
        "  } -> %s" % t(h, n, n),
        "  %%p = linalg.softmax dimension(2) ins(%%ss : %s) outs(%%es : %s) -> %s" % (t(h, n, n), t(h, n, n), t(h, n, n)),
        "  %%eo = tensor.empty() : %s" % t(h, n, d),
        "  %%zo = linalg.fill ins(%%z : f32) outs(%%eo : %s) -> %s" % (t(h, n, d), t(h, n, d)),
        "  %%o = linalg.batch_matmul ins(%%p, %%v : %s, %s) outs(%%zo : %s) -> %s" % (t(h, n, n), t(h, n, d), t(h, n, d), t(h, n, d)),
        "  return %%o : %s" % t(h, n, d),
        "}", ""])


def time_pbc(path, runs, env, extra):
    out = subprocess.run([PBC, "--run=%d" % runs] + extra + [path], env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--torch-python", required=True)
    ap.add_argument("--configs", default="12,512,64", help="H,N,D;... (batch 1, queries = keys = N)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--unfused", action="store_true")
    a = ap.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    print("threads %d, %d rounds of %d calls, load %s" % (a.threads, a.rounds, a.runs,
                                                          os.getloadavg()[0]))
    print("| config | pbc fused ms |%s SDPA ms | ratio SDPA/pbc |" % (" pbc unfused ms |" if a.unfused else ""))
    print("|---|---|%s---|---|" % ("---|" if a.unfused else ""))
    with tempfile.TemporaryDirectory() as tmp:
        for cfg in a.configs.split(";"):
            h, n, d = map(int, cfg.split(","))
            path = os.path.join(tmp, "attention.mlir")
            with open(path, "w") as f:
                f.write(program(h, n, d))
            fused, unfused, peer = [], [], []
            for _ in range(a.rounds):
                fused.append(time_pbc(path, a.runs, env, []))
                if a.unfused:
                    unfused.append(time_pbc(path, a.runs, env, ["--disable=attention-fusion"]))
                peer.append(float(subprocess.run(
                    [a.torch_python, "-c", PEER, str(h), str(n), str(d), str(a.runs), str(a.threads)],
                    check=True, capture_output=True, text=True).stdout))
            fm, pm = statistics.median(fused), statistics.median(peer)
            print("| B1 H%d N%d D%d | %.3f |%s %.3f | %.2fx |" % (
                h, n, d, fm, (" %.3f |" % statistics.median(unfused)) if a.unfused else "", pm, pm / fm))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
