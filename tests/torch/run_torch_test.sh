#!/bin/bash
# Runs a bridge test under Bazel (cwd: the runfiles root) with Debian's
# python3 and torch, libpbc, its driver and the cpu plugin from this build, and a fresh
# compile cache.
set -euo pipefail
export PBC_LIBPBC="$PWD/tools/libpbc/libpbc.so"
export PBC_DRIVER="$PWD/tools/pbc/pbc"
export PBC_PLUGIN_DIR="$PWD/targets/cpu"
export PBC_CACHE_DIR="${TEST_TMPDIR:-/tmp}/pbc-cache"
export PYTHONPATH="$PWD/tools/torch"
export OPENBLAS_NUM_THREADS=1
# One OpenMP runtime for PyTorch and pbc (tools/torch/pbc/openmp.py).
export LD_PRELOAD=/usr/lib/llvm-22/lib/libomp.so.5
exec /usr/bin/python3 "$@"
