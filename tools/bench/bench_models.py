#!/usr/bin/python3
"""Whole models on CPU (issue 46): pbc against onnxruntime, Inductor, IREE
and eager PyTorch in one run; batch 1, fp32, 2 threads; each side in a
process of its own per round, rounds interleaved, medians; every side's
output checked against eager PyTorch before the table.

usage: tools/bench/bench_models.py [--models a,b,...] [--sides a,b,...]
           [--runs N] [--rounds N] [--threads N] [--work DIR]
Any python may start it: it runs itself in the frontends' environment
(tools/python-env.sh: torch 2.15, onnxruntime 1.32, IREE 3.13, transformers;
created once, cached).

models (default resnet18,resnet50,mobilenet_v2,efficientnet_b0,vit_b_16,bert):
  a torchvision classifier by name (batch-norm statistics randomized, ViT's
  zero-initialized head re-initialized), bert (HF transformers' BertModel
  from its default config, random weights, 128 random token ids; the output
  is last_hidden_state), encoder12 (twelve nn.TransformerEncoderLayers of
  BERT-base's shapes on a 1x128x768 input). Weights come from
  torch.manual_seed(0) in every process, so each side runs the same model.
sides (default pbc,ort,inductor,iree,eager):
  pbc       pbc.jit(model) (the bridge; its default lowering), OMP_NUM_THREADS=2,
            LLVM's libomp preloaded (pbc's code and PyTorch share it)
  ort       onnxruntime, CPU execution provider, ORT_ENABLE_ALL,
            intra_op_num_threads=2, inter_op_num_threads=1, on the model
            exported by torch.onnx.export (TorchScript exporter, opset 17)
  inductor  torch.compile(model) (Inductor, default mode), torch.set_num_threads(2)
  inductor-max  torch.compile(model, mode="max-autotune") (slow to compile)
  iree      the same ONNX file through iree-import-onnx and iree-compile
            (llvm-cpu, --iree-llvmcpu-target-cpu=host), run by IREE's
            local-task driver on 2 workers
  eager     the model in PyTorch, torch.set_num_threads(2)
Exports and IREE modules are kept in --work (default
~/.cache/pbc/bench-models) and reused. A round starts one worker per side in
turn; a worker builds its side's callable (pbc's and Inductor's compiles
come from their caches after the first round), warms up for --runs calls,
then times --runs calls: the round's figure is their median, the table's
the median over rounds. Ratio = the peer's time / pbc's (> 1: pbc faster).
--threads N (default 2) gives every side N threads instead (the issue's bar
is at 2; 1 separates the kernels' speed from the sides' scaling).
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from timing import median_ms  # noqa: E402
LIBOMP = "/usr/lib/llvm-22/lib/libomp.so.5"
DEFAULT_MODELS = "resnet18,resnet50,mobilenet_v2,efficientnet_b0,vit_b_16,bert"
DEFAULT_SIDES = "pbc,ort,inductor,iree,eager"
SIDES = ("pbc", "ort", "inductor", "inductor-max", "iree", "eager")


def frontends_python():
    out = subprocess.run([os.path.join(ROOT, "tools", "python-env.sh")], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return out.strip().splitlines()[-1]


def build_model(name):
    """(model in eval mode, input tensor), the same in every process."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, "tests", "torch"))
    from common import randomize_norms
    torch.manual_seed(0)
    if name == "bert":
        import transformers
        cfg = transformers.BertConfig()

        class LastHiddenState(torch.nn.Module):  # one tensor out, for every side
            def __init__(self):
                super().__init__()
                self.bert = transformers.BertModel(cfg)

            def forward(self, ids):
                return self.bert(ids).last_hidden_state
        model = LastHiddenState()
        x = torch.randint(0, cfg.vocab_size, (1, 128))
    elif name == "encoder12":
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


def path(work, name, what):
    return os.path.join(work, "%s.%s" % (name, what))


def prepare(name, work, sides):
    """Eager output, the ONNX export and IREE's module, each made once; the
    sides that can run the model."""
    import numpy as np
    import torch
    if not os.path.exists(path(work, name, "eager.npy")):
        model, x = build_model(name)
        with torch.no_grad():
            want = model(x)
        np.save(path(work, name, "x.npy"), x.numpy())
        np.save(path(work, name, "eager.npy"), want.numpy())
    if ({"ort", "iree"} & set(sides)) and not os.path.exists(path(work, name, "onnx")):
        model, x = build_model(name)
        tmp = path(work, name, "tmp.onnx")
        # In eval mode PyTorch's attention modules take a fused fast path
        # (an op ONNX lacks); in training mode, with dropout 0, the ops are
        # the same as eval's (the table's errors would show a dropout)
        for m in model.modules():
            if isinstance(m, (torch.nn.MultiheadAttention, torch.nn.TransformerEncoderLayer)):
                m.train()
        with torch.no_grad():
            torch.onnx.export(model, (x,), tmp, opset_version=17, dynamo=False,
                              input_names=["x"], output_names=["y"],
                              training=torch.onnx.TrainingMode.PRESERVE)
        os.replace(tmp, path(work, name, "onnx"))
    failed = path(work, name, "iree-failed")
    if "iree" in sides and not os.path.exists(path(work, name, "vmfb")) \
            and not os.path.exists(failed):
        bindir = os.path.dirname(sys.executable)
        mlir = path(work, name, "iree.mlir")
        t = time.time()
        r = subprocess.run([os.path.join(bindir, "iree-import-onnx"), path(work, name, "onnx"),
                            "-o", mlir], capture_output=True, text=True)
        if r.returncode == 0:
            r = subprocess.run([os.path.join(bindir, "iree-compile"), mlir,
                                "--iree-hal-target-backends=llvm-cpu",
                                "--iree-llvmcpu-target-cpu=host",
                                "-o", path(work, name, "tmp.vmfb")], capture_output=True, text=True)
        if r.returncode != 0:  # a peer that cannot compile a model gets no column
            with open(failed, "w") as f:
                f.write(r.stderr)
        else:
            os.replace(path(work, name, "tmp.vmfb"), path(work, name, "vmfb"))
            print("  %s: iree-compile took %.0f s" % (name, time.time() - t), flush=True)
    if "iree" in sides and os.path.exists(failed):
        print("  %s: IREE could not compile it (%s): %s" % (
            name, failed, open(failed).read().strip().splitlines()[0][:300]), flush=True)
        return [s for s in sides if s != "iree"]
    return sides


def side_callable(side, name, work):
    """(a function of no arguments returning the output as numpy, notes)."""
    import numpy as np
    x = np.load(path(work, name, "x.npy"))
    notes = {}
    threads = int(os.environ["PBC_BENCH_THREADS"])
    if side == "ort":
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(path(work, name, "onnx"), so,
                                    providers=["CPUExecutionProvider"])
        return (lambda: sess.run(None, {"x": x})[0]), notes
    if side == "iree":
        import iree.runtime as ireert
        ireert.flags.parse_flags("--task_topology_max_group_count=%d" % threads)  # before the device
        with open(path(work, name, "vmfb"), "rb") as f:
            module = ireert.load_vm_flatbuffer(f.read(), driver="local-task")
        fn = module.main_graph if hasattr(module, "main_graph") else module[
            next(iter(module.vm_module.function_names))]
        return (lambda: np.asarray(fn(x).to_host())), notes
    import torch
    torch.set_num_threads(threads)
    torch.set_grad_enabled(False)
    model, _ = build_model(name)
    xt = torch.from_numpy(x)
    if side == "pbc":
        sys.path.insert(0, os.path.join(ROOT, "tools", "torch"))
        import pbc
        fast = pbc.jit(model)
        t = time.time()
        fast(xt)
        notes["first_call_s"] = time.time() - t
        plan = fast.plan(xt)
        notes["eager_ops"] = [str(f) for f in getattr(plan, "fallbacks", ["(whole graph)"])]
        return (lambda: fast(xt).numpy()), notes
    if side.startswith("inductor"):
        fast = torch.compile(model, mode="max-autotune" if side == "inductor-max" else None)
        t = time.time()
        fast(xt)
        notes["first_call_s"] = time.time() - t
        return (lambda: fast(xt).numpy()), notes
    return (lambda: model(xt).numpy()), notes


def worker(side, name, work, runs):
    import numpy as np
    fn, notes = side_callable(side, name, work)
    np.save(path(work, name, side + ".npy"), fn())
    median_ms(fn, runs)  # warm-up
    notes["ms"] = median_ms(fn, runs)
    print(json.dumps(notes))


def worker_env(side, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), PBC_BENCH_THREADS=str(threads),
               PBC_LIBPBC=os.environ.get(
        "PBC_LIBPBC", os.path.join(ROOT, "build", "bin")))
    if side == "pbc":
        env["LD_PRELOAD"] = LIBOMP
    else:
        env.pop("LD_PRELOAD", None)
    return env


def run_worker(side, name, work, runs, threads):
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", side, name,
                        work, str(runs)], capture_output=True, text=True, env=worker_env(side, threads))
    if r.returncode != 0:
        raise RuntimeError("%s worker on %s failed:\n%s" % (side, name, r.stderr[-3000:]))
    return json.loads(r.stdout.strip().splitlines()[-1])


def rel_err(got, want):
    import numpy as np
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


def geomean(xs):
    xs = [x for x in xs if x == x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--sides", default=DEFAULT_SIDES)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default=os.path.expanduser("~/.cache/pbc/bench-models"))
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        side, name, work, runs = a.worker
        worker(side, name, work, int(runs))
        return
    py = frontends_python()
    if os.path.realpath(sys.prefix) != os.path.realpath(os.path.dirname(os.path.dirname(py))):
        os.execv(py, [py, os.path.abspath(__file__)] + sys.argv[1:])
    sides = a.sides.split(",")
    bad = [s for s in sides if s not in SIDES]
    if bad or "pbc" not in sides:
        ap.error("sides must include pbc and be among %s" % ", ".join(SIDES))
    import numpy as np
    import torch
    os.makedirs(a.work, exist_ok=True)
    load = os.popen("cat /proc/loadavg").read().split()[0]
    cpu = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")]
    print("%s, %d cpus, load %s; torch %s; pbc via %s; %d threads; medians of %d rounds x %d calls"
          % (cpu[0] if cpu else "?", os.cpu_count(), load, torch.__version__,
             worker_env("pbc", a.threads)["PBC_LIBPBC"], a.threads, a.rounds, a.runs), flush=True)
    peers = [s for s in sides if s != "pbc"]
    rows = []
    for name in a.models.split(","):
        present = prepare(name, a.work, sides)
        times = {s: [] for s in sides}
        notes = {}
        for _ in range(a.rounds):
            for s in present:
                try:
                    r = run_worker(s, name, a.work, a.runs, a.threads)
                except RuntimeError as e:
                    print("  %s" % e, flush=True)
                    continue
                times[s].append(r["ms"])
                notes.setdefault(s, r)
        want = np.load(path(a.work, name, "eager.npy"))
        ms = {s: statistics.median(t) if t else float("nan") for s, t in times.items()}
        errs = {s: rel_err(np.load(path(a.work, name, s + ".npy")), want)
                for s in sides if times[s]}
        rows.append((name, ms, errs, notes.get("pbc", {})))
        print("  %s: %s; rel. err. %s; pbc first call %.1f s%s" % (
            name, ", ".join("%s %.2f ms" % kv for kv in ms.items()),
            ", ".join("%s %.1e" % kv for kv in errs.items()),
            notes.get("pbc", {}).get("first_call_s", float("nan")),
            ("; eager in pbc: %s" % notes["pbc"]["eager_ops"])
            if notes.get("pbc", {}).get("eager_ops") else ""), flush=True)
    fmt = lambda ms, p: "%.2f | %.2fx" % (ms[p], ms[p] / ms["pbc"]) if ms[p] == ms[p] else "– | –"
    print("\n| model | pbc ms | " + " | ".join("%s ms | %s / pbc" % (p, p) for p in peers) + " |")
    print("|---|---|" + "---|---|" * len(peers))
    for name, ms, errs, _ in rows:
        print("| %s | %.2f | " % (name, ms["pbc"]) + " | ".join(fmt(ms, p) for p in peers) + " |")
    print("| geomean | | " + " | ".join(
        "| %.2fx" % geomean([ms[p] / ms["pbc"] for _, ms, _, _ in rows]) for p in peers) + " |")
    worst = max(max(e.values()) for _, _, e, _ in rows)
    print("\nratio: the peer's time / pbc's (> 1: pbc faster). Largest error of any side "
          "against eager PyTorch (max abs difference / max abs output): %.1e" % worst)


if __name__ == "__main__":
    main()
