"""The differential oracle: compiles random programs with pbc under a set of
variants (-O3, each --disable group, -O0..-O2), runs them in child processes
and compares every output with the numpy evaluation of the same program.

Outcome classes, per (program, variant):
  ok            every output within tolerance of numpy
  mismatch      an output differs (or was left unwritten: outputs start as
                NaN / 0x5A sentinels)
  rejected      pbc exited 1 on a valid program (a compile error)
  crash         pbc's compiler crashed (exit 70: contained) or died of a
                signal (uncontained)
  run-crash     the compiled program crashed
  hang          compile or run exceeded the timeout
  input-written the program wrote one of its inputs

Tolerance: the program is evaluated again with every float result perturbed
by its type's rounding (progen.Program.evaluate(noise=...)); an element may
differ from numpy by 4x the largest spread of the noisy runs, plus twice
the output's 90th-percentile relative spread, plus 5% of the output's
largest spread, plus 2 units in its last place. Integer outputs must match exactly; non-finite
values exactly (the same infinity; NaN where NaN).
"""

import os
import re
import pickle
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import progen

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "run_child.py")
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import pbc_lib  # noqa: E402  (its PREBUILT: --record / --replay-libs)

# The S3 groups that --disable takes (pbc --help lists them).
GROUPS = ("cleanup", "fusion", "slice-fusion", "epilogue-fusion", "attention-fusion", "tiling",
          "fast-buffers", "vectorization", "fp-contract", "unroll", "scalar-replacement", "prefetch",
          "parallelization", "streaming-stores")


# The chip's caches cut down (16 KiB L1, 64 KiB L2, 512 KiB L3): the plans
# that start only past a cache (packing, K blocking, B read in place, a
# GEMV split by rows, prefetches, non-temporal stores) reached by the small
# tensors most programs have.
SMALL_CACHES = ["--chip-set=l1d-bytes=16384", "--chip-set=l2-bytes=65536",
                "--chip-set=l3-bytes=524288"]


def variants(spec):
    """'o3' | 'all' | 'levels' | comma list of variant names -> [(name, args)].
    Names: O0..O3, no-GROUP, small-caches."""
    every = [("O3", [])] + [("no-" + g, ["--disable=" + g]) for g in GROUPS] + \
        [("O%d" % k, ["-O%d" % k]) for k in (0, 1, 2)] + [("small-caches", SMALL_CACHES)]
    if spec == "o3":
        return every[:1]
    if spec == "all":
        return every
    if spec == "levels":
        return [v for v in every if v[0].startswith("O")]
    by = dict(every)
    out = []
    for name in spec.split(","):
        if name not in by:
            raise SystemExit("unknown variant %r (O0..O3, small-caches, no-GROUP: %s)"
                             % (name, ", ".join(GROUPS)))
        out.append((name, by[name]))
    return out


# ---------------------------------------------------------------- reference

class Reference:
    """numpy's outputs of a program and the tolerance per element."""

    def __init__(self, prog, rng_seed=0, runs=4):
        vals = prog.evaluate()
        self.outputs = [vals[o] for o in prog.outputs]
        self.dts = [prog.nodes[o].dt for o in prog.outputs]
        spread = [np.zeros(v.shape) for v in self.outputs]
        unstable = [np.zeros(v.shape, bool) for v in self.outputs]
        rng = np.random.default_rng(rng_seed)
        for _ in range(runs):
            nv = prog.evaluate(noise=rng)
            for k, o in enumerate(prog.outputs):
                if not progen.is_float(self.dts[k]):
                    continue
                ref, got = self.outputs[k], nv[o]
                with np.errstate(all="ignore"):
                    d = np.abs(got - ref)
                same = (got == ref) | (np.isnan(got) & np.isnan(ref))
                unstable[k] |= ~same & ~(np.isfinite(got) & np.isfinite(ref))
                spread[k] = np.maximum(spread[k], np.where(np.isfinite(d), d, 0.0))
        self.allowed = []
        for k, s in enumerate(spread):
            floor = 0.05 * float(s.max()) if s.size else 0.0
            ulps = 0.0
            if progen.is_float(self.dts[k]):
                with np.errstate(all="ignore"):
                    ulps = np.where(np.isfinite(self.outputs[k]), np.abs(self.outputs[k]), 0.0) * \
                        progen.NOISE_ULPS * 2 * progen.EPS[self.dts[k]]
            # A few noisy runs can leave an element's own spread small by
            # chance: each element also gets twice the output's typical
            # (90th percentile) relative spread.
            rel = 0.0
            if progen.is_float(self.dts[k]) and s.size:
                with np.errstate(all="ignore"):
                    r = np.abs(self.outputs[k])
                    ratios = (s / r)[np.isfinite(s / r) & (r > 0)]
                if ratios.size:
                    rel = 2.0 * float(np.percentile(ratios, 90)) * np.where(np.isfinite(r), r, 0.0)
            a = np.array(4.0 * s + floor + ulps + rel, dtype=np.float64)
            a[unstable[k]] = np.inf  # near overflow or a NaN edge: not judged
            self.allowed.append(a)

    def compare(self, got_arrays):
        """None if every output matches, else a message."""
        if len(got_arrays) != len(self.outputs):
            return "%d outputs, expected %d" % (len(got_arrays), len(self.outputs))
        for k, (g, ref, dt, allowed) in enumerate(zip(got_arrays, self.outputs, self.dts,
                                                       self.allowed)):
            g = progen.from_c(g, dt)
            if g.shape != ref.shape:
                return "output %d: shape %s, expected %s" % (k, g.shape, ref.shape)
            if not progen.is_float(dt):
                bad = g != ref
            else:
                with np.errstate(all="ignore"):
                    fin = np.isfinite(g) & np.isfinite(ref)
                    err = np.where(fin, np.abs(g - ref), 0.0)
                    exact = (g == ref) | (np.isnan(g) & np.isnan(ref))
                    bad = np.where(fin, err > allowed, ~exact & ~np.isinf(allowed))
            if bad.any():
                i = tuple(int(v) for v in np.argwhere(bad)[0])
                return ("output %d: %d of %d elements differ; first at %s: got %r, numpy %r "
                        "(allowed %.3g)" % (k, int(bad.sum()), bad.size, i, float(g[i]),
                                            float(ref[i]), float(np.asarray(allowed)[i])
                                            if progen.is_float(dt) else 0.0))
        return None


# ---------------------------------------------------------------- compile, run

class Outcome:
    def __init__(self, cls, detail="", full=""):
        self.cls = cls
        self.detail = detail
        self.full = full or detail  # a rejected compile's whole output
        self.route = None  # a dynamic program's: "batch" (one compile) or "sized"

    def __repr__(self):
        return "%s%s" % (self.cls, (": " + self.detail) if self.detail else "")


def compile_module(pbc, text, args, workdir, timeout):
    """-> (path of the library, None) or (None, Outcome)."""
    src = os.path.join(workdir, "input.mlir")
    with open(src, "w") as f:
        f.write(text)
    lib = os.path.join(workdir, "libprog.so")
    # --verify-each: a pass that leaves invalid IR is named, not found later.
    cmd = [pbc, "--emit=lib", "--verify-each", "-o", lib, src] + list(args)
    key = None
    if pbc_lib.PREBUILT is not None:
        key = os.path.join(pbc_lib.PREBUILT[1], pbc_lib.prebuilt_key(text.encode(), args))
        if pbc_lib.PREBUILT[0] == "replay":
            if os.path.exists(key + ".err"):
                with open(key + ".err") as f:
                    cls, _, detail = f.read().partition("\n")
                return None, Outcome(cls, detail)
            if not os.path.exists(key + ".so"):
                return None, Outcome("unrecorded", "no library recorded for this program")
            shutil.copy(key + ".so", lib)
            return lib, None
    lib, bad = _run_pbc(cmd, lib, workdir, timeout)
    if key is not None:  # recording
        if bad is not None:
            with open(key + ".err", "w") as f:
                f.write("%s\n%s" % (bad.cls, bad.detail))
            return None, bad
        shutil.copy(lib, key + ".so")
        return None, Outcome("recorded")
    return lib, bad


def _run_pbc(cmd, lib, workdir, timeout):
    try:
        p = subprocess.run(cmd, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, Outcome("hang", "compile exceeded %ds" % timeout)
    out = p.stdout.decode(errors="replace").strip()
    tail = "\n".join(out.splitlines()[-6:])
    if p.returncode == 0 and os.path.exists(lib):
        return lib, None
    if p.returncode == 1:
        return None, Outcome("rejected", tail, out)
    if p.returncode == 70:
        return None, Outcome("crash", "contained (exit 70): " + tail)
    return None, Outcome("crash", "exit %d: %s" % (p.returncode, tail))


def run_calls(lib, calls, workdir, timeout):
    """Runs [(func, inputs, outs)] in a child. -> ({func: outputs},
    {func: Outcome}) where a call that crashed or hung and the calls after it
    have an Outcome."""
    job = os.path.join(workdir, "job.pkl")
    res = os.path.join(workdir, "out.pkl")
    if os.path.exists(res):
        os.remove(res)
    with open(job, "wb") as f:
        pickle.dump({"lib": lib, "calls": calls}, f)
    cmd = [sys.executable, CHILD, job, res]
    outcome = None
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                           env=dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2")))
        if p.returncode != 0:
            outcome = Outcome("run-crash", "exit %d %s" % (p.returncode,
                                                         p.stdout.decode(errors="replace")[-300:]))
    except subprocess.TimeoutExpired:
        outcome = Outcome("hang", "run exceeded %ds" % timeout)
    result = {"outputs": {}, "errors": {}}
    if os.path.exists(res):
        with open(res, "rb") as f:
            result = pickle.load(f)
    outs, fails = result["outputs"], {}
    for func, msg in result["errors"].items():
        fails[func] = Outcome("input-written" if "modified" in msg else "run-crash", msg)
    for func, _, _ in calls:
        if func not in outs and func not in fails:
            fails[func] = outcome or Outcome("run-crash", "no result")
    return outs, fails


def _symbolic_entries(lib):
    """The entries a library's header shows with size symbols (s0, s1, ...:
    pbc/symbolic_sizes.h)."""
    try:
        with open(os.path.splitext(lib)[0] + ".h") as f:
            text = f.read()
    except OSError:
        return set()
    return {m.group(1) for m in re.finditer(r"/\* @(\w+) \*/\n([^;]*);", text)
            if re.search(r"/\* (?:\w+x)*s\d+x", m.group(2))}


def check_batch(pbc, progs, refs, args, timeout=120, keep=None):
    """Compiles the programs as one module under `args`, runs and compares
    them. -> [Outcome] per program. A batch that fails to compile or crashes
    as a whole is retried one program at a time, to name the culprits."""
    workdir = tempfile.mkdtemp(prefix="pbc_diff_")
    try:
        text = progen.module([p.emit("p%d" % k) for k, p in enumerate(progs)])
        # A dynamic program (dynamic.Instance) is compiled once for every
        # batch where pbc separates it (no sizes given), else for its sizes;
        # the retries below pass the caller's args (each program names its own).
        dynamic = [hasattr(p, "pbc_args") for p in progs]

        def each_alone():
            return [check_batch(pbc, [p], [r], args, timeout)[0] for p, r in zip(progs, refs)]
        refused = set()
        lib, bad = None, None
        if any(dynamic) and pbc_lib.PREBUILT is None:
            lib, bad = compile_module(pbc, text, args, workdir, timeout)
            if bad is not None and bad.cls == "rejected":
                refused = set(re.findall(r"@(p\d+) does not separate over its batch", bad.full)) | \
                    set(re.findall(r"argument \d+ of @(p\d+) has a dynamic size in dimension",
                                   bad.full))
            if bad is not None and not refused:
                return [bad] if len(progs) == 1 else each_alone()
        else:
            refused = {"p%d" % k for k, d in enumerate(dynamic) if d}
        if lib is None:
            sized = list(args) + [a for k, p in enumerate(progs) if "p%d" % k in refused
                                  for a in p.pbc_args("p%d" % k)]
            lib, bad = compile_module(pbc, text, sized, workdir, timeout)
        if bad is not None and bad.cls == "recorded":
            # Record each program alone too: the replay retries one at a time
            # when a batch crashes.
            if len(progs) > 1:
                for p, r in zip(progs, refs):
                    check_batch(pbc, [p], [r], args, timeout)
            return [bad] * len(progs)
        if bad is not None:
            if len(progs) == 1:
                return [bad]
            return each_alone()
        symbolic = _symbolic_entries(lib)
        calls = [("p%d" % k, p.c_inputs(), p.c_outputs()) for k, p in enumerate(progs)]
        outs, fails = run_calls(lib, calls, workdir, timeout)
        if fails and len(progs) > 1 and any(f.cls in ("run-crash", "hang") for f in fails.values()):
            # A crash ends the child: the calls after it never ran.
            return each_alone()
        result = []
        for k, ref in enumerate(refs):
            f = "p%d" % k
            if f in fails:
                result.append(fails[f])
                continue
            msg = ref.compare(outs[f])
            result.append(Outcome("mismatch", msg) if msg else Outcome("ok"))
            if dynamic[k]:
                result[-1].route = "sized" if f in refused else \
                    "symbolic" if f in symbolic else "batch"
        return result
    finally:
        if keep:
            shutil.copytree(workdir, keep, dirs_exist_ok=True)
        shutil.rmtree(workdir, ignore_errors=True)


def check_one(pbc, prog, args, timeout=120):
    return check_batch(pbc, [prog], [Reference(prog)], args, timeout)[0]
