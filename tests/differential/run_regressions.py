#!/usr/bin/python3
"""Replays the differential tester's saved reproducers as regression tests.

    /usr/bin/python3 tests/differential/run_regressions.py --pbc build/bin/pbc [DIR]

Each NAME.mlir in DIR (default: regressions/ next to this script) carries
the pbc arguments it failed under in a `// ARGS:` header line; NAME.npz
holds its inputs (in0, in1, ...), numpy's outputs (out0, ...), their
tolerances (allowed0, ...) and element types (dt0, ...), all from the
program's numpy evaluation when it was saved. The program is compiled with
those arguments and with none (-O3), run in a child process, and compared.
Ends with "N passed, N failed".
"""

import argparse
import glob
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402
import progen  # noqa: E402


class Saved:
    """The reference a reproducer was saved with (oracle.Reference's shape)."""

    def __init__(self, npz):
        n = sum(1 for k in npz.files if k.startswith("out"))
        self.outputs = [npz["out%d" % k] for k in range(n)]
        self.allowed = [npz["allowed%d" % k] for k in range(n)]
        self.dts = [str(npz["dt%d" % k]) for k in range(n)]

    compare = oracle.Reference.compare


def check(pbc, path, timeout):
    with open(path) as f:
        text = f.read()
    args = []
    for line in text.splitlines():
        if line.startswith("// ARGS:"):
            args = line[len("// ARGS:"):].split()
    npz = np.load(path[:-5] + ".npz")
    ref = Saved(npz)
    inputs = [npz["in%d" % k] for k in range(sum(1 for f in npz.files if f.startswith("in")))]
    outs = [(o.shape, progen.c_dtype(dt)) for o, dt in zip(ref.outputs, ref.dts)]
    fails = []
    for variant in ([args, []] if args else [[]]):
        wd = tempfile.mkdtemp(prefix="pbc_regr_")
        try:
            lib, bad = oracle.compile_module(pbc, text, variant, wd, timeout)
            if bad is not None:
                fails.append("%s: %s" % (" ".join(variant) or "-O3", bad))
                continue
            got, errs = oracle.run_calls(lib, [("f", inputs, outs)], wd, timeout)
            if "f" in errs:
                fails.append("%s: %s" % (" ".join(variant) or "-O3", errs["f"]))
                continue
            msg = ref.compare(got["f"])
            if msg:
                fails.append("%s: mismatch: %s" % (" ".join(variant) or "-O3", msg))
        finally:
            shutil.rmtree(wd, ignore_errors=True)
    return fails


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pbc", default=os.environ.get("PBC", os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "bin", "pbc")))
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("dir", nargs="?", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                            "regressions"))
    args = ap.parse_args()
    pbc = os.path.abspath(args.pbc)
    files = sorted(glob.glob(os.path.join(args.dir, "*.mlir")))
    passed = failed = 0
    for path in files:
        fails = check(pbc, path, args.timeout)
        name = os.path.basename(path)
        if fails:
            failed += 1
            print("FAIL %s:\n    %s" % (name, "\n    ".join(f.replace("\n", "\n    ") for f in fails)))
        else:
            passed += 1
            print("PASS %s" % name)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or not files else 0


if __name__ == "__main__":
    sys.exit(main())
