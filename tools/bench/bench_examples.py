#!/usr/bin/python3
"""pbc's examples (examples/*.mlir, compiled by libpbc) against the same
computation in PyTorch 1.13 eager, on the same shapes and fresh random
inputs: warm-up, interleaved rounds, medians. Each example runs in a process
of its own, pbc and torch interleaved in it, so no example's state (the two
OpenMP runtimes' thread pools, torch's caches) carries into the next one's
timings. The outputs are compared first (a fast wrong answer is not a
result).

usage: /usr/bin/python3 tools/bench/bench_examples.py [--runs N] [--rounds N]
                                                      [--examples a,b,...]
examples: mlp, conv_block, layernorm, attention, blur (default: all)

Peer settings: torch.set_num_threads(2), OPENBLAS_CORETYPE=SkylakeX,
OPENBLAS_NUM_THREADS=1; NHWC tensors go to torch as channels_last views (its
fast layout for these convolutions). pbc's code runs on 2 OpenMP threads.
Needs build/bin/libpbc.so (tools/build.sh).
"""

import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import time

os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"  # Debian's OpenBLAS misdetects this CPU
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "torch"))
if "PBC_LIBPBC" not in os.environ:
    os.environ["PBC_LIBPBC"] = os.path.join(ROOT, "build", "bin", "libpbc.so")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from pbc.libpbc import Program, descriptor  # noqa: E402


def nhwc_to_torch(x):  # an NHWC tensor as a channels_last NCHW view
    return x.permute(0, 3, 1, 2)


def hwcf_to_torch(w):  # HWCF filter -> FCHW
    return w.permute(3, 2, 0, 1).contiguous()


def conv_block(x, w, b):
    xt, wt = nhwc_to_torch(x), hwcf_to_torch(w)
    return lambda: torch.relu(F.conv2d(xt, wt, b, padding=1))


def blur(x):
    taps = torch.tensor([1.0, 4.0, 6.0, 4.0, 1.0]) / 16
    wh = taps.view(1, 1, 1, 5).repeat(3, 1, 1, 1)
    wv = taps.view(1, 1, 5, 1).repeat(3, 1, 1, 1)
    xt = nhwc_to_torch(x)
    return lambda: F.conv2d(F.conv2d(xt, wh, groups=3), wv, groups=3)


# name -> torch closure builder over the entry's inputs, and how to read the
# torch result in pbc's layout.
EXAMPLES = {
    "mlp": (lambda x, w1, b1, w2, b2: lambda: torch.softmax(
        torch.relu(x @ w1 + b1) @ w2 + b2, dim=1), lambda y: y),
    "conv_block": (conv_block, lambda y: y.permute(0, 2, 3, 1)),
    "layernorm": (lambda x, g, b: lambda: F.layer_norm(x, (x.shape[-1],), g, b, eps=1e-5),
                  lambda y: y),
    "attention": (lambda q, k, v: lambda: torch.softmax(
        torch.bmm(q, k.transpose(1, 2)) * 0.125, dim=2).bmm(v), lambda y: y),
    "blur": (blur, lambda y: y.permute(0, 2, 3, 1)),
}


def median_ms(fn, runs):
    # Each side's idle OpenMP threads spin for a while after its last run
    # (libomp's KMP_BLOCKTIME is 200 ms): let them sleep before the other side
    # is timed, then warm up, so neither is timed against the other's spinners.
    time.sleep(0.25)
    for _ in range(3):
        fn()
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--examples", default=",".join(EXAMPLES))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    names = a.examples.split(",")
    if not a.child:
        rows = []
        for name in names:
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child",
                                  "--runs", str(a.runs), "--rounds", str(a.rounds),
                                  "--examples", name], stdout=subprocess.PIPE, text=True,
                                 check=True).stdout
            for line in out.splitlines():
                if line.startswith("ROW\t"):
                    _, n, t, p, err = line.split("\t")
                    rows.append((n, float(t), float(p), float(err)))
                else:
                    print(line, flush=True)
        print_table(rows, a)
        return
    torch.set_num_threads(2)
    seed = int(time.time())
    torch.manual_seed(seed)
    print("torch %s, %d threads, OPENBLAS_CORETYPE=%s; pbc via %s; seed %d" % (
        torch.__version__, torch.get_num_threads(), os.environ["OPENBLAS_CORETYPE"],
        os.environ["PBC_LIBPBC"], seed))
    for name in names:
        make_torch, to_pbc_layout = EXAMPLES[name]
        path = os.path.join(ROOT, "examples", name + ".mlir")
        program = Program(open(path).read(), path)
        (entry,) = program.entries.values()
        ins = [torch.rand(shape) * 2 - 1 for _, shape in entry.args[:entry.num_inputs]]
        outs = [torch.empty(shape) for _, shape in entry.args[entry.num_inputs:]]
        descs = [descriptor(t.data_ptr(), tuple(t.shape)) for t in ins + outs]
        ptrs = [ctypes.addressof(d) for d in descs]

        def run_pbc():
            entry.function(*ptrs)

        run_torch = make_torch(*ins)
        with torch.no_grad():
            run_pbc()
            want = to_pbc_layout(run_torch())
            err = (outs[0] - want).abs().max().item()
            scale = want.abs().max().item()
            assert err <= 1e-4 * max(scale, 1.0), (name, err, scale)
            tp, tt = [], []
            for _ in range(a.rounds):
                tp.append(median_ms(run_pbc, a.runs))
                tt.append(median_ms(run_torch, a.runs))
        p, t = statistics.median(tp), statistics.median(tt)
        print("ROW\t%s\t%r\t%r\t%r" % (name, t, p, err))
        print("  %s done" % name, flush=True)


def print_table(rows, a):
    print()
    print("| example | torch eager ms | pbc ms | pbc vs eager | max abs err |")
    print("|---|---|---|---|---|")
    for name, t, p, err in rows:
        print("| %s | %.3f | %.3f | %.2fx | %.1e |" % (name, t, p, t / p, err))
    print("\n(speed ratio: >1 means pbc is faster; medians of %d interleaved rounds x %d runs)"
          % (a.rounds, a.runs))


if __name__ == "__main__":
    main()
