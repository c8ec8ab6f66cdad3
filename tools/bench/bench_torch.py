#!/usr/bin/python3
"""PyTorch models through the pbc bridge vs PyTorch eager and PyTorch's best
CPU path here (torch.jit.trace + freeze + optimize_for_inference), batch 1,
2 threads, in one process: warm-up, then interleaved rounds, medians.

usage: /usr/bin/python3 tools/bench/bench_torch.py [--runs N] [--models a,b,...]
models: mlp, resnet18, mobilenet_v2, encoder (default: all), or any
torchvision classifier by name (efficientnet_b0, resnet50, ...)

Peers' settings: torch.set_num_threads(2), OPENBLAS_CORETYPE=SkylakeX,
OPENBLAS_NUM_THREADS=1 (torch's own threads do the parallel work); pbc's code
runs on 2 OpenMP threads (OMP_NUM_THREADS=2). The script restarts itself with
LLVM's libomp preloaded, so PyTorch and pbc share one OpenMP runtime
(tools/torch/pbc/openmp.py; --two-runtimes keeps PyTorch on libgomp).
Needs build/bin/libpbc.so (tools/build.sh).
"""

import argparse
import importlib.util
import os
import statistics
import sys
import time

os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"  # Debian's OpenBLAS misdetects this CPU
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
if "--two-runtimes" not in sys.argv:  # the bridge's openmp.py alone: no torch yet
    _spec = importlib.util.spec_from_file_location(
        "pbc_openmp", os.path.join(HERE, "..", "torch", "pbc", "openmp.py"))
    _openmp = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_openmp)
    _openmp.restart_with_libomp()
sys.path.insert(0, os.path.join(HERE, "..", "torch"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "torch"))

import torch  # noqa: E402

import pbc  # noqa: E402
import test_models  # noqa: E402  (the same models as the tests)
from common import randomize_norms  # noqa: E402


def timed(fn, x, runs):
    ts = []
    with torch.no_grad():
        for _ in range(runs):
            t = time.perf_counter()
            fn(x)
            ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def best_torch(model, x):
    try:
        with torch.no_grad():
            t = torch.jit.freeze(torch.jit.trace(model, x).eval())
            return torch.jit.optimize_for_inference(t)
    except Exception as e:  # some models do not trace or optimize
        print("  (torch.jit path unavailable: %s)" % str(e).splitlines()[0])
        return None


def main():
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", default="mlp,resnet18,mobilenet_v2,encoder")
    ap.add_argument("--two-runtimes", action="store_true",
                    help="leave PyTorch on its libgomp (pbc on libomp): no preload")
    a = ap.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(0)
    print("torch %s, %d threads, OPENBLAS_CORETYPE=%s; pbc via %s" % (
        torch.__version__, torch.get_num_threads(), os.environ["OPENBLAS_CORETYPE"],
        pbc.libpbc.library()._name))
    rows = []
    for name in a.models.split(","):
        if hasattr(test_models, name):
            model, x = getattr(test_models, name)()
        else:  # any torchvision classifier, on one 224x224 image
            import torchvision
            model, x = getattr(torchvision.models, name)(), torch.randn(1, 3, 224, 224)
        model = randomize_norms(model).eval()
        t0 = time.perf_counter()
        fast = pbc.jit(model)
        with torch.no_grad():
            fast(x)
        compile_s = time.perf_counter() - t0
        jit = best_torch(model, x)
        contenders = [("eager", model), ("torch.jit", jit), ("pbc", fast)]
        for _, fn in contenders:  # warm-up
            if fn is not None:
                timed(fn, x, 3)
        times = {n: [] for n, _ in contenders}
        for _ in range(a.rounds):
            for n, fn in contenders:
                if fn is not None:
                    times[n].append(timed(fn, x, a.runs))
        med = {n: statistics.median(v) if v else float("nan") for n, v in times.items()}
        best = min(v for n, v in med.items() if n != "pbc" and v == v)
        rows.append((name, med["eager"], med["torch.jit"], med["pbc"], med["eager"] / med["pbc"],
                     best / med["pbc"], compile_s))
        print("  %s done" % name, flush=True)
    print("\n| model (batch 1) | eager ms | torch.jit+optimize ms | pbc ms | pbc vs eager "
          "| pbc vs best torch | pbc first call (compile) s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %.2f | %.2f | %.2f | %.2fx | %.2fx | %.1f |" % r)
    print("\n(speed ratios: >1 means pbc is faster; medians of %d rounds x %d runs)"
          % (a.rounds, a.runs))


if __name__ == "__main__":
    main()
