"""pbc for ONNX: compile an .onnx file, run it on numpy arrays.

    import pbc.onnx
    model = pbc.onnx.compile("model.onnx")          # shapes={"input": (1, 3, 224, 224)}
    (logits,) = model(x)                            # or model.run(None, {"input": x})

    python -m pbc.onnx model.onnx -o model.mlir     # the linalg text, for `pbc`

torch-mlir's importer (torch-mlir-import-onnx) reads the file into the
torch dialect and torch-mlir-opt lowers it to linalg on tensors (both from
PyPI torch-mlir, see tools.py); pbc compiles that. A model with symbolic
dimensions (a dynamic batch or sequence) keeps them: compiled once for
every size (pbc's batch loop, else symbolic sizes; see arrays.py), else
once per distinct input shape when first called with it (each compile
cached; said once, as a warning); one torch-mlir cannot lower with its
symbolic dimensions is imported again per distinct input shape, with them
fixed (said once). `shapes` fixes them instead (through the onnx package) before importing. A model the
importer or pbc rejects raises CompileError with their diagnostics.
"""

import os
import sys
import tempfile
import warnings

import numpy as np

from . import tools
from .arrays import ArrayEntry
from .libpbc import CompileError

__all__ = ["compile", "to_linalg"]


def _fix_shapes(path, shapes, tmp):
    import onnx
    m = onnx.load(path)
    for inp in m.graph.input:
        if inp.name in shapes:
            dims = inp.type.tensor_type.shape.dim
            want = shapes[inp.name]
            if len(dims) != len(want):
                raise ValueError("pbc: input %s has rank %d, shapes gives %s" % (
                    inp.name, len(dims), want))
            for d, s in zip(dims, want):
                d.ClearField("dim_param")
                d.dim_value = int(s)
    out = os.path.join(tmp, "fixed.onnx")
    onnx.save(m, out)
    return out


def to_linalg(path, shapes=None):
    """The .onnx file's graph as linalg-on-tensors MLIR text."""
    with tempfile.TemporaryDirectory(prefix="pbc-onnx-") as tmp:
        if shapes:
            path = _fix_shapes(path, shapes, tmp)
        torch_ir = tools.run("torch-mlir-import-onnx", [path, "-o", "-"], None, path)
    return tools.run("torch-mlir-opt", ["--torch-onnx-to-torch-backend-pipeline",
                                        "--torch-backend-to-linalg-on-tensors-backend-pipeline"],
                     torch_ir, path)


class Compiled(ArrayEntry):
    """A compiled ONNX graph: model(*arrays) -> tuple of numpy arrays."""

    def __init__(self, path, shapes=None, **options):
        self.path = path
        self.input_names = self.output_names = None
        try:
            import onnx
            g = onnx.load(path, load_external_data=False).graph
            inits = {i.name for i in g.initializer}
            self.input_names = [i.name for i in g.input if i.name not in inits]
            self.output_names = [o.name for o in g.output]
        except ImportError:
            pass
        try:
            self.mlir = to_linalg(path, shapes)
        except CompileError as e:
            # torch-mlir cannot lower some symbolic graphs (GPT-2's attention
            # reshapes); with its sizes fixed before import it may.
            if shapes or self.input_names is None or "?" not in str(e):
                raise
            self.mlir, self.import_error = None, e
            self.text, self.name, self.entry_name = None, path, None
            self.options = dict(options)
            self.dynamic, self.sized, self._told = True, {}, False
            return
        super().__init__(self.mlir, path, None, **options)

    def _for_shapes(self, arrays):
        if self.mlir is not None:
            return super()._for_shapes(arrays)
        key = tuple(tuple(np.shape(a)) for a in arrays)
        hit = self.sized.get(key)
        if hit is None:
            if not self._told:
                warnings.warn("pbc: torch-mlir cannot lower %s with its symbolic dimensions (%s); "
                              "it is imported and compiled once per distinct input shape"
                              % (self.path, next((l for l in str(self.import_error).splitlines()
                                                  if "error:" in l), "")[:200]),
                              stacklevel=3)
                self._told = True
            if len(key) != len(self.input_names):
                raise TypeError("pbc: %s takes %d arrays, got %d" % (
                    self.path, len(self.input_names), len(key)))
            self.text = to_linalg(self.path, dict(zip(self.input_names, key)))
            hit = self.sized[key] = self._load(None)
        return hit

    def run(self, output_names, feeds):
        """onnxruntime's InferenceSession.run shape: feeds by input name."""
        if self.input_names is None:
            raise RuntimeError("pbc: run() needs the onnx package for the names")
        outs = self(*[feeds[n] for n in self.input_names])
        if output_names is None:
            return list(outs)
        return [outs[self.output_names.index(n)] for n in output_names]


def compile(path, shapes=None, target="cpu", chip=None, opt_level=3, disable=None):
    return Compiled(path, shapes, target=target, chip=chip, opt_level=opt_level, disable=disable)


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="python -m pbc.onnx", allow_abbrev=False,
                                 description="An .onnx file as linalg MLIR text for pbc.")
    ap.add_argument("model")
    ap.add_argument("-o", "--output", default="-")
    ap.add_argument("--shape", action="append", default=[], metavar="NAME=D0xD1x...",
                    help="fix an input's shape (repeatable)")
    a = ap.parse_args(argv)
    shapes = {}
    for s in a.shape:
        name, _, dims = s.rpartition("=")
        shapes[name] = [int(d) for d in dims.split("x")]
    text = to_linalg(a.model, shapes or None)
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
