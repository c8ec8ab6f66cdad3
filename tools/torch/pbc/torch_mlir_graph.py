"""A PyTorch graph lowered whole by torch-mlir's FX importer (PyPI
torch-mlir: torch.export, torch-mlir's decompositions, its torch dialect
and its linalg-on-tensors pipeline), compiled by pbc and called on the
tensors' memory.

The bridge's own lowering (aten.py) goes first: its convolutions and
pooling are emitted channels-last with batch norms folded, which is what
pbc's kernels want. A graph it cannot lower whole (an op without a
lowering, a segment that does not compile) is tried here next, and kept if
torch-mlir lowers all of it and pbc compiles the result; otherwise the
bridge's segments with eager ops stay (see __init__.best_plan)."""

import ctypes

import torch

from .libpbc import CompileError, Program, descriptor
from .runtime import _rng_kept

_TORCH_DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16,
                 "bf16": torch.bfloat16, "i64": torch.int64, "i32": torch.int32,
                 "i16": torch.int16, "i8": torch.int8, "ui8": torch.uint8, "i1": torch.bool}


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


class TorchMlirGraph:
    """fn(*example_inputs) lowered by torch-mlir and compiled by pbc:
    called like fn on tensors of the example inputs' shapes and types."""

    def __init__(self, fn, example_inputs, target="cpu", chip=None, opt_level=3, disable=None):
        try:
            import torch_mlir.fx as tmfx
        except ImportError as e:
            raise NotLowered("torch-mlir is not installed (%s)" % e)
        if not all(isinstance(a, torch.Tensor) for a in example_inputs):
            raise NotLowered("non-tensor inputs")
        with _rng_kept(), torch.no_grad():
            outs, self.pack = _flatten(fn(*[a.clone() for a in example_inputs]))
        try:
            with _rng_kept():
                module = tmfx.export_and_import(_Graph(fn), *[a.clone() for a in example_inputs],
                                                output_type="linalg-on-tensors", func_name="main")
        except Exception as e:  # torch.export or torch-mlir's lowering refused it
            raise NotLowered("torch-mlir: %s" % (str(e).strip().splitlines() or [type(e).__name__])[0])
        self.mlir = str(module)
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
            dt = _TORCH_DTYPES.get(elem)
            if dt != t.dtype or tuple(shape) != tuple(t.shape):
                raise NotLowered("result %s%s where the graph gives %s%s" % (
                    elem, list(shape), t.dtype, list(t.shape)))
            self.outputs.append((tuple(shape), dt))
        for (elem, shape), t in zip(e.args[:e.num_inputs], example_inputs):
            if _TORCH_DTYPES.get(elem) != t.dtype or tuple(shape) != tuple(t.shape):
                raise NotLowered("input %s%s where the graph takes %s%s" % (
                    elem, list(shape), t.dtype, list(t.shape)))
        self.fallbacks, self.eager_segments = [], []

    def __call__(self, *inputs):
        keep, ptrs = [], []
        for t in inputs:
            t = t.detach().contiguous()
            keep.append(t)
        outs = [torch.empty(shape, dtype=dt) for shape, dt in self.outputs]
        for t in keep[:] + outs:
            d = descriptor(t.data_ptr(), tuple(t.shape))
            keep.append(d)
            ptrs.append(ctypes.addressof(d))
        self.entry.function(*ptrs)
        return self.pack(outs)
