#!/usr/bin/python3
"""Models with a dynamic batch or sequence (issue 68): one pbc.onnx model
kept with its symbolic dimension, called at several sizes, against a static
compile of the same model at each size (its dimension fixed before import:
shapes=), in one run; fp32, 2 threads.

usage: tools/bench/bench_dynamic.py [--models a,b] [--runs N] [--rounds N]
           [--work DIR]
Any python may start it: it runs itself in the frontends' environment
(tools/python-env.sh).

models (default resnet50,mobilenet_v2,bert):
  resnet50, mobilenet_v2  torchvision, random weights (batch-norm statistics
                          randomized), batch symbolic; sizes 1, 7, 16
  bert                    HF transformers' BertModel from its default
                          config, random weights, sequence symbolic (batch
                          1, random token ids); sizes 128, 197, 512
Each model is exported by torch.onnx.export (TorchScript exporter, opset
17) with the dimension symbolic; both sides read that one file.

The dynamic model is compiled once for every size: with the batch loop
where pbc separates it over its batch (the CNNs: pbc/batch_loop.h), else
with symbolic sizes (BERT's sequence: pbc/symbolic_sizes.h); "compile s"
is that one compile, "compiles" 1. A model neither route takes is
compiled once per distinct input shape when first called with it ("first
call" is then that compile and the first run; libpbc caches the library, the driver the kernels, both cold at
the start of the run in a fresh cache folder). The static side compiles
each size on its own (its compile time in the table; its kernels in a
cache folder of their own, so as cold). Times: the median of --runs calls, the median over --rounds
rounds, the sides interleaved per round. Ratio = dynamic / static (1.00:
as fast). Every output is checked against eager PyTorch at its size.
"""

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from bench_models import frontends_python  # noqa: E402
from timing import median_ms  # noqa: E402

SIZES = {"resnet50": (1, 7, 16), "mobilenet_v2": (1, 7, 16), "bert": (128, 197, 512)}


def build(name):
    """(model, example input, the input's symbolic axis)."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, "tests", "torch"))
    from common import randomize_norms
    torch.manual_seed(0)
    if name == "bert":
        import transformers
        cfg = transformers.BertConfig()

        class LastHiddenState(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.bert = transformers.BertModel(cfg)

            def forward(self, ids):
                return self.bert(ids).last_hidden_state
        return LastHiddenState().eval(), torch.randint(0, cfg.vocab_size, (1, 128)), 1
    import torchvision
    return randomize_norms(getattr(torchvision.models, name)()).eval(), \
        torch.randn(1, 3, 224, 224), 0


def example(name, size):
    import torch
    g = torch.Generator().manual_seed(size)
    if name == "bert":
        return torch.randint(0, 30522, (1, size), generator=g)
    return torch.randn(size, 3, 224, 224, generator=g)


def export(name, work):
    import torch
    path = os.path.join(work, "%s.dynamic.onnx" % name)
    if not os.path.exists(path):
        model, x, axis = build(name)
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (x,), path + ".tmp", opset_version=17, dynamo=False,
                              input_names=["x"], output_names=["y"],
                              dynamic_axes={"x": {axis: "n"}, "y": {axis: "n"}})
        os.replace(path + ".tmp", path)
    return path


def rel_err(got, want):
    import numpy as np
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


def run(args):
    import numpy as np
    import torch
    import pbc.onnx
    torch.set_num_threads(2)
    rows = []
    for name in args.models.split(","):
        path = export(name, args.work)
        model, _, _ = build(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            dynamic = pbc.onnx.compile(path)
            dyn_compile = time.perf_counter() - t
        once = not dynamic.dynamic  # one compile for every size
        symbolic = once and any(d < -1 for _, shape in dynamic.entry.args for d in shape)
        print("%s: %s (%.1f s)" % (
            name, ("one compile for every size (%s)" % ("symbolic sizes" if symbolic
                                                         else "the batch loop")) if once else
            "compiled per size: %s" % dynamic.refused, dyn_compile), flush=True)
        if once and name == "bert":
            # One compile serves every sequence: a spread of 1..512 against eager.
            worst = 0.0
            for n in (1, 2, 3, 7, 16, 33, 64, 100, 255, 384, 511):
                x = example(name, n)
                with torch.no_grad():
                    worst = max(worst, rel_err(dynamic(x.numpy())[0], model(x).numpy()))
            print("%s: sequences 1..511 through the one compile, max rel err vs eager %.1e"
                  % (name, worst), flush=True)
            assert worst <= 1e-4, "an output differs from eager"
        if once and name != "bert":
            # One compile serves every batch: each of 1..16 against eager.
            worst = 0.0
            for b in range(1, 17):
                x = torch.randn(b, 3, 224, 224, generator=torch.Generator().manual_seed(100 + b))
                with torch.no_grad():
                    worst = max(worst, rel_err(dynamic(x.numpy())[0], model(x).numpy()))
            print("%s: batches 1..16 through the one compile, max rel err vs eager %.1e"
                  % (name, worst), flush=True)
            assert worst <= 1e-4, "an output differs from eager"
        for size in SIZES[name]:
            x = example(name, size)
            with torch.no_grad():
                want = model(x).numpy()
            xn = x.numpy()
            t = time.perf_counter()
            got_d = dynamic(xn)[0]
            first = time.perf_counter() - t
            # The static side's kernels in a folder of their own: its compile
            # is as cold as the dynamic side's first call.
            os.environ["PBC_KERNEL_CACHE_DIR"] = os.path.join(os.environ["PBC_CACHE_DIR"],
                                                              "static-kernels")
            t = time.perf_counter()
            static = pbc.onnx.compile(path, shapes={"x": tuple(xn.shape)})
            compile_s = time.perf_counter() - t
            del os.environ["PBC_KERNEL_CACHE_DIR"]
            got_s = static(xn)[0]
            dyn_ms, st_ms = [], []
            for _ in range(args.rounds):
                dyn_ms.append(median_ms(lambda: dynamic(xn), args.runs))
                st_ms.append(median_ms(lambda: static(xn), args.runs))
            row = (name, size, statistics.median(dyn_ms), statistics.median(st_ms),
                   dyn_compile if once else first, compile_s, rel_err(got_d, want),
                   rel_err(got_s, want), bool(np.array_equal(got_d, got_s)),
                   1 if once else len(dynamic.sized))
            rows.append(row)
            print("%-13s %5d  dynamic %9.2f ms  static %9.2f ms  ratio %.3f  compile %.1f s  "
                  "static compile %.1f s  rel err %.1e / %.1e%s" % (
                      row[0], row[1], row[2], row[3], row[2] / row[3], row[4], row[5], row[6],
                      row[7], "  (bit-identical)" if row[8] else ""), flush=True)
            assert row[6] <= 1e-4 and row[7] <= 1e-4, "an output differs from eager"
            del static
    ratios = [r[2] / r[3] for r in rows]
    print("\n| model | size | dynamic ms | static ms | ratio | dynamic compiles | compile (or first"
          " call) s | static compile s | rel err vs eager |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print("| %s | %d | %.2f | %.2f | %.3f | %d | %.1f | %.1f | %.1e |" % (
            r[0], r[1], r[2], r[3], r[2] / r[3], r[9], r[4], r[5], r[6]))
    print("geomean ratio (dynamic / static) %.3f over %d sizes" % (
        math.exp(sum(map(math.log, ratios)) / len(ratios)), len(ratios)))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet50,mobilenet_v2,bert")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default=os.path.expanduser("~/.cache/pbc/bench-dynamic"))
    ap.add_argument("--in-env", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not args.in_env:
        env = dict(os.environ, OMP_NUM_THREADS="2", LD_PRELOAD="/usr/lib/llvm-22/lib/libomp.so.5",
                   PYTHONPATH=os.path.join(ROOT, "tools", "torch"),
                   PBC_CACHE_DIR=tempfile.mkdtemp(prefix="pbc-bench-dynamic-"))
        env.setdefault("PBC_LIBPBC", os.path.join(ROOT, "build", "bin", "libpbc.so"))
        return subprocess.call([frontends_python(), os.path.abspath(__file__), "--in-env"] +
                               sys.argv[1:], env=env)
    os.makedirs(args.work, exist_ok=True)
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
