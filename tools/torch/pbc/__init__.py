"""pbc for PyTorch: compile models with one line; the compiler is pbc's C
library (libpbc), this package only captures graphs and writes MLIR.

    import pbc
    fast = pbc.jit(model)                 # or @pbc.jit(target="cpu") on a function
    y = fast(x)                           # traced and compiled on first call per
                                          # input signature, then cached
    torch.compile(model, backend="pbc")   # PyTorch 2.x
    pbc.export(torch.export.export(model, (x,)), "libmodel")  # .so + .h

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
from .torch_mlir_graph import NotLowered, TorchMlirGraph
from .export import export

warn_if_two_runtimes()

__all__ = ["jit", "Compiled", "CompileError", "Unsupported", "backend", "best_plan", "TorchMlirGraph",
           "export", "recording_backend"]


LOWERINGS = ("auto", "bridge", "torch-mlir")
# lowering="auto" hands a graph to torch-mlir when at least this share of
# its ops would run eagerly under the bridge's plan.
TORCH_MLIR_EAGER_FRACTION = 0.1


def best_plan(fn, inputs, target="cpu", chip=None, opt_level=3, disable=None, lowering="auto"):
    """lowering="auto": the bridge's own plan if it compiles every op (or
    all but a few: TORCH_MLIR_EAGER_FRACTION); else the graph whole
    through torch-mlir's FX importer if that lowers and compiles it (and
    the graph writes into none of its inputs, draws no random numbers and
    divides no 64-bit integers); else the bridge's plan, with its eager ops
    (whose warnings are given then). "bridge": the bridge's plan only;
    "torch-mlir": torch-mlir's, raising NotLowered if it cannot."""
    if lowering not in LOWERINGS:
        raise ValueError("pbc: lowering must be one of %s" % (LOWERINGS,))
    if lowering == "torch-mlir":
        return TorchMlirGraph(fn, inputs, target, chip, opt_level, disable)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = Plan(fn, inputs, target, chip, opt_level, disable)
    # torch-mlir's random ops draw from their own generator, and it divides
    # 64-bit integers through f64 (wrong beyond 2**53): such graphs keep
    # those ops eager. A graph the bridge compiles all but a few ops of
    # stays with it too: on whole models torch-mlir's linalg ran up to 1.1x
    # slower and compiled 10-15x longer (tools/bench/lowering_compare.py).
    if lowering == "auto" and plan.eager_fraction >= TORCH_MLIR_EAGER_FRACTION \
            and not plan.mutates_inputs and not plan.has_random_ops \
            and not plan.int64_divisions:
        try:
            return TorchMlirGraph(fn, inputs, target, chip, opt_level, disable)
        except NotLowered as e:
            plan.torch_mlir_refusal = str(e)
    for w in caught:
        warnings.warn(w.message, w.category, stacklevel=3)
    return plan


def _stale(plan):
    """True for a bridge Plan whose parameters were written since it was
    made (other plans — torch-mlir's, eager fallbacks — have no watch)."""
    return isinstance(plan, Plan) and plan.stale()


class Compiled:
    """A callable compiled per input signature (shapes, dtypes, non-tensor
    arguments)."""

    def __init__(self, fn, target="cpu", chip=None, opt_level=3, disable=None, lowering="auto"):
        self.fn, self.target, self.chip = fn, target, chip
        self.opt_level, self.disable, self.lowering = opt_level, disable, lowering
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
        if p is not None and _stale(p):
            p = None  # a parameter was written: traced and compiled again
        if p is None:
            fn = self.fn
            try:
                p = best_plan(lambda *a: fn(*a), args, self.target, self.chip,
                              self.opt_level, self.disable, self.lowering)
            except TraceError as e:
                warnings.warn("pbc: %s runs eagerly: it cannot be traced into one graph (%s)"
                              % (getattr(fn, "__name__", type(fn).__name__), e), stacklevel=3)
                p = fn
            self.plans[key] = p
        return p

    def __call__(self, *args):
        return self.plan(*args)(*args)


def jit(fn=None, *, target="cpu", chip=None, opt_level=3, disable=None, lowering="auto"):
    """`pbc.jit(model_or_function)` or `@pbc.jit(target="cpu")`; lowering:
    see best_plan."""
    def wrap(f):
        return Compiled(f, target, chip, opt_level, disable, lowering)
    return wrap(fn) if fn is not None else wrap


def backend(gm, example_inputs, target="cpu"):
    """A torch.compile backend: compiles the graph Dynamo hands over (or
    leaves it to run eagerly, warned, if it cannot be traced again).
    Dynamo passes parameters and buffers as graph inputs and tags them
    static: they become the compiled graph's constants (read, not copied,
    when it compiles; batch norms fold into convolutions), so only the
    other inputs are passed at run time; one written in place afterwards
    has the graph traced and compiled again (Plan.stale). Inference only,
    as for pbc.jit."""
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

    def make_plan():
        return best_plan(graph, [example_inputs[i] for i in dynamic], target)

    try:
        plan = make_plan()
    except TraceError as e:
        warnings.warn("pbc: a graph runs eagerly: it cannot be traced (%s)" % e, stacklevel=2)
        return gm.forward

    def run(*args):
        if _stale(run.plan):
            run.plan = make_plan()  # a parameter was written: traced and compiled again
        return run.plan(*[args[i] for i in dynamic])
    run.plan = plan
    return run


def recording_backend(plans, target="cpu"):
    """pbc.backend that also appends each graph's plan to `plans` (the
    bridge's Plan, a TorchMlirGraph, or the graph's forward if it ran
    eagerly): for tests and tools that check what was compiled."""
    def compile_graph(gm, example_inputs):
        compiled = backend(gm, example_inputs, target)
        plans.append(getattr(compiled, "plan", compiled))
        return compiled
    return compile_graph


def _register_dynamo_backend():
    try:
        from torch._dynamo import register_backend
    except ImportError:  # PyTorch 1.x: no torch.compile
        return False
    register_backend(name="pbc")(backend)
    return True


HAS_TORCH_COMPILE = _register_dynamo_backend()
