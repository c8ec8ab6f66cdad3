#!/bin/bash
# Replays the corpus (examples, saved reproducers) through the libFuzzer
# target's function in one process: no crash (cwd: the runfiles root).
set -euo pipefail
export PBC_PLUGIN_PATH="$PWD/targets/cpu"
exec tests/fuzz/frontdoor_replay examples/*.mlir tests/differential/regressions/*.mlir
