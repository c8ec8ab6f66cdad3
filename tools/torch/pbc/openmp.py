"""One OpenMP runtime per process.

pbc's cpu code runs on LLVM's OpenMP runtime (libomp); Debian's PyTorch runs
its parallel ops on GNU's (libgomp). In one process, each runtime's idle
threads spin for the cores while the other one's work on them: a
ConvTranspose2d (256 -> 128, 14x14) through the bridge took 7.2 ms per call
against 0.26 ms with one runtime. Preloading libomp makes PyTorch's OpenMP
calls (GOMP_*, omp_*) resolve to it too: libomp implements libgomp's ABI,
as Intel's OpenMP does in PyTorch's own tuning guide (LD_PRELOAD=libiomp5).
"""

import os
import re
import sys
import warnings

LIBOMP = "/usr/lib/llvm-22/lib/libomp.so.5"  # what the cpu plugin links


def _mapped():
    try:  # torch is imported first, so libgomp is mapped by now if it uses it
        with open("/proc/self/maps") as f:
            return f.read()
    except OSError:
        return None


def _preloaded():
    return "libomp" in os.environ.get("LD_PRELOAD", "")


def shared_runtime():
    """True unless libgomp is loaded here and libomp is not both preloaded
    and mapped (a preload that names a missing file loads nothing)."""
    maps = _mapped()
    if maps is None or not re.search(r"/libgomp[.-]", maps):
        return True
    return _preloaded() and "/libomp.so" in maps


def restart_with_libomp():
    """For scripts, before they import torch: run this process again with
    libomp preloaded (returns if it already is, or if libomp is missing)."""
    if not _preloaded() and os.path.exists(LIBOMP):
        old = os.environ.get("LD_PRELOAD")
        os.environ["LD_PRELOAD"] = LIBOMP + (":" + old if old else "")
        os.execv(sys.executable, [sys.executable] + sys.argv)


def warn_if_two_runtimes():
    if not shared_runtime():
        warnings.warn(
            "pbc: PyTorch's OpenMP runtime (libgomp) is loaded and pbc's code uses LLVM's "
            "(libomp); their idle threads compete for the cores (a small op ran 27x "
            "slower here). Start Python with LD_PRELOAD=%s so both use libomp." % LIBOMP,
            RuntimeWarning, stacklevel=3)
