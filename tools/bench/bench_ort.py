#!/usr/bin/python3
"""Whole models: pbc (through the bridge) against onnxruntime, the fastest
CPU peer (issue 46), batch 1, fp32, 2 threads, each side in a process of its
own, rounds interleaved, medians; outputs compared before the table.

usage: /usr/bin/python3 tools/bench/bench_ort.py [--models a,b,...]
           [--runs N] [--rounds N] [--work DIR]
models (default: resnet18,resnet50,mobilenet_v2,efficientnet_b0,vit_b_16,
encoder12): any torchvision classifier by name (ViT heads re-initialised:
torchvision's are zeros), or encoder12, twelve nn.TransformerEncoderLayers
of BERT-base's shapes (768 wide, 12 heads, 3072 hidden, GELU) on a
sequence of 128: BERT-base's encoder without its embeddings (Debian's
PyTorch 1.13 has no `transformers`).

Each model is exported once from PyTorch 1.13 (torch.onnx.export, opset 17)
into --work (default: a temporary folder). onnxruntime 1.32.0 runs from a
virtual environment this script creates once (pip, from PyPI) under
$PBC_BENCH_VENV (default ~/.cache/pbc/bench-venv-ort-1.32.0), with the
default CPU execution provider, ORT_ENABLE_ALL graph optimizations,
intra_op_num_threads=2, inter_op_num_threads=1. pbc runs through pbc.jit on
2 OpenMP threads (OMP_NUM_THREADS=2), libomp preloaded as in bench_torch.py.
A round starts one worker per side (in turn: pbc, then onnxruntime); each
worker loads its model (pbc's compile comes from the bridge's cache after
the first round), warms up for --runs calls, then times --runs calls; the
round's figure is their median, the table's the median over rounds.
Ratio = onnxruntime's time / pbc's: > 1 means pbc is faster.
"""

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
ORT_VERSION = "1.32.0"
DEFAULT_MODELS = "resnet18,resnet50,mobilenet_v2,efficientnet_b0,vit_b_16,encoder12"


def venv_python():
    """The virtual environment with onnxruntime, created once."""
    venv = os.environ.get("PBC_BENCH_VENV") or os.path.expanduser(
        "~/.cache/pbc/bench-venv-ort-" + ORT_VERSION)
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(os.path.join(venv, ".complete")):
        # PyPI's interpreter (pyenv), not Debian's: its pip installs from PyPI
        dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep)
                if d not in ("/usr/bin", "/bin")]
        base = shutil.which("python3", path=os.pathsep.join(dirs)) or "python3"
        subprocess.run([base, "-m", "venv", venv], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "onnxruntime==" + ORT_VERSION,
                        "numpy"], check=True)
        open(os.path.join(venv, ".complete"), "w").close()
    return py


def build_model(name):
    import torch
    sys.path.insert(0, os.path.join(ROOT, "tests", "torch"))
    from common import randomize_norms
    torch.manual_seed(0)
    if name == "encoder12":
        layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0,
                                                 activation="gelu", batch_first=True)
        model = torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
        x = torch.randn(1, 128, 768)
    else:
        import torchvision
        model = getattr(torchvision.models, name)()
        if name.startswith("vit"):  # torchvision initialises the head to zeros
            torch.nn.init.normal_(model.heads.head.weight, std=0.02)
        x = torch.randn(1, 3, 224, 224)
    return randomize_norms(model).eval(), x


def export(name, work):
    """The model to work/name.pt and name.onnx, its input and eager output."""
    import numpy as np
    import torch
    model, x = build_model(name)
    with torch.no_grad():
        want = model(x)
    # PyTorch 1.13 exports its attention fast path (an op ONNX lacks) in
    # eval mode; in training mode, with every dropout 0, the ops are the same
    attention = [m for m in model.modules()
                 if isinstance(m, (torch.nn.MultiheadAttention, torch.nn.TransformerEncoderLayer))]
    for m in attention:
        m.train()
    with torch.no_grad():
        torch.onnx.export(model, (x,), os.path.join(work, name + ".onnx"), opset_version=17,
                          training=torch.onnx.TrainingMode.PRESERVE,
                          input_names=["x"], output_names=["y"])
    for m in attention:
        m.eval()
    torch.save(model, os.path.join(work, name + ".pt"))
    np.save(os.path.join(work, name + ".x.npy"), x.numpy())
    np.save(os.path.join(work, name + ".eager.npy"), want.numpy())


def timed(fn, runs):
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def worker_pbc(name, work, runs):
    sys.path.insert(0, os.path.join(HERE, "..", "torch"))
    import numpy as np
    import torch
    import pbc
    torch.set_num_threads(2)
    model = torch.load(os.path.join(work, name + ".pt"))
    x = torch.from_numpy(np.load(os.path.join(work, name + ".x.npy")))
    fast = pbc.jit(model)
    with torch.no_grad():
        out = fast(x)
        np.save(os.path.join(work, name + ".pbc.npy"), out.numpy())
        timed(lambda: fast(x), runs)
        ms = timed(lambda: fast(x), runs)
    fallbacks = list(fast.plan(x).fallbacks)
    print(json.dumps({"ms": ms, "fallbacks": [str(f) for f in fallbacks]}))


def worker_ort(name, work, runs):
    import numpy as np
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(os.path.join(work, name + ".onnx"), so,
                                providers=["CPUExecutionProvider"])
    x = np.load(os.path.join(work, name + ".x.npy"))
    out = sess.run(None, {"x": x})[0]
    np.save(os.path.join(work, name + ".ort.npy"), out)
    timed(lambda: sess.run(None, {"x": x}), runs)
    print(json.dumps({"ms": timed(lambda: sess.run(None, {"x": x}), runs)}))


def run_worker(python, side, name, work, runs, env=None):
    r = subprocess.run([python, os.path.abspath(__file__), "--worker", side, name, work,
                        str(runs)], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError("%s worker on %s failed:\n%s" % (side, name, r.stderr[-3000:]))
    return json.loads(r.stdout.strip().splitlines()[-1])


def rel_err(got, want):
    import numpy as np
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


def main():
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default=None, help="folder for exported models (kept)")
    ap.add_argument("--worker", nargs=4, metavar=("SIDE", "MODEL", "WORK", "RUNS"),
                    help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        side, name, work, runs = a.worker
        (worker_pbc if side == "pbc" else worker_ort)(name, work, int(runs))
        return
    import numpy as np
    ort_py = venv_python()
    work = a.work or tempfile.mkdtemp(prefix="pbc-bench-ort-")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS="2", OPENBLAS_NUM_THREADS="1",
               OPENBLAS_CORETYPE="SkylakeX",
               LD_PRELOAD="/usr/lib/llvm-22/lib/libomp.so.5",
               PBC_CACHE_DIR=os.environ.get("PBC_CACHE_DIR", os.path.join(work, "cache")))
    print("onnxruntime %s (%s); pbc via %s" % (ORT_VERSION, ort_py,
          os.environ.get("PBC_LIBPBC", "the bridge's default libpbc")), flush=True)
    rows = []
    for name in a.models.split(","):
        if not os.path.exists(os.path.join(work, name + ".onnx")):
            export(name, work)
        times = {"pbc": [], "ort": []}
        fallbacks = []
        for _ in range(a.rounds):
            p = run_worker(sys.executable, "pbc", name, work, a.runs, env)
            fallbacks = p["fallbacks"]
            times["pbc"].append(p["ms"])
            times["ort"].append(run_worker(ort_py, "ort", name, work, a.runs)["ms"])
        load = lambda s: np.load(os.path.join(work, "%s.%s.npy" % (name, s)))
        eager = load("eager")
        pbc_ms, ort_ms = statistics.median(times["pbc"]), statistics.median(times["ort"])
        rows.append((name, ort_ms, pbc_ms, ort_ms / pbc_ms, rel_err(load("pbc"), eager),
                     rel_err(load("ort"), eager), len(fallbacks)))
        print("  %s: onnxruntime %.2f ms, pbc %.2f ms %s" % (
            name, ort_ms, pbc_ms, ("(eager fallbacks: %s)" % fallbacks) if fallbacks else ""),
            flush=True)
    print("\n| model (batch 1) | onnxruntime ms | pbc ms | ratio | pbc rel. err | "
          "onnxruntime rel. err | ops left eager |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %.2f | %.2f | %.2fx | %.1e | %.1e | %d |" % r)
    geo = math.exp(sum(math.log(r[3]) for r in rows) / len(rows))
    print("\ngeomean ratio %.2fx (> 1: pbc faster; medians of %d rounds x %d runs; "
          "errors: max abs difference / max abs of eager PyTorch 1.13's output)"
          % (geo, a.rounds, a.runs))


if __name__ == "__main__":
    main()
