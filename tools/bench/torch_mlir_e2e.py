"""torch-mlir's end-to-end op suite through torch.compile(backend="pbc").

Each of the suite's modules (torch-mlir's own files, not copied here: pass
the folder holding torch_mlir_e2e_test, e.g. projects/pt1/python of a
torch-mlir checkout) is driven by its own invoker and inputs; its results
are compared with eager PyTorch's on the same inputs. Per module:

  compiled   every graph Dynamo made went to pbc and compiled whole (no
             op eager, no graph break), results match
  partial    results match, but some ops ran eagerly (named) or Dynamo
             broke the graph
  mismatch   a result differs from eager (a wrong answer: a bug); f32
             within rtol 1e-4 / atol 1e-5, f16 and bf16 within 4 units
             in the last place at the output's magnitude, integers exact
  error      an exception (the suite's module may be unsupported by
             Dynamo itself too: see the message)
  timeout    over --timeout seconds
  crash      the worker process died (a memory error, a signal)

Runs in the frontends environment (tools/python-env.sh; plus
`pip install multiprocess`, which the suite imports):
  PY=$(tools/python-env.sh | tail -1)
  LD_PRELOAD=/usr/lib/llvm-22/lib/libomp.so.5 PYTHONPATH=tools/torch \\
    $PY tools/bench/torch_mlir_e2e.py --suite TORCH_MLIR/projects/pt1/python \\
    --out /tmp/e2e.jsonl [--filter REGEX] [--workers 2]
"""

import argparse
import collections
import json
import re
import signal
import subprocess
import sys
import time
import types


def load_registry(suite):
    sys.path.insert(0, suite)
    # The suite's __init__ reads torch-mlir's build-time version module,
    # which PyPI's wheel does not ship: give it the installed torch's.
    import torch
    ver = types.ModuleType("torch_mlir._version")
    ver.version = "pbc"
    ver.torch_version_for_comparison = lambda: torch.__version__.split("+")[0]
    sys.modules["torch_mlir._version"] = ver
    from torch_mlir_e2e_test.registry import GLOBAL_TEST_REGISTRY
    from torch_mlir_e2e_test.test_suite import register_all_tests
    register_all_tests()
    return {t.unique_name: t for t in GLOBAL_TEST_REGISTRY}


def same(got, want):
    import torch
    if isinstance(want, (tuple, list)):
        return isinstance(got, (tuple, list)) and len(got) == len(want) and all(
            same(g, w) for g, w in zip(got, want))
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor) or got.shape != want.shape or got.dtype != want.dtype:
            return False
        if want.dtype in (torch.float16, torch.bfloat16):
            # A few units in the last place at the output's magnitude: eager
            # and compiled code may accumulate at different precisions.
            ulp = {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}[want.dtype]
            scale = max(1.0, want.float().abs().nan_to_num(0.0, 0.0, 0.0).max().item())
            return torch.allclose(got.float(), want.float(), rtol=0, atol=4 * ulp * scale,
                                  equal_nan=True)
        if want.is_floating_point() or want.is_complex():
            return torch.allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True)
        return torch.equal(got, want)
    return got == want


def run_one(test):
    import torch
    import torch._dynamo as dynamo
    from torch._dynamo.utils import counters
    from torch_mlir_e2e_test.framework import TestUtils, _Tracer, generate_golden_trace
    import pbc

    golden = generate_golden_trace(test)
    plans = []
    dynamo.reset()
    counters.clear()
    # Driven exactly as the golden run (the suite's invoker, a fresh
    # TestUtils seeding the random stream): the same inputs, and eager
    # random ops draw the same numbers.
    trace = []
    compiled = torch.compile(test.program_factory(), backend=pbc.recording_backend(plans))
    test.program_invoker(_Tracer(compiled, [], trace), TestUtils())
    if len(trace) != len(golden):
        return {"status": "mismatch", "why": "%d calls, eager made %d" % (len(trace), len(golden))}
    for item, want in zip(trace, golden):
        if not same(item.output, want.output):
            return {"status": "mismatch", "why": "%s differs from eager" % want.symbol}
    fallbacks = sorted({name for p in plans for name, _ in getattr(p, "fallbacks", [("graph", "")])})
    breaks = sum(counters["graph_break"].values())
    if fallbacks or breaks or not all(hasattr(p, "fallbacks") for p in plans):
        refusals = sorted({p.torch_mlir_refusal for p in plans
                           if getattr(p, "torch_mlir_refusal", None)})
        return {"status": "partial", "eager": fallbacks, "graph_breaks": breaks,
                "torch_mlir": refusals}
    return {"status": "compiled", "graphs": len(plans)}


class Timeout(BaseException):
    pass


def _alarm(signum, frame):
    raise Timeout()


def worker(suite, names, args_timeout):
    signal.signal(signal.SIGALRM, _alarm)
    import warnings
    warnings.simplefilter("ignore")
    registry = load_registry(suite)
    for name in names:
        print(json.dumps({"start": name}), flush=True)
        t = time.time()
        signal.alarm(args_timeout)
        try:
            r = run_one(registry[name])
        except Timeout:
            r = {"status": "timeout", "why": "over %d s" % args_timeout}
        except Exception as e:  # the module's own failure, or pbc's
            msg = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
            r = {"status": "error", "why": "%s: %s" % (type(e).__name__, msg)}
        signal.alarm(0)
        r.update(name=name, seconds=round(time.time() - t, 2))
        print(json.dumps(r), flush=True)


def main():
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--suite", required=True, help="folder holding torch_mlir_e2e_test")
    ap.add_argument("--out", default="e2e.jsonl")
    ap.add_argument("--filter", default="")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=180, help="seconds per module")
    ap.add_argument("--sample", type=int, default=1, help="every K-th module only")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a.suite, sys.stdin.read().split(), a.timeout)
        return
    names = sorted(n for n in load_registry(a.suite) if re.search(a.filter, n))[::a.sample]
    shards = [names[i::a.workers] for i in range(a.workers)]
    results = {}
    procs = []

    def spawn(todo):
        p = subprocess.Popen([sys.executable, __file__, "--worker", "--suite", a.suite,
                              "--timeout", str(a.timeout)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
        p.stdin.write("\n".join(todo))
        p.stdin.close()
        return [p, todo, None]

    procs = [spawn(s) for s in shards if s]
    import selectors
    sel = selectors.DefaultSelector()
    for pr in procs:
        sel.register(pr[0].stdout, selectors.EVENT_READ, pr)
    while procs:
        for key, _ in sel.select():
            pr = key.data
            line = pr[0].stdout.readline()
            if line:
                msg = json.loads(line)
                if "start" in msg:
                    pr[2] = msg["start"]
                else:
                    results[msg["name"]] = msg
                    pr[2] = None
                    print("%-60s %s" % (msg["name"], msg["status"]), flush=True)
                continue
            sel.unregister(pr[0].stdout)
            pr[0].wait()
            procs.remove(pr)
            if pr[2] is not None:  # died inside a test
                results[pr[2]] = {"name": pr[2], "status": "crash",
                                  "why": "worker exit status %d" % pr[0].returncode}
                print("%-60s crash" % pr[2], flush=True)
            rest = [n for n in pr[1] if n not in results]
            if rest:
                npr = spawn(rest)
                procs.append(npr)
                sel.register(npr[0].stdout, selectors.EVENT_READ, npr)
    with open(a.out, "w") as f:
        for n in names:
            f.write(json.dumps(results.get(n, {"name": n, "status": "missing"})) + "\n")
    count = collections.Counter(r.get("status", "missing") for r in results.values())
    total = len(names)
    print("\n%d modules: " % total + ", ".join(
        "%s %d (%.1f%%)" % (k, v, 100.0 * v / total) for k, v in count.most_common()))
    eager = collections.Counter(op for r in results.values() for op in r.get("eager", []))
    print("ops left eager most often:", ", ".join("%s %d" % kv for kv in eager.most_common(25)))
    why = collections.Counter(re.sub(r"<torch-mlir graph>:\d+:\d+: ", "", w)[:90]
                              for r in results.values() for w in r.get("torch_mlir", []))
    print("why torch-mlir's route was refused, most often:")
    for w, k in why.most_common(15):
        print("  %4d  %s" % (k, w))


if __name__ == "__main__":
    main()
