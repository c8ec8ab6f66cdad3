"""A PyTorch graph lowered whole by torch-mlir's FX importer (PyPI
torch-mlir: torch.export here, then torch-mlir's decompositions, its torch
dialect and its linalg-on-tensors pipeline in a helper process, which a
crash of torch-mlir's cannot take down), compiled by pbc and called on the
tensors' memory.

The bridge's own lowering (aten.py) goes first: its convolutions and
pooling are emitted channels-last with batch norms folded, which is what
pbc's kernels want. A graph it cannot lower whole (an op without a
lowering, a segment that does not compile) is tried here next, and kept if
torch-mlir lowers all of it and pbc compiles the result; otherwise the
bridge's segments with eager ops stay (see __init__.best_plan)."""

import os
import select
import subprocess
import sys
import tempfile

import torch

from .libpbc import CompileError, Program
from .runtime import rng_kept

# The element type pbc's signature gives for each PyTorch dtype: MLIR's
# integers are signless (torch-mlir's lowering picks signed or unsigned
# operations), so uint8 data is passed as i8.
_ELEM = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
         torch.bfloat16: "bf16", torch.int64: "i64", torch.int32: "i32", torch.int16: "i16",
         torch.int8: "i8", torch.uint8: "i8", torch.bool: "i1"}


class NotLowered(Exception):
    """torch-mlir could not lower the graph, or pbc could not compile it."""


class _Graph(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _flatten(out):
    if isinstance(out, torch.Tensor):
        return [out], lambda ts: ts[0]
    if isinstance(out, (tuple, list)) and all(isinstance(t, torch.Tensor) for t in out):
        kind = type(out)
        return list(out), lambda ts: kind(ts)
    raise NotLowered("results other than tensors")


def _first_line(e):
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def _outside_fake_mode():
    """torch.export makes its own fake tensors: called from a torch.compile
    backend, Dynamo's tracing context (and its FakeTensorMode) is still
    active, and export would take that mode and refuse the graph's real
    parameters ("Please convert all Tensors to FakeTensors first"); both
    are set aside for the export."""
    import contextlib
    stack = contextlib.ExitStack()
    try:
        from torch._subclasses.fake_tensor import unset_fake_temporarily
        from torch._guards import tracing
    except ImportError:  # PyTorch without fake tensors: nothing to set aside
        return stack
    stack.enter_context(tracing(None))
    stack.enter_context(unset_fake_temporarily())
    return stack


_helper = None
# How long torch-mlir may take to lower one graph (seconds): on some whole
# models its decompositions ran for many minutes and over 10 GB; past this
# the bridge's plan, with its eager ops, is kept.
TORCH_MLIR_TIMEOUT = float(os.environ.get("PBC_TORCH_MLIR_TIMEOUT", "120"))


def _lower(ep):
    """The exported program as linalg text, lowered by torch-mlir in the
    helper process (torch_mlir_helper.py), started once and restarted after
    a crash."""
    global _helper
    with tempfile.TemporaryDirectory(prefix="pbc-torch-mlir-") as tmp:
        src, dst = os.path.join(tmp, "graph.pt2"), os.path.join(tmp, "graph.mlir")
        try:
            torch.export.save(ep, src)
        except Exception as e:
            raise NotLowered("torch.export.save: %s" % _first_line(e))
        if _helper is None or _helper.poll() is not None:
            _helper = subprocess.Popen(
                [sys.executable, os.path.join(os.path.dirname(__file__), "torch_mlir_helper.py")],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                text=True)
        try:
            _helper.stdin.write("%s\t%s\n" % (src, dst))
            _helper.stdin.flush()
            ready, _, _ = select.select([_helper.stdout], [], [], TORCH_MLIR_TIMEOUT)
            answer = _helper.stdout.readline() if ready else None
        except OSError:
            answer = ""
        if answer is None:  # torch-mlir is still at it: given up, the op stays eager
            _helper.kill()
            _helper.wait()
            _helper = None
            raise NotLowered("torch-mlir did not lower the graph in %g s" % TORCH_MLIR_TIMEOUT)
        if not answer.startswith("pbc-helper "):
            _helper = None
            raise NotLowered("torch-mlir crashed on the graph")
        answer = answer[len("pbc-helper "):].rstrip("\n")
        if answer != "ok":
            raise NotLowered("torch-mlir: %s" % answer[len("error "):])
        with open(dst) as f:
            return f.read()


class TorchMlirGraph:
    """fn(*example_inputs) lowered by torch-mlir and compiled by pbc:
    called like fn on tensors of the example inputs' shapes and types."""

    def __init__(self, fn, example_inputs, target="cpu", chip=None, opt_level=3, disable=None):
        try:
            import torch_mlir  # noqa: F401 (lowered in the helper; checked here)
        except ImportError as e:
            raise NotLowered("torch-mlir is not installed (%s)" % e)
        if not all(isinstance(a, torch.Tensor) for a in example_inputs):
            raise NotLowered("non-tensor inputs")
        with rng_kept(), torch.no_grad():
            outs, self.pack = _flatten(fn(*[a.clone() for a in example_inputs]))
        try:
            with rng_kept(), _outside_fake_mode():
                ep = torch.export.export(_Graph(fn), tuple(a.clone() for a in example_inputs),
                                         strict=False)
        except Exception as e:  # torch.export refused it
            raise NotLowered("torch.export: %s" % _first_line(e))
        self.mlir = _lower(ep)
        try:
            self.program = Program(self.mlir, "<torch-mlir graph>", target, chip, opt_level, disable)
        except CompileError as e:
            raise NotLowered("pbc: %s" % str(e).splitlines()[0])
        e = self.program.entries.get("main")
        if e is None or e.num_inputs != len(example_inputs) or e.num_outputs != len(outs):
            raise NotLowered("the compiled signature does not match the graph's")
        self.entry = e
        self.outputs = []
        for (elem, shape), t in zip(e.args[e.num_inputs:], outs):
            if _ELEM.get(t.dtype) != elem or tuple(shape) != tuple(t.shape):
                raise NotLowered("result %s%s where the graph gives %s%s" % (
                    elem, list(shape), t.dtype, list(t.shape)))
            self.outputs.append((tuple(shape), t.dtype))
        for (elem, shape), t in zip(e.args[:e.num_inputs], example_inputs):
            if _ELEM.get(t.dtype) != elem or tuple(shape) != tuple(t.shape):
                raise NotLowered("input %s%s where the graph takes %s%s" % (
                    elem, list(shape), t.dtype, list(t.shape)))
        self.inputs = [(tuple(t.shape), t.dtype) for t in example_inputs]
        self.fallbacks = []  # as a Plan's: none of its ops runs eagerly

    def __call__(self, *inputs):
        if len(inputs) != len(self.inputs) or any(
                not isinstance(t, torch.Tensor) or t.shape != s or t.dtype != d
                for t, (s, d) in zip(inputs, self.inputs)):
            raise ValueError("pbc: inputs %s; this graph was compiled for %s (make one per "
                             "shape: pbc.jit and the torch.compile backend do)" % (
                                 [("%s%s" % (t.dtype, list(t.shape))) if isinstance(
                                     t, torch.Tensor) else repr(t) for t in inputs],
                                 ["%s%s" % (d, list(s)) for s, d in self.inputs]))
        ins = [t.detach().contiguous() for t in inputs]
        outs = [torch.empty(shape, dtype=dt) for shape, dt in self.outputs]
        self.entry.call([(t.data_ptr(), t.shape) for t in ins + outs])
        return self.pack(outs)
