#!/bin/bash
# Runs a bridge or frontend test under Bazel (cwd: the runfiles root) with
# libpbc, its driver and the cpu plugin from this build, and a fresh
# compile cache. Python: Debian's python3 (torch 1.13), or with
# --frontends-python the pinned PyPI environment tools/python-env.sh made
# (torch 2.x, JAX, ONNX, torch-mlir), whose python test-all.sh passes in
# PBC_PYTHON.
set -euo pipefail
python=/usr/bin/python3
if [ "${1:-}" = --frontends-python ]; then
  shift
  if [ -z "${PBC_PYTHON:-}" ] || [ ! -x "$PBC_PYTHON" ]; then
    echo "this test runs in the frontends environment: run tools/python-env.sh and" >&2
    echo "pass its python, bazel test --test_env=PBC_PYTHON=... (tools/test-all.sh does)" >&2
    exit 1
  fi
  python=$PBC_PYTHON
fi
export PBC_LIBPBC="$PWD/tools/libpbc/libpbc.so"
export PBC_DRIVER="$PWD/tools/pbc/pbc"
export PBC_PLUGIN_DIR="$PWD/targets/cpu"
export PBC_CACHE_DIR="${TEST_TMPDIR:-/tmp}/pbc-cache"
export PYTHONPATH="$PWD/tools/torch:$PWD/tests/torch"
export OPENBLAS_NUM_THREADS=1
# One OpenMP runtime for PyTorch and pbc (tools/torch/pbc/openmp.py).
export LD_PRELOAD=/usr/lib/llvm-22/lib/libomp.so.5
exec "$python" "$@"
