"""The PyTorch bridge's two lowerings, side by side: the bridge's own
(aten.py: channels-last convolutions, batch norms folded) and torch-mlir's
FX importer (torch.export, torch-mlir's linalg: channels-first convolutions
that pbc's S1 turns channels-last). Per model: pbc.jit(lowering="bridge")
and pbc.jit(lowering="torch-mlir") compiled in this process, outputs
compared with eager, then called in interleaved rounds; medians. 2 OpenMP
threads; run in the frontends environment with libomp preloaded:

  PY=$(tools/python-env.sh | tail -1)
  OMP_NUM_THREADS=2 LD_PRELOAD=/usr/lib/llvm-22/lib/libomp.so.5 PYTHONPATH=tools/torch \\
    $PY tools/bench/lowering_compare.py [--models resnet18,...] [--rounds 5] [--runs 10]

Ratio = torch-mlir route's time / bridge's: > 1 means the bridge's own
lowering is faster."""

import argparse
import statistics
import time
import warnings

import torch

import pbc


def build(name):
    import torchvision
    m = getattr(torchvision.models, name)()
    for mod in m.modules():
        if isinstance(mod, torch.nn.Linear) and not mod.weight.abs().max():
            torch.nn.init.normal_(mod.weight, std=0.05)
    return m.eval(), torch.randn(1, 3, 224, 224)


def main():
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet18,resnet50,mobilenet_v2,vit_b_16")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=10)
    a = ap.parse_args()
    print("%-14s %12s %12s %12s %8s %8s" % ("model", "bridge ms", "torch-mlir ms", "ratio",
                                           "compile b", "compile t"))
    for name in a.models.split(","):
        m, x = build(name)
        with torch.no_grad():
            want = m(x)
            routes, compile_s = {}, {}
            for lowering in ("bridge", "torch-mlir"):
                t = time.time()
                f = pbc.jit(m, lowering=lowering)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    got = f(x)
                compile_s[lowering] = time.time() - t
                err = (got - want).abs().max().item() / want.abs().max().item()
                assert err < 1e-3, "%s via %s: relative error %.2g" % (name, lowering, err)
                routes[lowering] = f
            times = {k: [] for k in routes}
            for _ in range(a.rounds):
                for k, f in routes.items():
                    f(x)
                    ts = []
                    for _ in range(a.runs):
                        t = time.perf_counter()
                        f(x)
                        ts.append(time.perf_counter() - t)
                    times[k].append(statistics.median(ts) * 1e3)
        b, t = statistics.median(times["bridge"]), statistics.median(times["torch-mlir"])
        print("%-14s %12.2f %12.2f %11.2fx %7.1fs %7.1fs" % (
            name, b, t, t / b, compile_s["bridge"], compile_s["torch-mlir"]), flush=True)


if __name__ == "__main__":
    main()
