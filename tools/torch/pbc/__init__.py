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


def _symbolic(x):
    """Whether a graph input Dynamo hands over has symbolic sizes (a SymInt,
    or a tensor whose shape has one): automatic dynamic shapes after a
    second size, mark_dynamic, or torch.compile(dynamic=True)."""
    if isinstance(x, torch.SymInt):
        return True
    return isinstance(x, torch.Tensor) and any(isinstance(d, torch.SymInt) for d in x.shape)


def backend(gm, example_inputs, target="cpu", on_plan=None):
    """A torch.compile backend: compiles the graph Dynamo hands over (or
    leaves it to run eagerly, warned, if it cannot be traced again).
    Dynamo passes parameters and buffers as graph inputs and tags them
    static: they become the compiled graph's constants (read, not copied,
    when it compiles; batch norms fold into convolutions), so only the
    other inputs are passed at run time; one written in place afterwards
    has the graph traced and compiled again (Plan.stale). Dynamo calls one
    graph for each instance of a module class whose code it inlined (a
    model's repeated blocks), with that instance's parameters: a plan is
    made per set of parameters. Inference only, as for pbc.jit.

    pbc compiles static shapes: a plan serves the input shapes (and Python
    values) it was made for, and the backend keeps one plan per distinct
    set, made when first called with it. A graph with symbolic sizes
    (Dynamo's automatic dynamic shapes, mark_dynamic, dynamic=True) is
    therefore compiled per size, said once as a warning; the kernels of
    each compile come from the kernel cache where they repeat. on_plan(plan)
    is called with each plan made (recording_backend)."""
    example_inputs = list(example_inputs)
    static_at = [i for i, t in enumerate(example_inputs)
                 if isinstance(t, torch.Tensor) and getattr(t, "_dynamo_static_input_type", None)]
    dynamic = [i for i in range(len(example_inputs)) if i not in static_at]
    symbolic = any(_symbolic(example_inputs[i]) for i in dynamic)

    def graph_on(statics):
        """The graph with these parameters and buffers (the compiled plan's
        constants) in their positions."""
        def graph(*args):
            full = [None] * len(example_inputs)
            for i, a in zip(dynamic, args):
                full[i] = a
            for i, t in zip(static_at, statics):
                full[i] = t
            return gm(*full)
        return graph

    def make_plan(inputs, statics):
        try:
            plan = best_plan(graph_on(statics), inputs, target)
        except TraceError as e:
            warnings.warn("pbc: a graph runs eagerly: it cannot be traced (%s)" % e, stacklevel=3)
            plan = graph_on(statics)
        if on_plan:
            on_plan(plan)
        return plan

    plans = {}

    def run(*args):
        # Dynamo calls one compiled graph for every module instance of the
        # same code (inlined nn.Modules: a model's repeated blocks), each
        # with its own parameters in the static positions: a plan serves
        # the parameters it was compiled with (they are its constants),
        # keyed by their identity (the plan holds them, so an id is never
        # reused while it lives).
        inputs = [args[i] for i in dynamic]
        statics = [args[i] for i in static_at]
        key = (Compiled._key(inputs), tuple(map(id, statics)))
        plan = plans.get(key)
        if plan is None or _stale(plan):
            if plans and not run.told and any(k[0] != key[0] for k in plans):
                warnings.warn("pbc: a graph is called with other sizes (%s); pbc compiles "
                              "static shapes: one plan per distinct size (kernels cached)"
                              % ", ".join(str(k[0]) for k in key[0] if k[0] != "py"),
                              stacklevel=2)
                run.told = True
            plan = plans[key] = make_plan(inputs, statics)
            run.plan = plan
        return plan(*inputs)

    run.told = symbolic  # a symbolic graph is said to be per size right away
    run.plans = plans
    if symbolic:
        warnings.warn("pbc: a graph with symbolic sizes; pbc compiles static shapes: one plan "
                      "per distinct size, made when first called with it (kernels cached)",
                      stacklevel=2)
        run.plan = None
    else:
        inputs = [example_inputs[i] for i in dynamic]
        statics = [example_inputs[i] for i in static_at]
        try:
            plan = best_plan(graph_on(statics), inputs, target)
        except TraceError as e:
            warnings.warn("pbc: a graph runs eagerly: it cannot be traced (%s)" % e, stacklevel=2)
            return gm.forward
        plans[(Compiled._key(inputs), tuple(map(id, statics)))] = run.plan = plan
        if on_plan:
            on_plan(plan)
    return run


def recording_backend(plans, target="cpu"):
    """pbc.backend that also appends each plan it makes to `plans` (the
    bridge's Plan, a TorchMlirGraph, or the graph's forward if it ran
    eagerly; a graph called at several sizes has one per size): for tests
    and tools that check what was compiled."""
    def compile_graph(gm, example_inputs):
        compiled = backend(gm, example_inputs, target, on_plan=plans.append)
        if not hasattr(compiled, "plan"):  # it runs eagerly
            plans.append(compiled)
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
