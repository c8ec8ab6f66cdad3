#!/usr/bin/python3
"""Compile time: torchvision models and large synthetic programs through pbc,
per stage, with the scaling exponent of time against op count.

usage: /usr/bin/python3 tools/bench/compile_time.py [--models a,b,...|none]
           [--sizes 500,1000,2000,5000|none] [--runs N] [--pbc PATH]
           [--inductor-python PY]

Models (default: resnet18, resnet50, mobilenet_v2, efficientnet_b0,
densenet121, inception_v3, vit_b_16, swin_t, maxvit_t): each is traced
through the bridge (`pbc.jit`, batch 1) in a child process with an empty
cache; the columns are
  cold   compile + first call through the bridge, cold cache (what a user
         waits for the first time),
  warm   the same in a new process with the cache the cold run left, and
         (pbc) the part of it spent in pbc (libpbc's compile calls, which
         hit the cache; the rest is the bridge tracing the model),
  S1..S5, llvm   `pbc --timing --emit=lib` on the MLIR the bridge produced
         (all segments summed; llvm = translation, -O3 and emission) with
         an empty kernel cache; pbc s its wall time,
  kern s  the same compile again with the kernels it cached: what a model
         recompiled after a change that keeps its kernels costs,
  nests  top-level loop nests after S3 / distinct functions after
         pbc-outline-nests' sharing.
Synthetic programs: a chain of n linalg ops on 16x64 tensors (matmul, bias +
relu, row reduction and centring, tanh), as canonicalize leaves them (one
shared tensor.empty per shape); `pbc --emit=lib` wall time, median of
--runs, and the exponent k of t ~ n^k between the smallest and largest n.

Peer: torch.compile (Inductor) cold compile of the same model (first call,
Inductor's cache in a fresh folder), in `--inductor-python PY` (a Python
with torch >= 2.0 and torchvision, e.g. a venv from PyPI), else in this
Python where its torch has torch.compile (Debian's 1.13 does not: the
column then says n/a). Needs build/bin/pbc and libpbc.so (tools/build.sh).
"""

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BIN = os.path.join(ROOT, "build", "bin")
LIBOMP = "/usr/lib/llvm-22/lib/libomp.so.5"
MODELS = ("resnet18,resnet50,mobilenet_v2,efficientnet_b0,densenet121,inception_v3,"
          "vit_b_16,swin_t,maxvit_t")

# Both children build model `name` (argv[1]) and its input x the same way.
MODEL = r"""kw = {"aux_logits": False, "init_weights": True} if name == "inception_v3" else {}
m = getattr(torchvision.models, name)(**kw).eval()
side = 299 if name == "inception_v3" else 224
x = torch.randn(1, 3, side, side)
"""

# The child: traces one model through the bridge, records the MLIR of each
# segment, prints the timings as JSON on its last line.
CHILD = r"""
import json, os, sys, time
sys.path.insert(0, os.path.join(%(root)r, "tools", "torch"))
import torch, torchvision
import pbc, pbc.runtime as rt
torch.manual_seed(0)
torch.set_num_threads(2)
name, dump = sys.argv[1], sys.argv[2]
texts, in_pbc = [], [0.0]
class Recording(rt.Program):
    def __init__(self, text, *a, **k):
        texts.append(text)
        t = time.perf_counter()
        super().__init__(text, *a, **k)
        in_pbc[0] += time.perf_counter() - t
rt.Program = Recording
%(model)sout = {}
with torch.no_grad():
    t = time.perf_counter()
    f = pbc.jit(m)
    f(x)
    out["first"] = time.perf_counter() - t
    if dump:
        for i, s in enumerate(texts):
            with open(os.path.join(dump, "seg%%d.mlir" %% i), "w") as fh:
                fh.write(s)
    out["segments"] = len(texts)
    out["pbc"] = in_pbc[0]
    if hasattr(torch, "compile") and dump:
        try:
            t = time.perf_counter()
            torch.compile(m)(x)
            out["inductor"] = time.perf_counter() - t
        except Exception as e:
            out["inductor_error"] = str(e).splitlines()[0][:80]
print(json.dumps(out))
"""


INDUCTOR_CHILD = r"""
import json, os, sys, time, torch, torchvision
torch.manual_seed(0)
torch.set_num_threads(2)
name = sys.argv[1]
""" + MODEL + r"""with torch.no_grad():
    t = time.perf_counter()
    torch.compile(m)(x)
    print(json.dumps({"inductor": time.perf_counter() - t}))
"""


def inductor_cold(name, python):
    """Seconds of torch.compile's first call on the model in `python`, with
    an empty Inductor cache; None if it failed."""
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=d, OMP_NUM_THREADS="2",
                   TRITON_CACHE_DIR=os.path.join(d, "triton"))
        r = subprocess.run([python, "-c", INDUCTOR_CHILD, name], capture_output=True, text=True,
                           env=env)
    last = r.stdout.strip().splitlines()[-1:] if r.stdout.strip() else []
    return json.loads(last[0])["inductor"] if r.returncode == 0 and last else None


def run_child(name, cache, dump):
    env = dict(os.environ, PBC_CACHE_DIR=cache, PBC_LIBPBC=os.path.join(BIN, "libpbc.so"),
               OMP_NUM_THREADS="2", OPENBLAS_NUM_THREADS="1")
    if os.path.exists(LIBOMP):  # one OpenMP runtime for torch and pbc
        env["LD_PRELOAD"] = LIBOMP
    r = subprocess.run(["/usr/bin/python3", "-c", CHILD % {"root": ROOT, "model": MODEL}, name, dump],
                       capture_output=True, text=True, env=env)
    last = r.stdout.strip().splitlines()[-1:] if r.stdout.strip() else []
    if r.returncode != 0 or not last:
        raise RuntimeError("%s: bridge run failed:\n%s" % (name, r.stderr[-2000:]))
    return json.loads(last[0])


STAGE_RE = re.compile(r"^\s*([0-9.]+)\s+(s[1-5]|codegen)\s+\((?:stage total|"
                      r"translation, LLVM -O3, emission)\)", re.M)


def stage_times(pbc, src, d, kernels):
    """Seconds per stage of `pbc --timing --emit=lib` on src with the kernel
    cache `kernels`, and its wall time as "wall"."""
    env = dict(os.environ, PBC_KERNEL_CACHE_DIR=kernels)
    t = time.perf_counter()
    r = subprocess.run([pbc, "--timing", "--emit=lib", "-o", os.path.join(d, "x.so"), src],
                       capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError("pbc failed on %s:\n%s" % (src, r.stderr[-2000:]))
    out = {m.group(2): float(m.group(1)) / 1e3 for m in STAGE_RE.finditer(r.stderr)}
    out["wall"] = wall
    return out


def nest_counts(pbc, src):
    """(top-level nests after S3, distinct outlined functions after S4)."""
    r = subprocess.run([pbc, "--emit=s4", src], capture_output=True, text=True)
    if r.returncode != 0:
        return (0, 0)
    calls = len(re.findall(r"call @\S+_nest\d+\(", r.stdout))
    funcs = len(re.findall(r"func\.func private @\S+_nest\d+\(", r.stdout))
    return (calls, funcs)


def model_row(name, pbc, inductor_python=None):
    with tempfile.TemporaryDirectory() as d:
        cache, dump = os.path.join(d, "cache"), os.path.join(d, "mlir")
        os.mkdir(cache)
        os.mkdir(dump)
        cold = run_child(name, cache, dump)
        warm = run_child(name, cache, "")
        stages, calls, funcs, kernels_warm = {}, 0, 0, 0.0
        kernels = os.path.join(d, "kernels")  # empty: every kernel compiled
        for seg in sorted(os.listdir(dump)):
            for k, v in stage_times(pbc, os.path.join(dump, seg), d, kernels).items():
                stages[k] = stages.get(k, 0.0) + v
            # Again: the model recompiled after a change that keeps its kernels.
            kernels_warm += stage_times(pbc, os.path.join(dump, seg), d, kernels)["wall"]
            c, f = nest_counts(pbc, os.path.join(dump, seg))
            calls, funcs = calls + c, funcs + f
    return {"model": name, "cold": cold["first"], "warm": warm["first"], "warm_pbc": warm["pbc"],
            "segments": cold["segments"], "stages": stages, "nests": (calls, funcs),
            "pbc_wall": stages["wall"], "kernels_warm": kernels_warm,
            "inductor": inductor_cold(name, inductor_python) if inductor_python
            else cold.get("inductor")}


def chain(n):
    """A chain of about n linalg ops on 16x64 f32 tensors sharing one
    tensor.empty per shape."""
    t, r = "tensor<16x64xf32>", "tensor<16xf32>"
    idm, row, col = ("affine_map<(i, j) -> (i, j)>", "affine_map<(i, j) -> (i)>",
                     "affine_map<(i, j) -> (j)>")
    par = 'iterator_types = ["parallel", "parallel"]'
    L = ["func.func @chain(%%x: %s, %%w: tensor<64x64xf32>, %%b: tensor<64xf32>) -> %s {" % (t, t),
         "  %zero = arith.constant 0.0 : f32",
         "  %%e = tensor.empty() : %s" % t, "  %%er = tensor.empty() : %s" % r]
    cur, k, ops = "%x", 0, 0
    while ops < n:
        k += 1
        s = k % 4
        if s == 0:
            L += ["  %%f%d = linalg.fill ins(%%zero : f32) outs(%%e : %s) -> %s" % (k, t, t),
                  "  %%v%d = linalg.matmul ins(%s, %%w : %s, tensor<64x64xf32>) outs(%%f%d : %s) -> %s"
                  % (k, cur, t, k, t, t)]
            ops += 2
        elif s == 1:
            L += ["  %%v%d = linalg.generic {indexing_maps = [%s, %s, %s], %s} ins(%s, %%b : %s, "
                  "tensor<64xf32>) outs(%%e : %s) {" % (k, idm, col, idm, par, cur, t, t),
                  "  ^bb0(%a: f32, %c: f32, %o: f32):", "    %s = arith.addf %a, %c : f32",
                  "    %m = arith.maximumf %s, %zero : f32", "    linalg.yield %m : f32",
                  "  } -> %s" % t]
            ops += 1
        elif s == 2:
            L += ["  %%r%d = linalg.fill ins(%%zero : f32) outs(%%er : %s) -> %s" % (k, r, r),
                  "  %%s%d = linalg.reduce { arith.addf } ins(%s : %s) outs(%%r%d : %s) "
                  "dimensions = [1]" % (k, cur, t, k, r),
                  "  %%v%d = linalg.generic {indexing_maps = [%s, %s, %s], %s} ins(%s, %%s%d : %s, "
                  "%s) outs(%%e : %s) {" % (k, idm, row, idm, par, cur, k, t, r, t),
                  "  ^bb0(%a: f32, %c: f32, %o: f32):", "    %q = arith.constant 0.015625 : f32",
                  "    %m = arith.mulf %c, %q : f32", "    %s = arith.subf %a, %m : f32",
                  "    linalg.yield %s : f32", "  } -> %s" % t]
            ops += 3
        else:
            L += ["  %%v%d = linalg.generic {indexing_maps = [%s, %s], %s} ins(%s : %s) outs(%%e : %s) {"
                  % (k, idm, idm, par, cur, t, t),
                  "  ^bb0(%a: f32, %o: f32):", "    %q = arith.constant 0.5 : f32",
                  "    %m = arith.mulf %a, %q : f32", "    %u = math.tanh %m : f32",
                  "    linalg.yield %u : f32", "  } -> %s" % t]
            ops += 1
        cur = "%%v%d" % k
    L += ["  return %s : %s" % (cur, t), "}"]
    return "\n".join(L) + "\n"


def synthetic_row(n, pbc, runs):
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "chain.mlir")
        with open(src, "w") as f:
            f.write(chain(n))
        walls, stages = [], []
        for i in range(runs):
            stages.append(stage_times(pbc, src, d, os.path.join(d, "kernels%d" % i)))
            walls.append(stages[-1]["wall"])
    med = {k: statistics.median(s[k] for s in stages) for k in stages[0]}
    return {"n": n, "wall": statistics.median(walls), "stages": med}


def fmt_stages(s):
    return " ".join("%6.2f" % s.get(k, 0.0) for k in ("s1", "s2", "s3", "s4", "s5", "codegen"))


def main():
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--models", default=MODELS)
    ap.add_argument("--sizes", default="500,1000,2000,5000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--pbc", default=os.path.join(BIN, "pbc"))
    ap.add_argument("--inductor-python", default=None,
                    help="a Python with torch >= 2.0 and torchvision for the Inductor column")
    a = ap.parse_args()
    cpu = ""
    if os.path.exists("/proc/cpuinfo"):
        m = re.search(r"model name\s*:\s*(.*)", open("/proc/cpuinfo").read())
        cpu = m.group(1) if m else ""
    print("pbc compile time: %s, %d CPUs, load %.2f" % (cpu, os.cpu_count(), os.getloadavg()[0]))
    if a.models != "none":
        print("\nmodel            cold s  warm s (pbc)  segs |    s1     s2     s3     s4     s5   llvm"
              " |  pbc s  kern s | nests -> fns | inductor s")
        for name in a.models.split(","):
            try:
                row = model_row(name, a.pbc, a.inductor_python)
            except RuntimeError as e:
                print("%-15s failed: %s" % (name, str(e).splitlines()[0]))
                continue
            ind = "%.1f" % row["inductor"] if row["inductor"] else "n/a"
            print("%-15s %6.2f  %6.2f (%4.2f) %4d | %s | %6.2f  %6.2f | %5d -> %3d | %s" % (
                name, row["cold"], row["warm"], row["warm_pbc"], row["segments"],
                fmt_stages(row["stages"]), row["pbc_wall"], row["kernels_warm"],
                row["nests"][0], row["nests"][1], ind))
            sys.stdout.flush()
    if a.sizes != "none":
        sizes = [int(s) for s in a.sizes.split(",")]
        print("\nsynthetic chain   ops   wall s |    s1     s2     s3     s4     s5   llvm"
              "   (median of %d)" % a.runs)
        rows = []
        for n in sizes:
            row = synthetic_row(n, a.pbc, a.runs)
            rows.append(row)
            print("                %5d  %7.2f | %s" % (n, row["wall"], fmt_stages(row["stages"])))
            sys.stdout.flush()
        if len(rows) >= 2:
            lo, hi = rows[0], rows[-1]
            k = math.log(hi["wall"] / lo["wall"]) / math.log(hi["n"] / lo["n"])
            print("scaling exponent (wall, n = %d .. %d): %.2f" % (lo["n"], hi["n"], k))


if __name__ == "__main__":
    main()
