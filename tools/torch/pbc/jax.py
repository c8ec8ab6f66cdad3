"""pbc for JAX: `pbc.jax.jit(f)` has jax.jit's call shape.

    import pbc.jax
    fast = pbc.jax.jit(f)        # or @pbc.jax.jit(static_argnums=(1,))
    y = fast(x, w)               # jax.Array results (as_numpy=True: numpy)

Per input signature (shapes, dtypes, pytree structure, static arguments):
JAX lowers f to StableHLO (its own export, jax.jit(f).lower(...)); CHLO
ops (chlo.erfc from jax.nn.gelu, ...) are legalized to StableHLO by
iree-opt, StableHLO goes to linalg by torch-mlir-opt (both from PyPI, see
tools.py), MLIR's own mlir-opt folds unit dimensions, and pbc compiles
the result. The compiled code runs on the
arrays' host memory. A program exported with symbolic shapes
(jax.export, "b, ..." specs) runs through `pbc.jax.jit(exported.call)`:
compiled per signature like any function, its shapes refined by JAX for
the arguments' sizes. A program the converters or pbc reject raises
CompileError with their diagnostics: nothing falls back to XLA silently.
"""

import jax
import numpy as np

from . import tools
from .arrays import ArrayEntry

__all__ = ["jit", "to_linalg"]


def to_linalg(stablehlo_text, what="the program"):
    """StableHLO (with CHLO) text -> linalg-on-tensors text."""
    text = tools.run("iree-opt", ["--chlo-legalize-to-stablehlo"], stablehlo_text, what)
    text = tools.run("torch-mlir-opt", ["--inline", "--stablehlo-legalize-to-linalg",
                                        "--symbol-dce", "--canonicalize"], text, what)
    # dot_general of a (1, N, K) activation by a (K, M) weight arrives as a
    # 4-loop generic contraction; without its unit dimension it is a
    # matmul-shaped one, which pbc tiles as a matmul (a ViT block ran 2.4x
    # faster). (MLIR 22's --linalg-specialize-generic-ops is not used: it
    # turns a two-batch-dim contraction into an invalid batch_matmul.)
    return tools.run("mlir-opt", ["--linalg-fold-unit-extent-dims", "--canonicalize"], text, what)


def _stablehlo_text(lowered):
    """The lowered program's StableHLO; one that calls a program exported
    with symbolic shapes (jax.export's "b, ..." specs: jax.jit(exp.call))
    keeps them inside, behind casts of the concrete arguments, which JAX's
    own shape refinement resolves for these arguments' sizes (the step
    XLA runs when it compiles such a call)."""
    text = lowered.as_text()
    if "tensor<?" not in text and "x?x" not in text:
        return text
    from jax._src.interpreters import mlir as jax_mlir  # JAX's refinement (no public API)
    return str(jax_mlir.refine_polymorphic_shapes(lowered.compiler_ir("stablehlo")))


class Jitted:
    def __init__(self, fn, static_argnums=(), target="cpu", chip=None, opt_level=3,
                 disable=None, as_numpy=False):
        self.fn = fn
        self.static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        self.options = dict(target=target, chip=chip, opt_level=opt_level, disable=disable)
        self.as_numpy = as_numpy
        self.jitted = jax.jit(fn, static_argnums=self.static, keep_unused=True)
        self.compiled = {}  # signature -> (ArrayEntry, out_tree)
        self.mlir = {}      # signature -> the linalg text pbc compiled

    def _split(self, args):
        n = len(args)
        static = tuple((i, args[i]) for i in sorted(s % n for s in self.static))
        dynamic = [a for i, a in enumerate(args) if i not in dict(static)]
        leaves, tree = jax.tree_util.tree_flatten(dynamic)
        return static, leaves, tree

    def _signature(self, static, leaves, tree):
        sig = tuple((np.shape(x), str(getattr(x, "dtype", type(x).__name__))) for x in leaves)
        return (static, sig, tree)

    def lower(self, *args):
        """The linalg text pbc compiles for these arguments."""
        return to_linalg(_stablehlo_text(self.jitted.lower(*args)), self._name())

    def _name(self):
        return "<jax %s>" % getattr(self.fn, "__name__", "function")

    def __call__(self, *args):
        static, leaves, tree = self._split(args)
        key = self._signature(static, leaves, tree)
        hit = self.compiled.get(key)
        if hit is None:
            lowered = self.jitted.lower(*args)
            text = to_linalg(_stablehlo_text(lowered), self._name())
            hit = (ArrayEntry(text, self._name(), "main", **self.options), lowered.out_tree)
            self.compiled[key], self.mlir[key] = hit, text
        entry, out_tree = hit
        arrays = [np.asarray(x, dtype=dt) for x, (dt, _) in zip(leaves, entry.inputs)]
        outs = entry(*arrays)
        if not self.as_numpy:
            outs = [jax.numpy.asarray(o) for o in outs]
        return jax.tree_util.tree_unflatten(out_tree, outs)


def jit(fn=None, *, static_argnums=(), target="cpu", chip=None, opt_level=3, disable=None,
        as_numpy=False):
    """`pbc.jax.jit(f)` or `@pbc.jax.jit(static_argnums=...)`."""
    def wrap(f):
        return Jitted(f, static_argnums, target, chip, opt_level, disable, as_numpy)
    return wrap(fn) if fn is not None else wrap
