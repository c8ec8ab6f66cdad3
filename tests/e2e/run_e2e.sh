#!/bin/bash
# Runs an e2e test script under Bazel (cwd: the runfiles root).
set -euo pipefail
export PBC_PLUGIN_PATH="$PWD/targets/cpu:$PWD/plugins/template"
export PBC_EXAMPLES="$PWD/examples"
exec /usr/bin/python3 "$1" --pbc "$PWD/tools/pbc/pbc"
