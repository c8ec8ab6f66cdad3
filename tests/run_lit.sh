#!/bin/bash
# Runs lit tests under Bazel (cwd: the runfiles root) with pbc's tools on PATH.
set -euo pipefail
root=$PWD
export PATH="$root/tools/pbc:$root/tools/pbc-opt:/usr/lib/llvm-22/bin:$PATH"
# Every target's plugin (//:plugins), wherever its package is.
PBC_PLUGIN_PATH=$(find -L "$root" -name 'libpbc_target_*.so' -not -path '*/fixtures/*' \
  -printf '%h\n' | sort -u | paste -sd:)
export PBC_PLUGIN_PATH
export PBC_RUNFILES_ROOT="$root"
export PBC_TEST_FIXTURES="$root/tests/plugins/fixtures"
export PBC_EXAMPLES="$root/examples"
exec /usr/bin/python3 /usr/lib/llvm-22/bin/lit -v "$@"
