#!/usr/bin/python3
"""Compile and run every examples/*.mlir with pbc and compare with numpy.

    /usr/bin/python3 tests/e2e/test_examples.py --pbc PATH [--seed S] [--only NAME]

Each example needs an entry in EXAMPLES below: an input generator (fresh
random, never-zero values) and an independent numpy reference. Each is
compiled twice with a kernel cache of the run's own: the second library's
kernels all come from the cache (no new entries) and must agree too. Prints
`PASS name` / `FAIL name: reason` per example and `N passed, N failed`.
"""

import atexit
import glob
import os
import shutil
import sys
import tempfile

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import pbc_lib  # noqa: E402
from harness import assert_close  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EX_DIR = os.path.join(ROOT, "examples")


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ---------------------------------------------------------------- references
# Each entry: inputs(ctx, arg_shapes) -> list of float32 arrays;
#             ref(*inputs) -> list of float64 outputs; plus check options.

def mlp_inputs(ctx, shapes):
    x, w1, b1, w2, b2 = (ctx.rand(s)[0] for s in shapes)
    # Scale the weights by 1/sqrt(fan_in) so the softmax is not one-hot.
    return [x, w1 / np.float32(16.0), b1, w2 / np.float32(np.sqrt(512.0)), b2]


def mlp_ref(x, w1, b1, w2, b2):
    x, w1, b1, w2, b2 = (a.astype(np.float64) for a in (x, w1, b1, w2, b2))
    h = np.maximum(x @ w1 + b1, 0.0)
    return [softmax(h @ w2 + b2, axis=1)]


def conv_block_inputs(ctx, shapes):
    x, w, b = (ctx.rand(s)[0] for s in shapes)
    return [x, w / np.float32(24.0), b]


def conv_block_ref(x, w, b):
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    win = sliding_window_view(xp, (3, 3), axis=(1, 2))        # n,h,w,c,kh,kw
    y = np.einsum("nhwcij,ijcf->nhwf", win, w.astype(np.float64), optimize=True)
    return [np.maximum(y + b, 0.0)]


def attention_ref(q, k, v):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = np.einsum("hik,hjk->hij", q, k) / np.sqrt(q.shape[-1])
    return [softmax(s, axis=2) @ v]


def layernorm_ref(x, g, b):
    x = x.astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return [(x - mean) / np.sqrt(var + 1e-5) * g + b]


def blur_ref(x):
    taps = np.array([1, 4, 6, 4, 1], dtype=np.float64) / 16.0
    x = x.astype(np.float64)
    w_out = x.shape[2] - 4
    h = sum(taps[j] * x[:, :, j:j + w_out, :] for j in range(5))
    h_out = x.shape[1] - 4
    return [sum(taps[i] * h[:, i:i + h_out, :, :] for i in range(5))]


def default_inputs(ctx, shapes):
    return [ctx.rand(s)[0] for s in shapes]


EXAMPLES = {
    "mlp": dict(inputs=mlp_inputs, ref=mlp_ref, k=1),
    "conv_block": dict(inputs=conv_block_inputs, ref=conv_block_ref, k=576),
    "attention": dict(inputs=default_inputs, ref=attention_ref, k=128),
    "layernorm": dict(inputs=default_inputs, ref=layernorm_ref, k=1),
    "blur": dict(inputs=default_inputs, ref=blur_ref, k=1),
}


# A kernel cache of this run's own (pbc --emit=lib uses one by default).
KERNEL_CACHE = tempfile.mkdtemp(prefix="pbc_e2e_kernels_")
os.environ["PBC_KERNEL_CACHE_DIR"] = KERNEL_CACHE
atexit.register(shutil.rmtree, KERNEL_CACHE, True)


def kernel_entries():
    return sorted(f for f in os.listdir(KERNEL_CACHE) if f.endswith(".o.pbc")) \
        if os.path.isdir(KERNEL_CACHE) else []


def make_test(path):
    stem = os.path.splitext(os.path.basename(path))[0]

    @harness.test("example/" + stem)
    def run(ctx):
        if stem not in EXAMPLES:
            raise AssertionError("no numpy reference for examples/%s.mlir in "
                                 "tests/e2e/test_examples.py" % stem)
        ex = EXAMPLES[stem]
        with open(path) as f:
            text = f.read()
        name, args, results = pbc_lib.signature(text)
        inputs = ex["inputs"](ctx, [s for s, _ in args])
        refs = ex["ref"](*inputs)
        for attempt in ("compiled", "from the kernel cache"):
            before = kernel_entries()
            lib = pbc_lib.compile(path, pbc=ctx.pbc, name=stem)
            try:
                outs = lib.call(name, inputs, results)
            finally:
                lib.close()
            if attempt != "compiled" and kernel_entries() != before:
                raise AssertionError("compiled again, kernels were added to the cache: %s"
                                     % sorted(set(kernel_entries()) - set(before)))
            # On cpu (GPU host code is not cached) the cache must hold kernels,
            # or the second library did not come from it.
            if (attempt != "compiled" and pbc_lib.TARGET_ARGS[:1] == ["--target=cpu"]
                    and pbc_lib.PREBUILT is None and not kernel_entries()):
                raise AssertionError("the kernel cache stayed empty")
            for i, (o, r) in enumerate(zip(outs, refs)):
                assert_close(o, r, np.float32, k=ex["k"], what="result %d (%s)" % (i, attempt))


for _p in sorted(glob.glob(os.path.join(EX_DIR, "*.mlir"))):
    make_test(_p)


if __name__ == "__main__":
    sys.exit(harness.main(__doc__.splitlines()[1]))
