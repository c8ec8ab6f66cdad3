#!/bin/bash
# Runs an e2e test script under Bazel (cwd: the runfiles root); arguments
# after the script (--target, --chip, --require-device) go to it.
set -euo pipefail
export PBC_PLUGIN_PATH="$PWD/targets/cpu:$PWD/plugins/template:$PWD/targets/nvgpu:$PWD/targets/amdgpu"
export PBC_EXAMPLES="$PWD/examples"
script=$1
shift
exec /usr/bin/python3 "$script" --pbc "$PWD/tools/pbc/pbc" "$@"
