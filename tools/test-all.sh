#!/bin/bash
# Quick start (b): set up, then run every test this machine can run
# (bazel test //...; GPU execution tests are skipped by tag). Ends with
# "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
./setup.sh || exit 1
log=$(mktemp)
bazel test //... 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
passed=$(grep -cE '^//.* PASSED' "$log")
failed=$(grep -cE '^//.* (FAILED|TIMEOUT|NO STATUS|INCOMPLETE)' "$log")
rm -f "$log"
echo "$passed passed, $failed failed"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
