#!/usr/bin/python3
"""pbc's examples (examples/*.mlir, compiled by libpbc) against the same
computation in PyTorch 1.13 eager, on the same shapes and the same random
inputs: warm-up, interleaved rounds, medians. The outputs are compared first
(a fast wrong answer is not a result).

Each side runs in a process of its own (no shared heap, no two OpenMP
runtimes in one process), and the parent lets one side time a round at a
time. A round starts after a 0.25 s sleep, so the other side's idle threads
have stopped spinning, and then warms up for 50 ms: right after the sleep, a
side's two threads often took turns on one core (perf sched) until the
scheduler spread them, and rounds warmed up with 3 calls ran 3-4x slower
one time in three.

Both sides run with glibc's malloc told not to hand memory back to the
system (GLIBC_TUNABLES below): torch eager allocates its intermediates per
call, and whether glibc unmapped them after each call differed from process
to process (attention: ~100 page faults per call and 3x the time, or none).

usage: /usr/bin/python3 tools/bench/bench_examples.py [--runs N] [--rounds N]
                                    [--examples a,b,...] [--seed S]
examples: mlp, conv_block, layernorm, attention, blur (default: all)

Peer settings: torch.set_num_threads(2), OPENBLAS_CORETYPE=SkylakeX,
OPENBLAS_NUM_THREADS=1, the GLIBC_TUNABLES above (both sides); NHWC tensors
go to torch as channels_last views (its fast layout for these convolutions). pbc's code runs on 2 OpenMP threads.
Needs build/bin/libpbc.so (tools/build.sh).
"""

import argparse
import ctypes
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"  # Debian's OpenBLAS misdetects this CPU
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=67108864:"
                      "glibc.malloc.trim_threshold=268435456")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
import timing  # noqa: E402
if "PBC_LIBPBC" not in os.environ:
    os.environ["PBC_LIBPBC"] = os.path.join(ROOT, "build", "bin", "libpbc.so")


def load_libpbc():
    # The ctypes binding alone: the package around it imports torch, which
    # the parent and the pbc side must not load.
    path = os.path.join(ROOT, "tools", "torch", "pbc", "libpbc.py")
    spec = importlib.util.spec_from_file_location("pbc_libpbc", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


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
    # is timed. Then warm up until the woken threads sit on their own cores.
    time.sleep(0.25)
    start, calls = time.perf_counter(), 0
    while calls < 3 or time.perf_counter() - start < 0.05:
        fn()
        calls += 1
    return timing.median_ms(fn, runs)


def pbc_side(name, ins, out_shape):
    """The example compiled by libpbc, run on ins into a fresh output."""
    libpbc = load_libpbc()
    path = os.path.join(ROOT, "examples", name + ".mlir")
    program = libpbc.Program(open(path).read(), path)
    (entry,) = program.entries.values()
    out = np.empty(out_shape, np.float32)
    descs = [libpbc.descriptor(a.ctypes.data, a.shape) for a in ins + [out]]
    ptrs = [ctypes.addressof(d) for d in descs]
    run = lambda: entry.function(*ptrs)
    run()
    return run, out, (program, descs)


def torch_side(name, ins, out_shape):
    """The same computation in PyTorch eager, on the same inputs."""
    global torch, F
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(2)
    torch.set_grad_enabled(False)
    make_torch, to_pbc_layout = EXAMPLES[name]
    run = make_torch(*[torch.from_numpy(a) for a in ins])
    out = to_pbc_layout(run()).contiguous().numpy()
    return run, out, None


def child(a):
    # One side of one example: writes its output once, then times a round
    # per "round" line on stdin and answers with the round's median.
    name = a.examples
    sigs = [tuple(s) for s in json.loads(a.shapes)]
    rng = np.random.RandomState(a.seed)
    ins = [(rng.rand(*shape) * 2 - 1).astype(np.float32) for shape in sigs[:-1]]
    run, out, keep = (pbc_side if a.side == "pbc" else torch_side)(name, ins, sigs[-1])
    np.save(a.out, out)
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "round":
            break
        print(repr(median_ms(run, a.runs)), flush=True)
    del keep


def signature(name):
    # Input and output shapes, from the example's entry (libpbc reports the
    # shapes of compiled programs). The parent asks once and tells both
    # sides, so the torch side never loads libpbc or pbc's OpenMP runtime.
    libpbc = load_libpbc()
    path = os.path.join(ROOT, "examples", name + ".mlir")
    (entry,) = libpbc.Program(open(path).read(), path).entries.values()
    assert entry.num_outputs == 1, name
    return [shape for _, shape in entry.args]


def compare(name, seed, runs, rounds):
    shapes = json.dumps(signature(name))
    with tempfile.TemporaryDirectory() as tmp:
        sides = {}
        for side in ("pbc", "torch"):
            out = os.path.join(tmp, side + ".npy")
            proc = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--child", side, "--examples", name,
                 "--seed", str(seed), "--runs", str(runs), "--out", out, "--shapes", shapes],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            assert proc.stdout.readline().strip() == "ready", (name, side)
            sides[side] = (proc, np.load(out))
        got, want = sides["pbc"][1], sides["torch"][1]
        err = float(np.abs(got - want).max())
        scale = float(np.abs(want).max())
        assert err <= 1e-4 * max(scale, 1.0), (name, err, scale)
        times = {"pbc": [], "torch": []}
        for _ in range(rounds):
            for side, (proc, _) in sides.items():  # one side at a time
                proc.stdin.write("round\n")
                proc.stdin.flush()
                times[side].append(float(proc.stdout.readline()))
        for proc, _ in sides.values():
            proc.stdin.close()
            proc.wait()
    return statistics.median(times["torch"]), statistics.median(times["pbc"]), err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--examples", default=",".join(EXAMPLES))
    ap.add_argument("--seed", type=int, default=None, help="inputs' seed (default: the time)")
    ap.add_argument("--child", choices=("pbc", "torch"), dest="side", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--shapes", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.side:
        child(a)
        return
    seed = int(time.time()) % 2**31 if a.seed is None else a.seed
    print("torch eager: 2 threads, OPENBLAS_CORETYPE=%s; pbc via %s; seed %d" % (
        os.environ["OPENBLAS_CORETYPE"], os.environ["PBC_LIBPBC"], seed), flush=True)
    rows = []
    for name in a.examples.split(","):
        rows.append((name,) + compare(name, seed, a.runs, a.rounds))
        print("  %s done" % name, flush=True)
    print_table(rows, a)


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
