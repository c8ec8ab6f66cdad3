#!/bin/bash
# Ablation of S3's optimization groups (like the PolyBlocks paper's Table 3):
# runs each example (and a 1024^3 matmul) with everything on (-O3), with one
# group disabled at a time (--disable=G), and with all of S3 off (-O0), on
# the JIT (`pbc --run=N`, median of N runs on fresh random inputs), and
# prints one markdown table of medians in ms; each --disable column's
# slowdown (time / all-on time) is in parentheses.
# usage: tools/bench/ablation.sh [--pbc PATH] [--runs N]
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
pbc=$repo/build/bin/pbc
runs=10
while [ $# -gt 0 ]; do
  case "$1" in
    --pbc) pbc=$2; shift ;;
    --runs) runs=$2; shift ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ablation.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
groups=(fusion slice-fusion tiling fast-buffers vectorization unroll scalar-replacement prefetch parallelization fp-contract)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/256/1024/g' > "$tmp/matmul1024.mlir" <<'MLIR'
func.func @matmul(%a: tensor<256x256xf32>, %b: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x256xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x256xf32>) -> tensor<256x256xf32>
  %r = linalg.matmul ins(%a, %b : tensor<256x256xf32>, tensor<256x256xf32>) outs(%c : tensor<256x256xf32>) -> tensor<256x256xf32>
  return %r : tensor<256x256xf32>
}
MLIR
inputs=("$repo"/examples/*.mlir "$tmp/matmul1024.mlir" "$here/inputs/chain5.mlir")
median() { # pbc args... -> median ms of the first entry, or "fail"
  "$pbc" --run="$runs" "$@" 2>/dev/null |
    sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' | head -1 | grep . || echo fail
}
echo "pbc ablation, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs," \
     "OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}, median of $runs runs (ms)"
echo
header="| program | -O3 (all) |"
rule="|---|---|"
for g in "${groups[@]}"; do header+=" no $g |"; rule+="---|"; done
echo "$header -O0 |"
echo "$rule---|"
for f in "${inputs[@]}"; do
  name=$(basename "$f" .mlir)
  all=$(median "$f")
  row="| $name | $all |"
  for g in "${groups[@]}"; do
    t=$(median --disable="$g" "$f")
    if [ "$t" != fail ] && [ "$all" != fail ]; then
      row+=" $t ($(awk -v a="$t" -v b="$all" 'BEGIN{printf "%.2fx", a/b}')) |"
    else
      row+=" $t |"
    fi
  done
  row+=" $(median -O0 "$f") |"
  echo "$row"
done
