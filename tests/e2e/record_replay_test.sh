#!/bin/bash
# The record/replay route to a lent GPU (tools/dev/gpu_lease.sh), checked on
# the cpu target: the examples recorded with pbc replay without it (a pbc
# path that does not exist) and match numpy; a replay with nothing recorded
# fails, naming the missing library; the same for the differential tester.
set -uo pipefail
export PBC_PLUGIN_PATH="$PWD/targets/cpu:$PWD/plugins/template:$PWD/targets/nvgpu:$PWD/targets/amdgpu"
export PBC_EXAMPLES="$PWD/examples"
PBC="$PWD/tools/pbc/pbc"
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

/usr/bin/python3 tests/e2e/test_examples.py --pbc "$PBC" --seed 3 --record "$DIR/ex" > "$DIR/log" 2>&1 ||
  { cat "$DIR/log"; fail "record"; }
ls "$DIR"/ex/*.so > /dev/null 2>&1 || fail "nothing recorded"
/usr/bin/python3 tests/e2e/test_examples.py --pbc /nonexistent/pbc --seed 3 --replay "$DIR/ex" > "$DIR/log" 2>&1 ||
  { cat "$DIR/log"; fail "replay of the recorded examples"; }
grep -q "^5 passed, 0 failed" "$DIR/log" || { cat "$DIR/log"; fail "replay count"; }
mkdir "$DIR/empty"
if /usr/bin/python3 tests/e2e/test_examples.py --pbc /nonexistent/pbc --seed 3 --replay "$DIR/empty" > "$DIR/log" 2>&1; then
  fail "a replay with nothing recorded passed"
fi
grep -q "no recorded library" "$DIR/log" || { cat "$DIR/log"; fail "missing library not named"; }

/usr/bin/python3 tests/differential/difftest.py --pbc "$PBC" --seed 4 --count 6 --record "$DIR/diff" > "$DIR/log" 2>&1 ||
  { cat "$DIR/log"; fail "difftest record"; }
/usr/bin/python3 tests/differential/difftest.py --pbc /nonexistent/pbc --seed 4 --count 6 --replay-libs "$DIR/diff" > "$DIR/log" 2>&1 ||
  { cat "$DIR/log"; fail "difftest replay"; }
grep -q "6 passed, 0 failed" "$DIR/log" || { cat "$DIR/log"; fail "difftest replay count"; }
if /usr/bin/python3 tests/differential/difftest.py --pbc /nonexistent/pbc --seed 4 --count 6 --replay-libs "$DIR/empty" > "$DIR/log" 2>&1; then
  fail "a difftest replay with nothing recorded passed"
fi
echo "PASS record/replay"
