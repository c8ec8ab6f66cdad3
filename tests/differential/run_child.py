"""Runs compiled entry points in a process of its own, so that a program that
crashes or hangs takes only this process down (the oracle classifies it).

    run_child.py JOB.pkl OUT.pkl

JOB: {"lib": path, "calls": [(func, [input arrays], [(shape, dtype)])]}.
OUT: {"outputs": {func: [arrays]}, "errors": {func: message}}, written after
every call (a crash in call k leaves the results of calls before it). Each
function is called twice on the same inputs (arguments marked pbc.invariant
keep their packed tiles from the first call); results that differ are an
error.
Outputs start as pbc_lib's sentinels (NaN, 0x5A bytes), so that an element
left unwritten cannot pass for a result.
"""

import os
import pickle
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import pbc_lib  # noqa: E402

def main():
    job_path, out_path = sys.argv[1], sys.argv[2]
    with open(job_path, "rb") as f:
        job = pickle.load(f)
    lib = pbc_lib.Library(job["lib"])
    result = {"outputs": {}, "errors": {}}
    for func, inputs, outs in job["calls"]:
        try:
            got = lib.call(func, inputs, outs, check_written=False, check_inputs=True)
            # Again on the same inputs: the second call reuses what the
            # first packed from arguments marked pbc.invariant.
            again = lib.call(func, inputs, outs, check_written=False, check_inputs=True)
        except pbc_lib.CallError as e:
            result["errors"][func] = str(e)
        else:
            differ = [k for k, (a, b) in enumerate(zip(got, again))
                      if np.array(a).tobytes() != np.array(b).tobytes()]
            if differ:
                result["errors"][func] = "the second call's result %d differs from the first's" % differ[0]
            else:
                result["outputs"][func] = [np.array(g) for g in again]
        with open(out_path + ".tmp", "wb") as f:
            pickle.dump(result, f)
        os.replace(out_path + ".tmp", out_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
