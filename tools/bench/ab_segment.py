#!/usr/bin/python3
"""Two compilations of one program, timed in one process, interleaved.

usage: tools/bench/ab_segment.py PROGRAM.mlir [--a OPTS] [--b OPTS]
           [--b-program OTHER.mlir] [--rounds N] [--calls N] [--entry NAME]
OPTS: comma-separated settings of one side: disable=GROUP[+GROUP...],
chip=NAME, O=LEVEL, or NAME=VALUE for an environment variable set while
that side compiles (pbc's driver inherits it). Default: both sides as built.
--b-program: side B compiles OTHER.mlir instead (e.g. the segment a changed
bridge emits; its entry takes arguments of its own shapes).

On this machine the time of a model's segment moves by 10-30% between runs
minutes apart (other tenants share the caches and memory), so two builds or
two settings compared run after run mostly compare the minutes they ran in.
Here both sides are compiled first, then called alternately in rounds of
--calls calls each (after a warm-up), so each pair of rounds shares its
minutes: the figure to read is the median of the per-round ratios B/A, with
their range. Inputs are random (weights too), the same for both sides.

PROGRAM is what pbc takes (e.g. a segment the bridge compiles:
tools/bench/profile_model.py writes them as WORK/MODEL.seg0.mlir). The
entry (--entry names it where the program has several) is called through
libpbc with every argument of the compiled signature (any element type
numpy has; outputs included). Needs build/bin/libpbc.so (or $PBC_LIBPBC),
numpy and PyTorch (the bridge's package loads it); run with
OMP_NUM_THREADS and the libomp preload you want measured (the figures in README.md used OMP_NUM_THREADS=2,
LD_PRELOAD=/usr/lib/llvm-22/lib/libomp.so.5).
"""

import argparse
import ctypes
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "torch"))
os.environ.setdefault("PBC_LIBPBC", os.path.join(ROOT, "build", "bin"))

import numpy as np  # noqa: E402

from pbc.arrays import dtype_of  # noqa: E402
from pbc.libpbc import Program, descriptor  # noqa: E402


def parse_side(text):
    side = {"disable": None, "chip": None, "O": 3, "env": {}}
    for item in filter(None, (text or "").split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise SystemExit("ab_segment: '%s' is not NAME=VALUE" % item)
        if key == "disable":
            side["disable"] = value.replace("+", ",")
        elif key in ("chip", "O"):
            side[key] = int(value) if key == "O" else value
        else:
            side["env"][key] = value
    return side


def compile_side(text, side):
    saved = dict(os.environ)
    os.environ.update(side["env"])
    try:
        # A cache of its own: the two sides' texts are the same.
        return Program(text, "<ab>", "cpu", side["chip"], side["O"], side["disable"],
                       cache_dir=tempfile.mkdtemp(prefix="pbc-ab-"))
    finally:
        os.environ.clear()
        os.environ.update(saved)


class Call:
    """One entry with random arguments, callable without allocation."""

    def __init__(self, program, entry):
        self.program = program  # its library stays loaded while the entry is called
        if entry is None:
            if len(program.entries) != 1:
                raise SystemExit("ab_segment: the program has %d entry points; name one "
                                 "(--entry)" % len(program.entries))
            entry = next(iter(program.entries))
        self.entry = program.entries[entry]
        rng = np.random.default_rng(1)
        self.arrays = []
        for elem, shape in self.entry.args:
            a = rng.standard_normal(shape) * 0.1 if elem[0] == "f" else np.zeros(shape)
            self.arrays.append(np.ascontiguousarray(a, dtype=dtype_of(elem)))
        self.descriptors = [descriptor(a.ctypes.data, a.shape) for a in self.arrays]
        self.argv = (ctypes.c_void_p * len(self.descriptors))(
            *[ctypes.addressof(d) for d in self.descriptors])

    def __call__(self):
        self.entry.packed(self.argv)


def main():
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("program")
    ap.add_argument("--a", default="")
    ap.add_argument("--b", default="")
    ap.add_argument("--b-program")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--entry")
    a = ap.parse_args()
    texts = [open(a.program).read(), open(a.b_program or a.program).read()]
    calls = [Call(compile_side(t, parse_side(s)), a.entry) for t, s in zip(texts, (a.a, a.b))]
    for c in calls:
        for _ in range(5):
            c()
    ms = [[], []]
    for _ in range(a.rounds):
        for side, c in enumerate(calls):
            ts = []
            for _ in range(a.calls):
                t = time.perf_counter()
                c()
                ts.append(time.perf_counter() - t)
            ms[side].append(statistics.median(ts) * 1e3)
    ratios = [b / x for x, b in zip(*ms)]
    print("A (%s): median %.3f ms; B (%s%s): median %.3f ms" % (
        a.a or "as built", statistics.median(ms[0]), a.b or "as built",
        ", " + a.b_program if a.b_program else "", statistics.median(ms[1])))
    print("B/A per round (%d rounds of %d calls): median %.3f, range %.3f-%.3f" % (
        a.rounds, a.calls, statistics.median(ratios), min(ratios), max(ratios)))


if __name__ == "__main__":
    main()
