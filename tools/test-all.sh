#!/bin/bash
# Quick start (b): set up (Debian packages, the frontends' Python
# environment), then run every test this machine can run
# (bazel test //...; GPU execution tests are skipped by tag). Ends with
# "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
./setup.sh || exit 1
# The frontends' pinned PyPI environment (torch 2.x, JAX, ONNX, torch-mlir):
# made once, cached; the frontend tests and bridge_torch2 run in it.
PBC_PYTHON=$(tools/python-env.sh | tail -1) || exit 1
log=$(mktemp)
bazel test --test_env=PBC_PYTHON="$PBC_PYTHON" //... 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
passed=$(grep -cE '^//.* PASSED' "$log")
failed=$(grep -cE '^//.* (FAILED|TIMEOUT|NO STATUS|INCOMPLETE)' "$log")
rm -f "$log"
echo "$passed passed, $failed failed"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
