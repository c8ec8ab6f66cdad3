"""The external converters the JAX and ONNX front ends run, found next to
the running Python (a venv's bin/), on PATH, or where an environment
variable names them:

  iree-opt         (PyPI iree-base-compiler)  CHLO -> StableHLO
  torch-mlir-opt   (PyPI torch-mlir)          StableHLO -> linalg, torch -> linalg
  torch-mlir-import-onnx (PyPI torch-mlir)    ONNX -> torch dialect
  mlir-opt         (Debian mlir-22-tools)     upstream linalg canonicalizations

Each runs as a child process on MLIR text; a failure raises CompileError
with the tool's own diagnostics."""

import os
import shutil
import subprocess
import sys

from .libpbc import CompileError

_ENV = {"iree-opt": "PBC_IREE_OPT", "torch-mlir-opt": "PBC_TORCH_MLIR_OPT",
        "torch-mlir-import-onnx": "PBC_TORCH_MLIR_IMPORT_ONNX", "mlir-opt": "PBC_MLIR_OPT"}
_INSTALL = {"iree-opt": "pip install iree-base-compiler", "torch-mlir-opt": "pip install torch-mlir",
         "torch-mlir-import-onnx": "pip install torch-mlir", "mlir-opt": "./setup.sh"}
# Where a tool lives besides next to the Python and on PATH.
_ALSO = {"mlir-opt": ["/usr/lib/llvm-22/bin/mlir-opt"]}


def find(tool):
    path = os.environ.get(_ENV[tool])
    if path:
        return path
    here = os.path.join(os.path.dirname(sys.executable), tool)
    if os.path.exists(here):
        return here
    for path in _ALSO.get(tool, []) + [shutil.which(tool)]:
        if path and os.path.exists(path):
            return path
    raise CompileError("pbc: %s not found (%s, or set %s)" % (tool, _INSTALL[tool], _ENV[tool]))


def run(tool, args, text=None, what="the program"):
    """tool args < text -> its stdout (MLIR text)."""
    cmd = [find(tool)] + list(args)
    p = subprocess.run(cmd, input=text, capture_output=True, text=True)
    if p.returncode != 0:
        raise CompileError("pbc: %s failed on %s:\n%s" % (" ".join(cmd), what, p.stderr.strip()))
    return p.stdout
