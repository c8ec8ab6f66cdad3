#!/bin/bash
# The nvgpu checks for a lent NVIDIA machine, in two halves, because pbc
# (MLIR 22, Debian) lives here and the GPU lives there.
#
#   here:  tools/dev/gpu_lease.sh record [CHIP]   # compiles everything into build/gpu-record
#   there: tools/dev/gpu_lease.sh replay          # (device tool, carry build/gpu-record)
#
# record compiles, with build/bin/pbc, the e2e examples and op families
# (fixed seeds), a batch of the differential tester's random programs and the
# GPU benchmark's cases; replay runs each library on the GPU and checks it
# against numpy (the tests and the tester draw the same programs from the
# same seeds; see --record/--replay in tests/e2e/harness.py and
# tests/differential/difftest.py), then times the benchmark against
# torch (cuBLAS, cuDNN, SDPA). Logs go to $OUT (or build/gpu-record/logs).
set -u
cd "$(dirname "$0")/../.."
REC=build/gpu-record
SEED_EXAMPLES=7
SEED_OPS=11
SEED_DIFF=5
DIFF_COUNT=${DIFF_COUNT:-400}

case "${1:-}" in
record)
  CHIP=${2:-sm_90}
  PY=/usr/bin/python3
  rm -rf "$REC" && mkdir -p "$REC"
  echo "$CHIP" > "$REC/chip"
  $PY tests/e2e/test_examples.py --pbc build/bin/pbc --target=nvgpu --chip="$CHIP" \
      --seed $SEED_EXAMPLES --record "$REC/examples" | tail -1 || exit 1
  $PY tests/e2e/test_ops.py --pbc build/bin/pbc --target=nvgpu --chip="$CHIP" \
      --seed $SEED_OPS --record "$REC/ops" | tail -1 || exit 1
  $PY tests/differential/difftest.py --pbc build/bin/pbc --target nvgpu --chip "$CHIP" \
      --seed $SEED_DIFF --count "$DIFF_COUNT" --record "$REC/diff" | tail -1 || exit 1
  $PY tools/bench/bench_gpu.py build --chip "$CHIP" --out "$REC/bench" | tail -1 || exit 1
  du -sh "$REC"
  ;;
replay)
  CHIP=$(cat "$REC/chip")
  LOG=${OUT:-$REC/logs}
  mkdir -p "$LOG"
  export PYTHONUNBUFFERED=1
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$LOG/device.txt"
  python3 -c "import numpy, torch; print('numpy', numpy.__version__, 'torch', torch.__version__)"
  for suite in examples:$SEED_EXAMPLES ops:$SEED_OPS; do
    name=${suite%%:*}
    timeout 150 python3 tests/e2e/test_$name.py --target=nvgpu --chip="$CHIP" --require-device \
        --seed "${suite##*:}" --replay "$REC/$name" > "$LOG/$name.log" 2>&1
    echo "== $name: exit $?"; grep -v '^PASS' "$LOG/$name.log" | cut -c1-400
  done
  timeout 150 python3 tests/differential/difftest.py --target nvgpu --chip "$CHIP" \
      --seed $SEED_DIFF --count "$DIFF_COUNT" --jobs 8 --replay-libs "$REC/diff" > "$LOG/diff.log" 2>&1
  echo "== differential: exit $?"; grep -v '^ops drawn' "$LOG/diff.log" | cut -c1-400 | tail -40
  timeout ${BENCH_TIMEOUT:-180} python3 "$REC/bench/bench_gpu.py" run "$REC/bench" --runs 10 \
      --peers vendor 2>&1 | tee "$LOG/bench.log"
  echo "== bench: exit ${PIPESTATUS[0]}"
  ;;
*)
  echo "usage: $0 record [CHIP] | replay" >&2
  exit 2
  ;;
esac
