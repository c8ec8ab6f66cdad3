#!/usr/bin/python3
"""Where a model's time goes under pbc, next to onnxruntime's own per-op
profile (issue 46): which kernels, and how much in OpenMP's runtime,
allocation and the bridge.

usage: tools/bench/profile_model.py MODEL [--seconds S] [--top N] [--work DIR]
           [--threads N] [--no-ort]
MODEL: as tools/bench/bench_models.py (a torchvision classifier, bert or
encoder12); like it, the script runs itself in the frontends' environment
(tools/python-env.sh: torch 2.15, onnxruntime 1.32).

pbc: the model runs through pbc.jit (--threads OpenMP threads, default 2; the
same for onnxruntime) in a child process,
warmed up, then called for --seconds under `perf record` (999 Hz, that
process only); samples are grouped by function: each of pbc's kernels (one
function per loop nest; `..omp_par` parts counted with their nest), the
OpenMP runtime (libomp: forks, barriers, spinning), allocation (malloc,
free, memset, page faults: libc and the kernel), and the bridge (Python,
PyTorch); and per thread (the main one and each OpenMP worker with a
twentieth of its samples or more), the shares of the kernels' parallel
parts, serial kernel code, the OpenMP runtime and the rest: a worker waits
in the runtime while the main thread runs serial code. Each kernel is
described from the segment's IR after
pbc-outline-nests (its kind, its buffers' shapes and how many times the
segment calls it: identical nests are one function). ms/call = share x
the median call time measured in the same child without perf (all calls of
the function together).

onnxruntime: the ONNX export of bench_models.py, with `enable_profiling`, the
same thread settings; per node type, the summed node time per call.
Needs `perf` (linux-perf) and build/bin/pbc, build/bin/libpbc.so.
"""

import argparse
import collections
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import bench_models  # noqa: E402
from timing import median_ms  # noqa: E402

LIBOMP = "/usr/lib/llvm-22/lib/libomp.so.5"


def worker(name, work, seconds):
    """Child: compile, record the segments' IR, time calls, then loop."""
    sys.path.insert(0, os.path.join(ROOT, "tools", "torch"))
    import torch
    import pbc
    import pbc.runtime as rt
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    texts = []

    class Recording(rt.Program):
        def __init__(self, text, *a, **k):
            texts.append(text)
            super().__init__(text, *a, **k)

    rt.Program = Recording
    model, x = bench_models.build_model(name)
    fast = pbc.jit(model)
    with torch.no_grad():
        fast(x)
        for i, t in enumerate(texts):
            with open(os.path.join(work, "%s.seg%d.mlir" % (name, i)), "w") as f:
                f.write(t)
        with open(os.path.join(work, name + ".ms"), "w") as f:
            f.write("%f" % median_ms(lambda: fast(x), 20))
        open(os.path.join(work, name + ".ready"), "w").close()  # perf starts now
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            fast(x)


def nest_info(pbc_bin, seg, work):
    """{function: (kind, buffer shapes, calls)} from the IR after pbc-outline-nests."""
    d = tempfile.mkdtemp(dir=work)
    subprocess.run([pbc_bin, "--emit=s4", "--jobs=1", "--dump-dir=" + d, "-o", os.devnull, seg],
                   check=True, capture_output=True)
    path = glob.glob(os.path.join(d, "*pbc-outline-nests*"))
    if not path:
        return {}
    text = open(path[0]).read()
    info = {}
    calls = collections.Counter(re.findall(r"\bcall @(\w+)\(", text))
    heads = list(re.finditer(r"func\.func private @(\w+)\(([^)]*)\)", text))
    for i, m in enumerate(heads):
        body = text[m.end():heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        kind = re.search(r'pbc\.kind = "(\w+)"', body)
        copy = "pbc.copy" in body
        shapes = re.findall(r"memref<([0-9x]+)x(?:f|i|bf)\d+", m.group(2))
        info[m.group(1)] = ((kind.group(1) if kind else "copy" if copy else "-"),
                            ", ".join(shapes), calls[m.group(1)])
    return info


def perf_profile(name, work, seconds, env):
    ready = os.path.join(work, name + ".ready")
    if os.path.exists(ready):
        os.remove(ready)
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", name, work,
                              str(seconds + 60)], env=env)
    while not os.path.exists(ready):
        if child.poll() is not None:
            raise RuntimeError("the pbc worker failed")
        time.sleep(0.2)
    data = os.path.join(work, name + ".perf")
    subprocess.run(["perf", "record", "-q", "-F", "999", "-p", str(child.pid), "-o", data, "--",
                    "sleep", str(seconds)], check=True, capture_output=True)
    child.kill()
    child.wait()
    rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "dso,sym",
                          "--stdio"], capture_output=True, text=True).stdout
    rows = []
    for line in rep.splitlines():
        m = re.match(r"\s*([0-9.]+)%\s+(\S+)\s+\[(.)\]\s+(\S+)", line)
        if m:
            rows.append((float(m.group(1)), "[kernel]" if m.group(3) == "k" else m.group(2),
                         m.group(4)))
    return rows, per_thread(data)


def per_thread(data):
    """{thread: Counter(place: samples)}: each thread's samples in the
    kernels' parallel parts (an `..omp_par` function), in serial kernel code
    (a nest run by the main thread alone, or the segment's glue), in the
    OpenMP runtime, or elsewhere (category()). While the main thread runs
    serial code the workers wait in the runtime: the time two threads
    lose."""
    out = subprocess.run(["perf", "script", "-i", data, "-F", "pid,tid,ip,sym,dso"],
                         capture_output=True, text=True).stdout
    threads = collections.defaultdict(collections.Counter)
    for line in out.splitlines():
        m = re.match(r"\s*(\d+)/(\d+)\s+[0-9a-f]+\s+(.*?)\s*\(([^)]*)\)\s*$", line)
        if not m:
            continue
        dso, sym = os.path.basename(m.group(4)), m.group(3)
        dso = "[kernel]" if dso.startswith("[kernel") else dso
        place = category(dso, sym)
        if place == "kernel":
            place = "kernel, parallel part" if "..omp_par" in sym else "kernel, serial"
        who = "main" if m.group(1) == m.group(2) else "thread %s" % m.group(2)
        threads[who][place] += 1
    return threads


def category(dso, sym):
    if dso.startswith("pbc-") and (dso.endswith(".so") or dso.endswith(".tmp")):  # .tmp: a private copy
        return "kernel"
    if "libomp" in dso:
        return "OpenMP runtime (fork/join, barriers, spinning)"
    if dso == "[kernel]" or sym.startswith(("malloc", "free", "_int_", "__memset", "cfree")):
        return "kernel (page faults, scheduling) and allocation"
    if "pbc_cpu_runtime" in dso:
        return "pbc runtime (buffers)"
    return "bridge (Python, PyTorch, libc)"


def ort_profile(name, work, py, threads):
    code = r"""
import json, sys, numpy as np, onnxruntime as ort
work, name, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
so = ort.SessionOptions()
so.intra_op_num_threads = threads; so.inter_op_num_threads = 1
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
so.enable_profiling = True; so.profile_file_prefix = work + "/" + name + ".ortprof"
s = ort.InferenceSession(work + "/" + name + ".onnx", so, providers=["CPUExecutionProvider"])
x = np.load(work + "/" + name + ".x.npy")
for _ in range(30): s.run(None, {"x": x})
print(s.end_profiling())
"""
    r = subprocess.run([py, "-c", code, work, name, str(threads)], capture_output=True, text=True, check=True)
    events = json.load(open(r.stdout.strip().splitlines()[-1]))
    runs = [e for e in events if e.get("name") == "model_run"]
    per_op = collections.Counter()
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            per_op[e.get("args", {}).get("op_name", "?")] += e["dur"]
    n = max(len(runs), 1)
    run_ms = statistics.median([e["dur"] for e in runs]) / 1e3 if runs else float("nan")
    return run_ms, {k: v / n / 1e3 for k, v in per_op.items()}


def main():
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("model", nargs="?")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--work", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-ort", action="store_true")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a.worker[0], a.worker[1], float(a.worker[2]))
        return
    name = a.model or ap.error("MODEL is required")
    work = a.work or tempfile.mkdtemp(prefix="pbc-profile-")
    os.makedirs(work, exist_ok=True)
    py = bench_models.frontends_python()
    if os.path.realpath(sys.prefix) != os.path.realpath(os.path.dirname(os.path.dirname(py))):
        os.execv(py, [py, os.path.abspath(__file__)] + sys.argv[1:])
    bench_models.prepare(name, work, ["ort"])
    # No kernel cache: cached kernels are named by their key (pbc_k<key>_i),
    # the others keep the names pbc-outline-nests gave them, which
    # nest_info describes.
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), OPENBLAS_NUM_THREADS="1", LD_PRELOAD=LIBOMP,
               PBC_CACHE_DIR=os.environ.get("PBC_CACHE_DIR", os.path.join(work, "cache")),
               PBC_KERNEL_CACHE_DIR="off")
    pbc_bin = os.environ.get("PBC", os.path.join(ROOT, "build", "bin", "pbc"))
    rows, threads = perf_profile(name, work, a.seconds, env)
    call_ms = float(open(os.path.join(work, name + ".ms")).read())
    info = {}
    for seg in sorted(glob.glob(os.path.join(work, name + ".seg*.mlir"))):
        info.update(nest_info(pbc_bin, seg, work))
    total = sum(r[0] for r in rows) or 1.0
    nests, cats, kinds = collections.Counter(), collections.Counter(), collections.Counter()
    for pct, dso, sym in rows:
        share = pct / total
        cat = category(dso, sym)
        cats[cat] += share
        if cat == "kernel":
            fn = sym.split("..omp_par")[0]
            nests[fn] += share
            kinds[info.get(fn, ("?", "", 0))[0]] += share
    print("%s under pbc: %.2f ms per call (median of 20); %d kernels seen in %.0f s of samples"
          % (name, call_ms, len(nests), a.seconds))
    print("\n| where | share | ms/call |\n|---|---|---|")
    for c, s in cats.most_common():
        print("| %s | %.1f%% | %.2f |" % (c, 100 * s, s * call_ms))
    busy = [(who, c) for who, c in threads.items() if sum(c.values()) >= 0.05 * max(
        sum(v.values()) for v in threads.values())]
    if busy:
        places = sorted({p for _, c in busy for p in c}, key=lambda p: -sum(c[p] for _, c in busy))
        print("\n| thread | " + " | ".join(places) + " |\n|---|" + "---|" * len(places))
        for who, c in sorted(busy, key=lambda wc: wc[0] != "main"):
            n = sum(c.values())
            print("| %s | " % who + " | ".join("%.1f%%" % (100.0 * c[p] / n) for p in places) + " |")
    print("\n| kernels by kind | share | ms/call |\n|---|---|---|")
    for k, s in kinds.most_common():
        print("| %s | %.1f%% | %.2f |" % (k, 100 * s, s * call_ms))
    print("\n| kernel | kind | buffers | calls | share | ms/call |\n|---|---|---|---|---|---|")
    for fn, s in nests.most_common(a.top):
        kind, shapes, n = info.get(fn, ("?", "", 0))
        print("| %s | %s | %s | %d | %.1f%% | %.2f |" % (fn, kind, shapes, n, 100 * s, s * call_ms))
    if not a.no_ort:
        run_ms, ops = ort_profile(name, work, sys.executable, a.threads)
        print("\nonnxruntime: %.2f ms per run (median, profiling on)" % run_ms)
        print("\n| ONNX op | ms/call |\n|---|---|")
        for op, ms in sorted(ops.items(), key=lambda kv: -kv[1])[:a.top]:
            print("| %s | %.2f |" % (op, ms))


if __name__ == "__main__":
    main()
