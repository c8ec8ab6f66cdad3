"""pbc for PyTorch: compile models with one line; the compiler is pbc's C
library (libpbc), this package only captures graphs and writes MLIR.

    import pbc
    fast = pbc.jit(model)                 # or @pbc.jit(target="cpu") on a function
    y = fast(x)                           # traced and compiled on first call per
                                          # input signature, then cached
    torch.compile(model, backend="pbc")   # PyTorch 2.x

Inference only: parameters are read when a signature is first compiled, and
writes into the caller's tensors (x.add_(1) on an input) happen after the
compiled code, eagerly. An ATen op pbc cannot compile runs eagerly between
compiled segments, and a function that cannot be traced (data-dependent
control flow) runs eagerly as a whole, each with a warning that says why.
"""

import warnings

import torch

from .aten import Unsupported
from .libpbc import CompileError
from .openmp import warn_if_two_runtimes
from .runtime import Plan, TraceError

warn_if_two_runtimes()

__all__ = ["jit", "Compiled", "CompileError", "Unsupported", "backend"]


class Compiled:
    """A callable compiled per input signature (shapes, dtypes, non-tensor
    arguments)."""

    def __init__(self, fn, target="cpu", chip=None, opt_level=3, disable=None):
        self.fn, self.target, self.chip = fn, target, chip
        self.opt_level, self.disable = opt_level, disable
        self.plans = {}
        if isinstance(fn, torch.nn.Module):
            fn.eval()

    @staticmethod
    def _key(args):
        return tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else ("py", a)
                     for a in args)

    def plan(self, *args):
        key = self._key(args)
        p = self.plans.get(key)
        if p is None:
            fn = self.fn
            try:
                p = Plan(lambda *a: fn(*a), args, self.target, self.chip, self.opt_level,
                         self.disable)
            except TraceError as e:
                warnings.warn("pbc: %s runs eagerly: it cannot be traced into one graph (%s)"
                              % (getattr(fn, "__name__", type(fn).__name__), e), stacklevel=3)
                p = fn
            self.plans[key] = p
        return p

    def __call__(self, *args):
        return self.plan(*args)(*args)


def jit(fn=None, *, target="cpu", chip=None, opt_level=3, disable=None):
    """`pbc.jit(model_or_function)` or `@pbc.jit(target="cpu")`."""
    def wrap(f):
        return Compiled(f, target, chip, opt_level, disable)
    return wrap(fn) if fn is not None else wrap


def backend(gm, example_inputs, target="cpu"):
    """A torch.compile backend: compiles the graph Dynamo hands over (or
    leaves it to run eagerly, warned, if it cannot be traced again).
    Dynamo passes parameters and buffers as graph inputs and tags them
    static: they become the compiled graph's constants (read, not copied,
    when it compiles; batch norms fold into convolutions), so only the
    other inputs are passed at run time. Inference only, as for pbc.jit."""
    example_inputs = list(example_inputs)
    static = {i: t for i, t in enumerate(example_inputs)
              if isinstance(t, torch.Tensor) and getattr(t, "_dynamo_static_input_type", None)}
    dynamic = [i for i in range(len(example_inputs)) if i not in static]

    def graph(*args):
        full = [None] * len(example_inputs)
        for i, a in zip(dynamic, args):
            full[i] = a
        for i, t in static.items():
            full[i] = t
        return gm(*full)

    try:
        plan = Plan(graph, [example_inputs[i] for i in dynamic], target)
    except TraceError as e:
        warnings.warn("pbc: a graph runs eagerly: it cannot be traced (%s)" % e, stacklevel=2)
        return gm.forward
    if not static:
        return plan

    def run(*args):
        return plan(*[args[i] for i in dynamic])
    run.plan = plan
    return run


def _register_dynamo_backend():
    try:
        from torch._dynamo import register_backend
    except ImportError:  # PyTorch 1.x: no torch.compile
        return False
    register_backend(name="pbc")(backend)
    return True


HAS_TORCH_COMPILE = _register_dynamo_backend()
