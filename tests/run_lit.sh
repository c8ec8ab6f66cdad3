#!/bin/bash
# Runs lit tests under Bazel (cwd: the runfiles root) with pbc's tools on PATH.
set -euo pipefail
root=$PWD
export PATH="$root/tools/pbc:$root/tools/pbc-opt:/usr/lib/llvm-22/bin:$PATH"
export PBC_PLUGIN_PATH="$root/targets/cpu:$root/plugins/template:$root/targets/nvgpu:$root/targets/amdgpu"
export PBC_TEST_FIXTURES="$root/tests/plugins/fixtures"
export PBC_EXAMPLES="$root/examples"
exec /usr/bin/python3 /usr/lib/llvm-22/bin/lit -v "$@"
