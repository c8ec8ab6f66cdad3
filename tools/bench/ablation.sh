#!/bin/bash
# Ablation of S3's optimization groups (like the PolyBlocks paper's Table 3):
# runs each example (and a 1024^3 matmul, a 5-op chain and a 2048^2 matmul
# with bias and ReLU) with everything on (-O3), with one
# group disabled at a time (--disable=G), and with all of S3 off (-O0), on
# the JIT (`pbc --run=N`, median of N runs on fresh random inputs), in
# ROUNDS interleaved rounds (all-on and every --disable once per round: a
# noisy spell of the machine hits one round, not one column), and prints one
# markdown table of the medians over rounds in ms; each --disable column's
# slowdown (time / all-on time of the same round, median) is in parentheses.
# usage: tools/bench/ablation.sh [--pbc PATH] [--runs N] [--rounds R]
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
pbc=$repo/build/bin/pbc
runs=10
rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --pbc) pbc=$2; shift ;;
    --runs) runs=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ablation.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
# Every optimization group of S3, in the order the pipeline first uses it
# (cleanup aside: it is not an optimization).
mapfile -t groups < <(grep -o '^\[[a-z-]*\]' "$repo/pipelines/s3.pipeline" | tr -d '[]' |
                      grep -vx cleanup | awk '!seen[$0]++')
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
inputs=("$repo"/examples/*.mlir "$tmp/matmul1024.mlir" "$here/inputs/chain5.mlir"
        "$here/inputs/matmul_bias_relu.mlir")
median() { # pbc args... -> median ms of the first entry, or "fail"
  "$pbc" --run="$runs" "$@" 2>/dev/null |
    sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' | head -1 | grep . || echo fail
}
echo "pbc ablation, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs," \
     "OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}, median of $runs runs per round," \
     "$rounds interleaved rounds (ms)"
echo
header="| program | -O3 (all) |"
rule="|---|---|"
for g in "${groups[@]}"; do header+=" no $g |"; rule+="---|"; done
echo "$header -O0 |"
echo "$rule---|"
med() { # numbers... -> their median, or "fail" if one is
  case " $* " in *" fail "*) echo fail; return ;; esac
  printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'
}
for f in "${inputs[@]}"; do
  name=$(basename "$f" .mlir)
  alls=()
  declare -A times=() ratios=()
  for ((r = 0; r < rounds; ++r)); do
    all=$(median "$f")
    alls+=("$all")
    for g in "${groups[@]}"; do
      t=$(median --disable="$g" "$f")
      times[$g]+=" $t"
      if [ "$t" != fail ] && [ "$all" != fail ]; then
        ratios[$g]+=" $(awk -v a="$t" -v b="$all" 'BEGIN{printf "%.4f", a/b}')"
      else
        ratios[$g]+=" fail"
      fi
    done
  done
  row="| $name | $(med "${alls[@]}") |"
  for g in "${groups[@]}"; do
    # shellcheck disable=SC2086
    t=$(med ${times[$g]})
    # shellcheck disable=SC2086
    q=$(med ${ratios[$g]})
    if [ "$q" != fail ]; then
      row+=" $t ($(awk -v q="$q" 'BEGIN{printf "%.2fx", q}')) |"
    else
      row+=" $t |"
    fi
  done
  row+=" $(median -O0 "$f") |"
  echo "$row"
done
