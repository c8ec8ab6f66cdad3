"""Shared test runner for the e2e scripts (test_ops.py, test_examples.py).

Each test is a function `fn(ctx)` registered with `@test("name")`; it raises
(AssertionError, pbc_lib.CompileError, ...) to fail. `ctx.rng` is a numpy
Generator seeded from (run seed, test name), so `--seed S --only NAME`
reproduces a single failing test exactly, random shapes included.
"""

import argparse
import os
import sys
import time
import traceback
import zlib

import numpy as np

import pbc_lib
from pbc_lib import BF16

_tests = []


def test(name):
    def register(fn):
        _tests.append((name, fn))
        return fn
    return register


class Ctx:
    def __init__(self, name, rng, pbc, verbose):
        self.name = name
        self.rng = rng
        self.pbc = pbc
        self.verbose = verbose

    # ---- random data
    def rand(self, shape, dtype=np.float32, lo=0.1, hi=1.0, positive=False):
        """Uniform in ±[lo, hi] (never zero), as `dtype` (bf16: uint16 bits).
        Returns (array passed to the kernel, float32 view of the exact values
        the kernel sees)."""
        shape = tuple(shape)
        mag = self.rng.uniform(lo, hi, size=shape)
        if not positive:
            mag = mag * self.rng.choice([-1.0, 1.0], size=shape)
        return cast(mag.astype(np.float32), dtype)

    # ---- compile + run
    def run(self, mlir_text, inputs, func=None, extra_args=(), out_offset=None):
        """Compile `mlir_text`, call its public function on `inputs` (arrays
        already in the kernel's element types); outputs from the signature
        (placed `out_offset` bytes past a 64-byte boundary, if given)."""
        name, _, results = pbc_lib.signature(mlir_text, func)
        if self.verbose:
            print("---- %s\n%s" % (self.name, mlir_text))
        lib = pbc_lib.compile(mlir_text, pbc=self.pbc, extra_args=extra_args)
        try:
            return lib.call(name, inputs, results, out_offset=out_offset)
        finally:
            lib.close()


def cast(a32, dtype):
    """float32 array -> (kernel array in dtype, float32 of its exact values)."""
    if isinstance(dtype, str) and dtype == BF16:
        b = pbc_lib.f32_to_bf16(a32)
        return b, pbc_lib.bf16_to_f32(b)
    a = np.asarray(a32).astype(dtype)
    return a, a.astype(np.float32)


# Per-dtype tolerances: |got - ref| <= atol + k_atol * k + rtol * |ref|
# where k is the reduction length feeding each output element.
TOL = {
    "f32": dict(rtol=1e-4, atol=1e-5, k_atol=1e-6),
    "f16": dict(rtol=1e-2, atol=1e-2, k_atol=1e-3),
    "bf16": dict(rtol=3e-2, atol=3e-2, k_atol=8e-3),
}


def dtype_key(dtype):
    if isinstance(dtype, str) and dtype == BF16:
        return "bf16"
    return {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16",
            np.dtype(np.float64): "f32"}[np.dtype(dtype)]


def assert_close(got, ref, dtype=np.float32, k=1, what="output", rtol=None, atol=None):
    """Compare a kernel output (in `dtype`) with a float reference."""
    t = TOL[dtype_key(dtype)]
    rtol = t["rtol"] if rtol is None else rtol
    atol = (t["atol"] + t["k_atol"] * k) if atol is None else atol
    g = pbc_lib.to_f32(got, dtype).astype(np.float64)
    r = np.asarray(ref, dtype=np.float64)
    if g.shape != r.shape:
        raise AssertionError("%s: shape %s, expected %s" % (what, g.shape, r.shape))
    with np.errstate(invalid="ignore"):
        err = np.abs(g - r)
        bad = ~((g == r) | (err <= atol + rtol * np.abs(r)))   # NaN counts as bad
    if bad.any():
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        raise AssertionError(
            "%s: %d/%d elements off (rtol %g, atol %g); first at %s: got %r, "
            "expected %r; max abs err %g" % (what, int(bad.sum()), bad.size, rtol,
                                             atol, i, g[i], r[i], float(np.nanmax(err))))


def device_present(target):
    """Whether programs for `target` can run here (its driver loads)."""
    import ctypes
    driver = {"nvgpu": "libcuda.so.1", "amdgpu": "libamdhip64.so"}.get(target)
    if driver is None:
        return True
    if target == "amdgpu" and not os.path.exists("/dev/kfd"):
        return False  # HIP can be installed where no AMD GPU is
    try:
        ctypes.CDLL(driver)
        return True
    except OSError:
        return False


def offline_check(target, chip):
    if target == "nvgpu":
        return pbc_lib.ptxas_check(chip or "sm_80")
    if target == "amdgpu":
        return pbc_lib.amdgpu_check(chip or "gfx90a")
    raise SystemExit("no offline device-code check for target %s" % target)


def main(description):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--pbc", default=pbc_lib.DEFAULT_PBC,
                    help="pbc driver, or a stand-in script named standin.sh")
    ap.add_argument("--seed", type=int, default=None,
                    help="random seed (default: from the clock; always printed)")
    ap.add_argument("--only", action="append", default=[],
                    help="run only tests whose name contains SUBSTRING (repeatable)")
    ap.add_argument("--list", action="store_true", help="list test names and exit")
    ap.add_argument("--target", default="cpu", help="pbc target (default: cpu)")
    ap.add_argument("--chip", default=None, help="chip of the target (default: its default)")
    ap.add_argument("--require-device", action="store_true",
                    help="fail unless the target's device is present (GPU execution tests)")
    ap.add_argument("--record", metavar="DIR",
                    help="compile every program and keep the libraries in DIR for --replay "
                         "on a machine with the device (nothing runs here)")
    ap.add_argument("--replay", metavar="DIR",
                    help="run the libraries --record kept in DIR (same --seed, target and "
                         "chip) instead of compiling: no pbc needed")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="print generated MLIR and tracebacks")
    args = ap.parse_args()

    selected = [(n, f) for n, f in _tests
                if not args.only or any(s in n for s in args.only)]
    if args.list:
        for n, _ in selected:
            print(n)
        return 0
    args.pbc = os.path.abspath(args.pbc)
    if args.record or args.replay:
        if args.seed is None:
            raise SystemExit("--record and --replay need --seed")
        pbc_lib.prebuilt_setup("record" if args.record else "replay",
                               args.record or args.replay, args.pbc, args.target)
    if not args.replay and not (os.path.isfile(args.pbc) and os.access(args.pbc, os.X_OK)):
        print("error: pbc not found or not executable: %s (use --pbc PATH)" % args.pbc)
        print("0 passed, %d failed" % len(selected))
        return 2
    pbc_lib.TARGET_ARGS = ["--target=" + args.target] + (
        ["--chip=" + args.chip] if args.chip else [])
    if args.require_device and not device_present(args.target):
        print("error: --require-device: no %s device on this machine" % args.target)
        print("0 passed, %d failed" % len(selected))
        return 1
    if args.target != "cpu" and not device_present(args.target) and not args.record:
        # No such GPU here: compile everything, check the device code offline.
        pbc_lib.COMPILE_ONLY_CHECK = offline_check(args.target, args.chip)
        print("compile-only: no %s device on this machine (programs are compiled "
              "and their device code checked, not run)" % args.target)
    seed = args.seed if args.seed is not None else int(time.time() * 1000) % (2 ** 31)
    print("seed %d  (reproduce: --seed %d [--only NAME])  pbc: %s" % (seed, seed, args.pbc))
    sys.stdout.flush()

    passed = failed = 0
    for name, fn in selected:
        rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
        ctx = Ctx(name, rng, args.pbc, args.verbose)
        t0 = time.time()
        try:
            fn(ctx)
        except pbc_lib.CompiledOnly as c:
            passed += 1
            print("PASS %s  (compiled only: %s)" % (name, c))
        except Exception as e:  # noqa: BLE001 — any failure is a test failure
            failed += 1
            msg = str(e).strip().replace("\n", "\n    ")
            print("FAIL %s: %s%s" % (name, type(e).__name__ + ": " if
                                     not isinstance(e, AssertionError) else "", msg))
            if args.verbose:
                traceback.print_exc()
        else:
            passed += 1
            print("PASS %s  (%.2fs)" % (name, time.time() - t0) if args.verbose
                  else "PASS %s" % name)
        sys.stdout.flush()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0
