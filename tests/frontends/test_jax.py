"""pbc.jax.jit against jax.jit on fresh random inputs and weights: a
ResNet-style CNN (NHWC convolutions with strides and padding, inference
batch norm, ReLU, residual adds, max pooling, global average pooling, a
dense head) and a ViT-style encoder block (layer norm, QKV projection,
multi-head softmax attention, exact GELU through chlo.erfc, residuals),
plus pytrees, static arguments and signatures, sizes that change, and a
program exported with a symbolic batch. Runs in the frontends
Python environment (tools/python-env.sh)."""

import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import pbc.jax as pjax


def key():
    s = int(os.environ.get("PBC_TEST_SEED", time.time_ns() % 2**31))
    print("seed %d (PBC_TEST_SEED=%d reproduces)" % (s, s))
    return jax.random.PRNGKey(s)


def close(got, want, what, rtol=1e-4):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert np.isfinite(got).all(), "%s: non-finite elements" % what
    scale = np.abs(want).max()
    err = np.abs(got - want).max()
    print("%s: max abs err %.3g (output magnitude %.3g)" % (what, err, scale))
    assert err <= rtol * scale + 1e-6, "%s: error %.3g" % (what, err)


def conv(x, w, stride=1, pad=1):
    return lax.conv_general_dilated(x, w, (stride, stride), [(pad, pad), (pad, pad)],
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"))


def batch_norm(x, p):
    return (x - p["mean"]) * lax.rsqrt(p["var"] + 1e-5) * p["gamma"] + p["beta"]


def cnn_params(k, c_in=3, widths=(16, 32), classes=10):
    ks = iter(jax.random.split(k, 64))
    n = lambda *s: jax.random.normal(next(ks), s) * (2.0 / np.prod(s[:-1])) ** 0.5
    bn = lambda c: {"mean": jax.random.normal(next(ks), (c,)) * 0.1,
                    "var": jax.random.uniform(next(ks), (c,), minval=0.5, maxval=1.5),
                    "gamma": jax.random.uniform(next(ks), (c,), minval=0.5, maxval=1.5),
                    "beta": jax.random.normal(next(ks), (c,)) * 0.1}
    p = {"stem": n(3, 3, c_in, widths[0]), "stem_bn": bn(widths[0]), "blocks": []}
    c = widths[0]
    for wdt in widths:
        stride = 1 if wdt == c else 2
        blk = {"w1": n(3, 3, c, wdt), "bn1": bn(wdt), "w2": n(3, 3, wdt, wdt), "bn2": bn(wdt)}
        if stride != 1:
            blk["proj"] = n(1, 1, c, wdt)
        p["blocks"].append(blk)
        c = wdt
    p["fc"] = n(c, classes)
    p["fc_b"] = jax.random.normal(next(ks), (classes,)) * 0.1
    return p


def cnn(params, x):
    y = jax.nn.relu(batch_norm(conv(x, params["stem"], 2), params["stem_bn"]))
    y = lax.reduce_window(y, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1),
                          [(0, 0), (1, 1), (1, 1), (0, 0)])
    for b in params["blocks"]:
        s = 2 if "proj" in b else 1  # a projected shortcut halves the map
        h = jax.nn.relu(batch_norm(conv(y, b["w1"], s), b["bn1"]))
        h = batch_norm(conv(h, b["w2"]), b["bn2"])
        short = conv(y, b["proj"], s, 0) if "proj" in b else y
        y = jax.nn.relu(h + short)
    return jnp.mean(y, axis=(1, 2)) @ params["fc"] + params["fc_b"]


def layer_norm(x, g, b):
    m = jnp.mean(x, -1, keepdims=True)
    v = jnp.mean((x - m) ** 2, -1, keepdims=True)
    return (x - m) * lax.rsqrt(v + 1e-6) * g + b


def vit_block(p, x, heads):
    b, n, d = x.shape
    h = layer_norm(x, p["ln1_g"], p["ln1_b"])
    qkv = (h @ p["qkv"] + p["qkv_b"]).reshape(b, n, 3, heads, d // heads)
    q, k, v = [jnp.transpose(qkv[:, :, i], (0, 2, 1, 3)) for i in range(3)]
    att = jax.nn.softmax(q @ jnp.swapaxes(k, -1, -2) / np.sqrt(d // heads), axis=-1)
    o = jnp.transpose(att @ v, (0, 2, 1, 3)).reshape(b, n, d)
    x = x + o @ p["proj"] + p["proj_b"]
    h = layer_norm(x, p["ln2_g"], p["ln2_b"])
    h = jax.nn.gelu(h @ p["fc1"] + p["fc1_b"], approximate=False)
    return x + h @ p["fc2"] + p["fc2_b"]


def vit_params(k, d, mlp):
    ks = iter(jax.random.split(k, 16))
    n = lambda *s: jax.random.normal(next(ks), s) * s[0] ** -0.5
    return {"ln1_g": 1 + 0.1 * n(d), "ln1_b": 0.1 * n(d), "qkv": n(d, 3 * d), "qkv_b": 0.1 * n(3 * d),
            "proj": n(d, d), "proj_b": 0.1 * n(d), "ln2_g": 1 + 0.1 * n(d), "ln2_b": 0.1 * n(d),
            "fc1": n(d, mlp), "fc1_b": 0.1 * n(mlp), "fc2": n(mlp, d), "fc2_b": 0.1 * n(d)}


def test_cnn(k):
    k1, k2, k3 = jax.random.split(k, 3)
    params = cnn_params(k1)
    fast = pjax.jit(cnn)
    for shape in [(2, 32, 32, 3), (1, 29, 29, 3)]:
        x = jax.random.normal(k2, shape)
        close(fast(params, x), jax.jit(cnn)(params, x), "cnn %s" % (shape,))
        k2 = k3
    assert len(fast.compiled) == 2, "one compile per input signature"
    text = next(iter(fast.mlir.values()))
    assert "linalg.conv_2d_nhwc_hwcf" in text, "the convolutions reached pbc as linalg"


def test_vit_block(k):
    k1, k2 = jax.random.split(k)
    params = vit_params(k1, 64, 128)
    fast = pjax.jit(vit_block, static_argnums=2)
    x = jax.random.normal(k2, (2, 17, 64))
    close(fast(params, x, 4), jax.jit(vit_block, static_argnums=2)(params, x, 4), "vit block")
    assert "chlo" not in next(iter(fast.mlir.values()))


def test_pytrees_and_types(k):
    """Several results in a pytree, integer and boolean results, numpy out."""
    def f(x, i):
        return {"sum": x.sum(0), "pos": x > 0, "idx": i * 2 + 1, "pair": (x * 2.0, -x)}

    x = jax.random.normal(k, (5, 6))
    i = jnp.arange(7, dtype=jnp.int32)
    got = pjax.jit(f, as_numpy=True)(x, i)
    want = jax.jit(f)(x, i)
    assert isinstance(got["sum"], np.ndarray)
    for path in ("sum", "pos", "idx"):
        assert got[path].dtype == np.asarray(want[path]).dtype, (path, got[path].dtype)
        close(np.asarray(got[path], np.float32), np.asarray(want[path], np.float32), path)
    close(got["pair"][1], want["pair"][1], "pair")


def test_wrong_arguments_rejected(k):
    fast = pjax.jit(lambda x: x * 2.0)
    fast(jnp.ones((3,)))
    entry, _ = next(iter(fast.compiled.values()))
    try:
        entry(np.ones((4,), np.float32))
    except TypeError as e:
        assert "argument 0" in str(e), e
    else:
        raise AssertionError("a wrongly shaped argument was accepted")


def test_sizes_that_change(k):
    """One pbc.jax.jit function called at several batch sizes: each result
    has the size it is called with and matches jax.jit's (one compile per
    signature, as jax.jit's own)."""
    def f(x, w):
        return jax.nn.relu(x @ w + 1.0).sum(-1)
    w = jax.random.normal(k, (8, 4))
    fast = pjax.jit(f)
    for i, b in enumerate((2, 3, 5, 1, 3)):
        x = jax.random.normal(jax.random.fold_in(k, i), (b, 8))
        close(fast(x, w), jax.jit(f)(x, w), "pbc.jax.jit at batch %d" % b)
    assert len(fast.compiled) == 4, len(fast.compiled)
    # A program exported with a symbolic batch (jax.export's "b, ..."
    # spec), called through pbc at several sizes.
    from jax import export
    b, = export.symbolic_shape("b")
    exp = export.export(jax.jit(f))(jax.ShapeDtypeStruct((b, 8), jnp.float32),
                                    jax.ShapeDtypeStruct((8, 4), jnp.float32))
    fast = pjax.jit(exp.call)
    for i, n in enumerate((1, 6, 11)):
        x = jax.random.normal(jax.random.fold_in(k, 10 + i), (n, 8))
        close(fast(x, w), exp.call(x, w), "pbc.jax.jit of a symbolic export at batch %d" % n)


if __name__ == "__main__":
    k = key()
    for name, fn in list(globals().items()):
        if name.startswith("test_"):
            print("--", name)
            k, sub = jax.random.split(k)
            fn(sub)
    print("PASS")
