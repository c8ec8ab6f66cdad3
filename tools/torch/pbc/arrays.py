"""A compiled MLIR entry point called on numpy arrays: what the JAX and
ONNX front ends share. The arrays are passed as memref descriptors of their
own (C-contiguous) memory; results are fresh numpy arrays of the types the
entry declares.

An entry whose signature has dynamic sizes (tensor<?x...>, an ONNX model's
symbolic batch or sequence) is compiled once for every size: with libpbc's
batch loop when its program computes each batch element from that element
alone (the signature's -1 sizes are the call's batch), else with symbolic
sizes (sizes -2, -3, ...: one per size symbol; results' sizes are inputs').
A program neither holds for is compiled per distinct input shape, when
first called with it (libpbc caches each compile and the driver its
kernels), and the first such compile says so once, with the reason the one
compile was refused."""

import re
import warnings

import numpy as np

from .libpbc import CompileError, Program, shapes_spec

BATCH = -1  # a signature's size given by the call: libpbc's PBC_ARG_BATCH
# Sizes below it are size symbols (libpbc's PBC_ARG_SYMBOL(s) = -2 - s): one
# call gives every size of one symbol (or of the batch) the same value.

_DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i64": np.int64,
           "i32": np.int32, "i16": np.int16, "i8": np.int8, "ui8": np.uint8, "i1": np.bool_}


def dtype_of(elem):
    dt = _DTYPES.get(elem)
    if dt is None:
        raise TypeError("pbc: no numpy type for element type %s" % elem)
    return np.dtype(dt)


# A public function's signature line as MLIR prints it.
_SIGNATURE = re.compile(r"^\s*func\.func\s+(?:public\s+)?@([\w$.]+)\s*\((.*)$", re.M)


def dynamic_entries(text):
    """Names of the public functions whose signature has a dynamic size."""
    return [m.group(1) for m in _SIGNATURE.finditer(text)
            if "?" in m.group(2).rsplit("{", 1)[0]]


class ArrayEntry:
    """entry(*arrays) -> tuple of numpy arrays; arguments are checked
    against the compiled signature (element type and shape) first."""

    def __init__(self, text, name, entry=None, target="cpu", chip=None, opt_level=3,
                 disable=None):
        self.text, self.name, self.entry_name = text, name, entry
        self.options = dict(target=target, chip=chip, opt_level=opt_level, disable=disable)
        self.dynamic = bool(dynamic_entries(text))
        self.sized = {}  # input shapes -> (program, entry, inputs, outputs), dynamic only
        self._told = False
        self.refused = None  # why the one compile for every size was refused
        try:
            self.program, self.entry, self.inputs, self.outputs = self._load(None)
            self.dynamic = False
        except CompileError as e:
            if not self.dynamic:
                raise
            self.refused = next((l.split("error: ", 1)[1] for l in str(e).splitlines()
                                 if "error: " in l), str(e).strip())[:300]

    def _load(self, shapes):
        program = Program(self.text, self.name, shapes=shapes, **self.options)
        entry = self.entry_name
        if entry is None:
            if len(program.entries) != 1:
                raise ValueError("pbc: %s has %d entry points; name one" % (
                    self.name, len(program.entries)))
            entry = next(iter(program.entries))
        e = program.entries[entry]
        inputs = [(dtype_of(el), shape) for el, shape in e.args[:e.num_inputs]]
        outputs = [(dtype_of(el), shape) for el, shape in e.args[e.num_inputs:]]
        return program, e, inputs, outputs

    def _for_shapes(self, arrays):
        """The compile for these arrays' shapes (a dynamic entry)."""
        key = tuple(tuple(np.shape(a)) for a in arrays)
        hit = self.sized.get(key)
        if hit is None:
            if not self._told:
                warnings.warn("pbc: %s has dynamic sizes; pbc compiles it once per distinct "
                              "input shape (each compile cached): %s" % (self.name, self.refused),
                              stacklevel=3)
                self._told = True
            hit = self._load(shapes_spec(key, self.entry_name))
            self.sized[key] = hit
        return hit

    def __call__(self, *arrays):
        if self.dynamic:
            program, entry, inputs, outputs = self._for_shapes(arrays)
        else:
            entry, inputs, outputs = self.entry, self.inputs, self.outputs
        if len(arrays) != len(inputs):
            raise TypeError("pbc: %s takes %d arrays, got %d" % (
                entry.name, len(inputs), len(arrays)))
        ins, given = [], {}
        for i, (a, (dt, shape)) in enumerate(zip(arrays, inputs)):
            a = np.ascontiguousarray(a)
            if a.ndim == len(shape):
                for d, n in zip(shape, a.shape):
                    if d < 0:
                        given.setdefault(d, n)
            want = tuple(given.get(d) if d < 0 else d for d in shape)
            if a.dtype != dt or tuple(a.shape) != want:
                raise TypeError("pbc: argument %d is %s%s, the compiled code takes %s%s" % (
                    i, a.dtype, list(a.shape), dt,
                    ["?" if d is None else d for d in want]))
            ins.append(a)
        for d, n in given.items():
            most = entry.symbol_max.get(d, 0)
            if d < BATCH and (n < 1 or (most > 0 and n > most)):
                raise TypeError("pbc: %s's size s%d is %d; the compiled code takes 1 to %s" % (
                    entry.name, -2 - d, n, most if most > 0 else "any"))
        outs = [np.empty(tuple(given[d] if d < 0 else d for d in shape), dt)
                for dt, shape in outputs]
        entry.call([(a.ctypes.data, a.shape) for a in ins + outs])
        return tuple(outs)
