#!/bin/bash
# Proves that a change leaves generated code alone: the S3 and S5 IR of every
# example, GPU input, saved differential reproducer and 60 seeded random
# programs (tests/differential/progen.py), for cpu (x86-64-v4 and -v3:
# named chips, not the host), nvgpu (sm_80, sm_90) and amdgpu (gfx90a,
# gfx1100), from two builds' pbc, compared byte for byte.
#   tools/dev/check_same_output.sh OLD_BIN_DIR NEW_BIN_DIR
# ptxas timings that MLIR records in gpu.binary properties are masked.
# Exit status 0 when every output is identical; the differing files are
# listed (both versions are kept under $OUT, default /tmp/pbc-same-output).
set -euo pipefail
cd "$(dirname "$0")/../.."
old=$(readlink -f "$1") new=$(readlink -f "$2")
out=${OUT:-/tmp/pbc-same-output}
rm -rf "$out" && mkdir -p "$out/inputs" "$out/old" "$out/new"
for f in examples/*.mlir tests/gpu/inputs/*.mlir tests/differential/regressions/*.mlir; do
  cp "$f" "$out/inputs/$(basename "$(dirname "$f")")_$(basename "$f")"
done
/usr/bin/python3 - "$out/inputs" <<'PY'
import sys, numpy as np
sys.path.insert(0, "tests/differential")
import progen
for seed in range(60):
    rng = np.random.default_rng(seed)
    progs = [progen.generate(rng).emit("f%d" % i) for i in range(3)]
    open("%s/progen_%02d.mlir" % (sys.argv[1], seed), "w").write(progen.module(progs))
PY
configs=("cpu x86-64-v4" "cpu x86-64-v3" "nvgpu sm_80" "nvgpu sm_90" "amdgpu gfx90a" "amdgpu gfx1100")
differ=0 total=0
for f in "$out"/inputs/*.mlir; do
  name=$(basename "$f" .mlir)
  for c in "${configs[@]}"; do
    set -- $c
    for stage in s3 s5; do
      tag="$name.$1.$2.$stage"
      for v in old new; do
        bin=$old
        [ "$v" = new ] && bin=$new
        "$bin/pbc" --target="$1" --chip="$2" --emit="$stage" "$f" 2>&1 |
          sed -E 's/(ISAToBinary|LLVMIRToISA)TimeInMs = [0-9]+/\1TimeInMs = T/g' >"$out/$v/$tag" || true
      done
      total=$((total + 1))
      if ! cmp -s "$out/old/$tag" "$out/new/$tag"; then
        echo "differs: $tag"
        differ=$((differ + 1))
      fi
    done
  done
done
echo "$((total - differ)) of $total outputs identical"
[ "$differ" -eq 0 ]
