#!/bin/bash
# Builds pbc with Bazel (offline) and assembles build/bin from //:install:
# pbc, pbc-opt, libpbc.so (the embedding API), the shared core and MLIR C API
# libraries and every target's plugin and runtime (//:targets.bzl) side by
# side (pbc and libpbc find plugins next to themselves).
set -euo pipefail
cd "$(dirname "$0")/.."
bazel build //:install
mkdir -p build/bin
files=$(bazel cquery //:install --output=starlark \
  --starlark:expr="'\\n'.join([f.path for f in target.files.to_list()])" 2>/dev/null)
for f in $files; do
  install -m 755 "$f" build/bin/
done
echo "built: build/bin/pbc"
