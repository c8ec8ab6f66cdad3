"""A compiled MLIR entry point called on numpy arrays: what the JAX and
ONNX front ends share. The arrays are passed as memref descriptors of their
own (C-contiguous) memory; results are fresh numpy arrays of the types the
entry declares."""

import numpy as np

from .libpbc import Program

_DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i64": np.int64,
           "i32": np.int32, "i16": np.int16, "i8": np.int8, "ui8": np.uint8, "i1": np.bool_}


def dtype_of(elem):
    dt = _DTYPES.get(elem)
    if dt is None:
        raise TypeError("pbc: no numpy type for element type %s" % elem)
    return np.dtype(dt)


class ArrayEntry:
    """entry(*arrays) -> tuple of numpy arrays; arguments are checked
    against the compiled signature (element type and shape) first."""

    def __init__(self, text, name, entry=None, target="cpu", chip=None, opt_level=3,
                 disable=None):
        self.program = Program(text, name, target, chip, opt_level, disable)
        if entry is None:
            if len(self.program.entries) != 1:
                raise ValueError("pbc: %s has %d entry points; name one" % (
                    name, len(self.program.entries)))
            entry = next(iter(self.program.entries))
        self.entry = self.program.entries[entry]
        e = self.entry
        self.inputs = [(dtype_of(el), shape) for el, shape in e.args[:e.num_inputs]]
        self.outputs = [(dtype_of(el), shape) for el, shape in e.args[e.num_inputs:]]

    def __call__(self, *arrays):
        if len(arrays) != len(self.inputs):
            raise TypeError("pbc: %s takes %d arrays, got %d" % (
                self.entry.name, len(self.inputs), len(arrays)))
        ins = []
        for i, (a, (dt, shape)) in enumerate(zip(arrays, self.inputs)):
            a = np.ascontiguousarray(a)
            if a.dtype != dt or tuple(a.shape) != tuple(shape):
                raise TypeError("pbc: argument %d is %s%s, the compiled code takes %s%s" % (
                    i, a.dtype, list(a.shape), dt, list(shape)))
            ins.append(a)
        outs = [np.empty(shape, dt) for dt, shape in self.outputs]
        self.entry.call([(a.ctypes.data, a.shape) for a in ins + outs])
        return tuple(outs)
