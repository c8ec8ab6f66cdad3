#!/bin/bash
# The nvgpu checks for a lent NVIDIA machine, in two halves, because pbc
# (MLIR 22, Debian) lives here and the GPU lives there.
#
#   here:  tools/dev/gpu_lease.sh record [CHIP]   # compiles everything into build/gpu-record
#                                                 # and build/gpu-record.tar.xz (~15 min)
#   there: tools/dev/gpu_lease.sh replay          # (device tool, carry build/gpu-record.tar.xz)
#
# record compiles, with build/bin/pbc, the e2e examples and op families
# (fixed seeds), 400 of the differential tester's random programs at -O3 and
# 80 more under every variant (each --disable group, -O0..-O2; VARIANTS=0
# skips them), 60 fused-attention programs (tests/gpu/simt_attention.py)
# and the GPU benchmark's cases; the libraries (over 150 MB,
# much alike) travel as one xz archive of a few MB. replay runs each library
# on the GPU and checks it
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
SEED_VARIANTS=6
SEED_ATTENTION=12
VARIANT_COUNT=${VARIANT_COUNT:-80}
VARIANTS=${VARIANTS:-1}

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
  if [ "$VARIANTS" != 0 ]; then
    $PY tests/differential/difftest.py --pbc build/bin/pbc --target nvgpu --chip "$CHIP" \
        --seed $SEED_VARIANTS --count "$VARIANT_COUNT" --variants all --record "$REC/variants" \
        | tail -1 || exit 1
  fi
  $PY tests/gpu/simt_attention.py --pbc build/bin/pbc --chip "$CHIP" --seed $SEED_ATTENTION \
      --random 60 --record "$REC/attention" | tail -1 || exit 1
  $PY tools/bench/bench_gpu.py build --chip "$CHIP" --out "$REC/bench" | tail -1 || exit 1
  tar cJf "$REC.tar.xz" -C "$(dirname "$REC")" "$(basename "$REC")" || exit 1
  du -sh "$REC" "$REC.tar.xz"
  ;;
replay)
  [ -d "$REC" ] || tar xJf "$REC.tar.xz" -C "$(dirname "$REC")" || exit 1
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
  if [ -d "$REC/variants" ]; then
    timeout 240 python3 tests/differential/difftest.py --target nvgpu --chip "$CHIP" \
        --seed $SEED_VARIANTS --count "$VARIANT_COUNT" --variants all --jobs 12 \
        --replay-libs "$REC/variants" > "$LOG/variants.log" 2>&1
    echo "== differential, every variant: exit $?"
    grep -v '^ops drawn' "$LOG/variants.log" | cut -c1-400 | tail -40
  fi
  timeout 150 python3 tests/gpu/simt_attention.py --chip "$CHIP" --seed $SEED_ATTENTION --random 60 \
      --replay "$REC/attention" > "$LOG/attention.log" 2>&1
  echo "== fused attention: exit $?"; grep -v '^PASS' "$LOG/attention.log" | cut -c1-400 | tail -20
  timeout ${BENCH_TIMEOUT:-180} python3 "$REC/bench/bench_gpu.py" run "$REC/bench" --runs 10 \
      --peers vendor 2>&1 | tee "$LOG/bench.log"
  echo "== bench: exit ${PIPESTATUS[0]}"
  ;;
*)
  echo "usage: $0 record [CHIP] | replay" >&2
  exit 2
  ;;
esac
