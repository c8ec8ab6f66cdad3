"""The external converters the JAX and ONNX front ends run, found next to
the running Python (a venv's bin/), on PATH, or where an environment
variable names them:

  iree-opt         (PyPI iree-base-compiler)  CHLO -> StableHLO
  torch-mlir-opt   (PyPI torch-mlir)          StableHLO -> linalg, torch -> linalg
  torch-mlir-import-onnx (PyPI torch-mlir)    ONNX -> torch dialect

Each runs as a child process on MLIR text; a failure raises CompileError
with the tool's own diagnostics."""

import os
import shutil
import subprocess
import sys

from .libpbc import CompileError

_ENV = {"iree-opt": "PBC_IREE_OPT", "torch-mlir-opt": "PBC_TORCH_MLIR_OPT",
        "torch-mlir-import-onnx": "PBC_TORCH_MLIR_IMPORT_ONNX"}
_PYPI = {"iree-opt": "iree-base-compiler", "torch-mlir-opt": "torch-mlir",
         "torch-mlir-import-onnx": "torch-mlir"}


def find(tool):
    path = os.environ.get(_ENV[tool])
    if path:
        return path
    here = os.path.join(os.path.dirname(sys.executable), tool)
    if os.path.exists(here):
        return here
    path = shutil.which(tool)
    if path:
        return path
    raise CompileError("pbc: %s not found (pip install %s, or set %s)" % (
        tool, _PYPI[tool], _ENV[tool]))


def run(tool, args, text=None, what="the program"):
    """tool args < text -> its stdout (MLIR text)."""
    cmd = [find(tool)] + list(args)
    p = subprocess.run(cmd, input=text, capture_output=True, text=True)
    if p.returncode != 0:
        raise CompileError("pbc: %s failed on %s:\n%s" % (" ".join(cmd), what, p.stderr.strip()))
    return p.stdout
