#!/bin/bash
# Benchmarks pbc-compiled matmuls (square-ish; skinny: batch 1-8 linear
# layers; B as N x K) and convolutions against oneDNN, OpenBLAS
# and naive C, an elementwise chain against the STREAM triad, and the blur
# fused against --disable=slice-fusion, in one process per case, and prints
# ratio tables (pbc/peer: pbc's time over the peer's, paired per round).
#
# usage: tools/bench/run.sh [--quick] [--pbc PATH | --standin SCRIPT]
#                           [--dir DIR] [--reps N] [--rounds N] [--warmup N]
#                           [--max-seconds S] [--baseline PATH [--pairs N]]
#   --pbc PATH       the pbc driver, run as: PATH --emit=lib -o OUT.so IN.mlir
#                    (default: $PBC, else bazel-bin/tools/pbc/pbc)
#   --standin SCRIPT a stand-in compiler run as: SCRIPT IN.mlir OUT.so
#                    (default: $PBC_STANDIN); overrides --pbc; no blur cases
#   --quick          matmul 256^3 and the 3x3 conv only
#   --reps N, --rounds N, --warmup N, --max-seconds S
#                    passed to every harness: timed calls per candidate,
#                    rounds they are split into, untimed calls first, and
#                    the time after which a candidate stops (see README.md)
#   --baseline PATH  before/after mode: also compile every case with the pbc
#                    driver at PATH and run the two harnesses alternately
#                    --pairs N times (default 4); prints, per case, each
#                    side's paired pbc/peer ratios and their medians
#   --dir DIR        work directory (default: /tmp/pbc-bench-$USER)
#   --openblas-coretype T  OpenBLAS kernels to use (default: SkylakeX on
#                    AVX-512 CPUs, else OpenBLAS's own choice; see README.md)
# Environment: CC (default clang-22, else cc), OMP_NUM_THREADS and
# OPENBLAS_NUM_THREADS (default: number of CPUs), PBC_FLAGS (extra pbc
# flags), BENCH_OPENBLAS_CORETYPE (as --openblas-coretype), PBC_BENCH_PAGES
# (4k: the C harnesses' buffers on 4 KiB pages; 2m or unset: 2 MiB pages, madvise).
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

quick=0
pbc=${PBC:-}
standin=${PBC_STANDIN:-}
dir=/tmp/pbc-bench-${USER:-$(id -un)}
coretype=${BENCH_OPENBLAS_CORETYPE:-}
baseline=
pairs=4
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --pbc) pbc=$2; shift ;;
    --standin) standin=$2; shift ;;
    --dir) dir=$2; shift ;;
    --openblas-coretype) coretype=$2; shift ;;
    --reps|--rounds|--warmup|--max-seconds) extra+=("$1" "$2"); shift ;;
    --baseline) baseline=$2; shift ;;
    --pairs) pairs=$2; shift ;;
    -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
case "${PBC_BENCH_PAGES:-}" in
  ""|2m|4k) ;;
  *) echo "run.sh: PBC_BENCH_PAGES=$PBC_BENCH_PAGES: expected 4k or 2m" >&2; exit 2 ;;
esac

if [ -n "$standin" ]; then
  compiler="stand-in: $standin IN.mlir OUT.so"
  compile() { "$standin" "$1" "$2"; }
else
  [ -n "$pbc" ] || pbc=$repo/bazel-bin/tools/pbc/pbc
  if [ ! -x "$pbc" ]; then
    echo "run.sh: no pbc at $pbc; build it, or pass --pbc PATH or" \
         "--standin SCRIPT" >&2
    exit 2
  fi
  compiler="pbc: $pbc ${PBC_FLAGS:-} --emit=lib -o OUT.so IN.mlir"
  # PBC_FLAGS is split on purpose (several flags).
  # shellcheck disable=SC2086
  compile() { "$pbc" ${PBC_FLAGS:-} --emit=lib -o "$2" "$1"; }
fi

ncpu=$(nproc)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$ncpu}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-$OMP_NUM_THREADS}
# Debian's OpenBLAS 0.3.21 doesn't know Zen 4/5 or recent Xeons and falls
# back to its AVX2 (Haswell) or SSE kernels, at half speed or worse; its
# AVX-512 SkylakeX kernels are the fastest it has on these (measured, see
# README.md). An inherited OPENBLAS_CORETYPE is overridden, and said so:
# some environments set it to Haswell.
coretype_note=
if [ -z "$coretype" ] && grep -qw avx512f /proc/cpuinfo; then
  coretype=SkylakeX
fi
if [ -n "$coretype" ]; then
  if [ -n "${OPENBLAS_CORETYPE:-}" ] && [ "$OPENBLAS_CORETYPE" != "$coretype" ]; then
    coretype_note=" (overrides inherited OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE)"
  fi
  export OPENBLAS_CORETYPE=$coretype
fi
export BENCH_NO_ENV_LINE=1

if [ -z "${CC:-}" ]; then
  if command -v clang-22 >/dev/null; then CC=clang-22; else CC=cc; fi
fi

mkdir -p "$dir/bin" "$dir/mlir" "$dir/lib" || exit 2
status=0

# --- build the harness (plain compiler, so it works without Bazel) --------
cflags=(-std=c11 -O3 -march=native -fopenmp -Wall)
# With clang, load the OpenMP runtime of the same LLVM that pbc builds on
# (not the distribution's older default libomp.so.5): pbc's outputs use it,
# and dlopen reuses whichever libomp.so.5 the harness loaded first.
ccdir=$(dirname "$(readlink -f "$(command -v "$CC")")")
if [ -e "$ccdir/../lib/libomp.so.5" ]; then
  cflags+=("-Wl,-rpath,$(cd "$ccdir/../lib" && pwd)")
fi
build() { # name sources... -- libs...
  local name=$1; shift
  local srcs=() libs=()
  while [ "$1" != -- ]; do srcs+=("$here/$1"); shift; done
  shift
  libs=("$@")
  "$CC" "${cflags[@]}" -o "$dir/bin/$name" "${srcs[@]}" "${libs[@]}" ||
    { echo "run.sh: building $name failed" >&2; exit 2; }
}
build bench_matmul bench_matmul.c bench_common.c -- -ldnnl -lopenblas -ldl -lm
build bench_matmul_i8 bench_matmul_i8.c bench_common.c -- -ldnnl -ldl -lm
build bench_conv bench_conv.c bench_common.c -- -ldnnl -ldl -lm
build bench_chain bench_chain.c bench_common.c -- -ldl -lm
build bench_blur bench_blur.c bench_common.c -- -ldl -lm
build peak_fma peak_fma.c -- -lm

# --- header -----------------------------------------------------------------
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
fam=$(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')
mod=$(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')
isa=$(grep -o -w -m1 'avx512f' /proc/cpuinfo || echo "no avx512f")
echo "=== pbc benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "cpu: $cpu (family $fam model $mod), $ncpu CPUs, $isa"
echo "threads: OMP_NUM_THREADS=$OMP_NUM_THREADS" \
     "OPENBLAS_NUM_THREADS=$OPENBLAS_NUM_THREADS" \
     "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)}$coretype_note"
echo "compiler: $compiler"
[ -n "$baseline" ] && echo "baseline: $baseline ${PBC_FLAGS:-} --emit=lib -o OUT.so IN.mlir ($pairs alternating runs per case)"
echo "harness: $CC ${cflags[*]}; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "${PBC_BENCH_PAGES:-}" = 4k ]; then
  echo "pages: 4 KiB (PBC_BENCH_PAGES=4k)"
else
  echo "pages: buffers >= 2 MiB advised as huge pages (THP: $(grep -o '\[[a-z]*\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)); PBC_BENCH_PAGES=4k for 4 KiB"
fi
echo "ratios: pbc/peer = pbc's time over the peer's (paired per round);" \
     ">1 means pbc is slower"
echo

if [ $quick = 0 ]; then
  echo "--- fp32 FMA peak (peak_fma)"
  "$dir/bin/peak_fma"
  echo
fi

# --- MLIR inputs -------------------------------------------------------------
gen_matmul() { # M N K file [t: B given as N x K, a linear layer's weight] [i8]
  # i8: i8 operands, i32 result (a quantized linear layer's product)
  local M=$1 N=$2 K=$3 ab=f32 acc=f32 zero=0.0 maps=""
  if [ "${6:-}" = i8 ]; then ab=i8 acc=i32 zero=0; fi
  local b_t="tensor<${K}x${N}x${ab}>"
  if [ "${5:-}" = t ]; then
    b_t="tensor<${N}x${K}x${ab}>"
    maps="indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] "
  fi
  local a_t="tensor<${M}x${K}x${ab}>" c_t="tensor<${M}x${N}x${acc}>"
  cat > "$4" <<EOF
func.func @matmul(%a: ${a_t}, %b: ${b_t}) -> ${c_t} {
  %zero = arith.constant ${zero} : ${acc}
  %e = tensor.empty() : ${c_t}
  %c = linalg.fill ins(%zero : ${acc}) outs(%e : ${c_t}) -> ${c_t}
  %r = linalg.matmul ${maps}ins(%a, %b : ${a_t}, ${b_t}) outs(%c : ${c_t}) -> ${c_t}
  return %r : ${c_t}
}
EOF
}

gen_conv() { # H W C F KH KW PAD file  (N=1, stride 1)
  local H=$1 W=$2 C=$3 F=$4 KH=$5 KW=$6 P=$7 out=$8
  local OH=$((H + 2 * P - KH + 1)) OW=$((W + 2 * P - KW + 1))
  local PH=$((H + 2 * P)) PW=$((W + 2 * P))
  local in_t="tensor<1x${H}x${W}x${C}xf32>" w_t="tensor<${KH}x${KW}x${C}x${F}xf32>"
  local out_t="tensor<1x${OH}x${OW}x${F}xf32>" pad_t="tensor<1x${PH}x${PW}x${C}xf32>"
  {
    echo "func.func @conv(%in: $in_t, %w: $w_t) -> $out_t {"
    echo "  %zero = arith.constant 0.0 : f32"
    local x=%in
    if [ "$P" -gt 0 ]; then
      x=%x
      echo "  %x = tensor.pad %in low[0, $P, $P, 0] high[0, $P, $P, 0] {"
      echo "  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):"
      echo "    tensor.yield %zero : f32"
      echo "  } : $in_t to $pad_t"
    else
      pad_t=$in_t
    fi
    echo "  %e = tensor.empty() : $out_t"
    echo "  %c = linalg.fill ins(%zero : f32) outs(%e : $out_t) -> $out_t"
    echo "  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}"
    echo "         ins($x, %w : $pad_t, $w_t) outs(%c : $out_t) -> $out_t"
    echo "  return %r : $out_t"
    echo "}"
  } > "$out"
}

# Compiles $1.mlir to $1.so (and, with --baseline, lib$1_base.so); on
# failure reports and returns 1.
compile_case() {
  local name=$1
  if ! compile "$dir/mlir/$name.mlir" "$dir/lib/lib$name.so" \
      > "$dir/lib/$name.log" 2>&1 ||
     { [ -n "$baseline" ] && ! "$baseline" ${PBC_FLAGS:-} --emit=lib \
         -o "$dir/lib/lib${name}_base.so" "$dir/mlir/$name.mlir" \
         >> "$dir/lib/$name.log" 2>&1; }; then
    echo "*** $name: compilation FAILED (log: $dir/lib/$name.log)"
    tail -5 "$dir/lib/$name.log" | sed 's/^/    /'
    status=1
    return 1
  fi
}

median_of() { # the middle value, or the mean of the two middle ones
  printf '%s\n' "$@" | sort -g |
    awk '{a[NR]=$1} END{m=int((NR+1)/2); printf "%.3f\n", NR%2 ? a[m] : (a[m]+a[m+1])/2}'
}

# Before/after: the harness for the baseline's library and for pbc's, in
# turn, --pairs times; each run pairs its side with the peer round by round.
compare_case() { # peer-row-regex name harness args...
  local peer=$1 name=$2 harness=$3
  shift 3
  local base=() cur=() r side lib
  for ((i = 0; i < pairs; ++i)); do
    for side in base cur; do
      lib=$dir/lib/lib$name.so
      [ $side = base ] && lib=$dir/lib/lib${name}_base.so
      r=$("$harness" --lib "$lib" "$@" 2>&1 | awk -v re="$peer" '$0 ~ re {print $(NF-1)}' | tr -d x)
      [ -n "$r" ] || { echo "*** FAILED: $harness --lib $lib $*"; status=1; return; }
      if [ $side = base ]; then base+=("$r"); else cur+=("$r"); fi
    done
  done
  echo "$name (pbc/peer time, >1: slower than the peer)"
  echo "  baseline: ${base[*]} -> median $(median_of "${base[@]}")"
  echo "  pbc:      ${cur[*]} -> median $(median_of "${cur[@]}")"
  echo
}

run_case() { # peer-row-regex name program args...
  local peer=$1 name=$2
  shift 2
  if [ -n "$baseline" ]; then
    local harness=$1
    shift 3 # --lib LIB
    compare_case "$peer" "$name" "$harness" "$@"
    return
  fi
  if ! "$@"; then
    echo "*** FAILED: $*"
    status=1
  fi
  echo
}

# --- matmuls -------------------------------------------------------------------
if [ $quick = 1 ]; then
  matmuls=("256 256 256")
else
  matmuls=("256 256 256" "1024 1024 1024" "2048 2048 2048" "128 768 768"
           "512 3072 768")
fi
for s in "${matmuls[@]}"; do
  read -r M N K <<< "$s"
  name=matmul_${M}x${N}x${K}
  gen_matmul "$M" "$N" "$K" "$dir/mlir/$name.mlir"
  compile_case "$name" || continue
  run_case "onednn sgemm" "$name" "$dir/bin/bench_matmul" --lib "$dir/lib/lib$name.so" \
    --func matmul "$M" "$N" "$K" "${extra[@]}"
done

# --- skinny GEMMs (batch 1-16 linear layers), B as K x N or (t) N x K; and ----
# --- linear layers with PyTorch's N x K weight (t: B copied transposed) ------
if [ $quick = 0 ]; then
  for s in "1 1000 2048" "8 4096 1024" "16 1000 2048" "1 1000 2048 t" "8 4096 1024 t" \
           "128 768 768 t" "512 3072 768 t"; do
    read -r M N K T <<< "$s"
    name=matmul_${M}x${N}x${K}${T:+_bt}
    gen_matmul "$M" "$N" "$K" "$dir/mlir/$name.mlir" "$T"
    compile_case "$name" || continue
    run_case "onednn sgemm" "$name" "$dir/bin/bench_matmul" --lib "$dir/lib/lib$name.so" \
      --func matmul "$M" "$N" "$K" ${T:+--transpose-b} "${extra[@]}"
  done
fi

# --- i8 x i8 -> i32 GEMMs (quantized linear layers; t: B as N x K) ------------
if [ $quick = 0 ]; then
  for s in "512 512 512" "128 768 768 t" "512 3072 768 t"; do
    read -r M N K T <<< "$s"
    name=matmul_i8_${M}x${N}x${K}${T:+_bt}
    gen_matmul "$M" "$N" "$K" "$dir/mlir/$name.mlir" "${T:--}" i8
    compile_case "$name" || continue
    run_case "onednn gemm_s8s8s32" "$name" "$dir/bin/bench_matmul_i8" \
      --lib "$dir/lib/lib$name.so" --func matmul "$M" "$N" "$K" ${T:+--transpose-b} "${extra[@]}"
  done
fi

# --- convolutions (N=1, NHWC, stride 1): H W C F KH KW PAD ----------------------
if [ $quick = 1 ]; then
  convs=("56 56 64 64 3 3 1")
else
  convs=("56 56 64 64 3 3 1" "56 56 64 256 1 1 0" "56 56 256 64 1 1 0")
fi
for s in "${convs[@]}"; do
  read -r H W C F KH KW P <<< "$s"
  name=conv_${H}x${W}x${C}_${KH}x${KW}x${F}_p${P}
  gen_conv "$H" "$W" "$C" "$F" "$KH" "$KW" "$P" "$dir/mlir/$name.mlir"
  compile_case "$name" || continue
  run_case "onednn conv [(]nhwc" "$name" "$dir/bin/bench_conv" --lib "$dir/lib/lib$name.so" --func conv \
    "$H" "$W" "$C" "$F" "$KH" "$KW" "$P" "${extra[@]}"
done

# --- elementwise chain (fusion; memory bound: vs STREAM triad) -----------------
if [ $quick = 0 ]; then
  cp "$here/inputs/chain5.mlir" "$dir/mlir/chain5.mlir"
  if compile_case chain5; then
    run_case "STREAM triad" chain5 "$dir/bin/bench_chain" --lib "$dir/lib/libchain5.so" --func chain \
      4096 4096 "${extra[@]}"
  fi
fi

# --- blur (slicing fusion, Fig. 6): fused against --disable=slice-fusion -------
# The example at its size (the paper's 4096x4096x3: the intermediate is far
# larger than the L3) and at 1024x1024x3 (the intermediate fits in the L3).
# (Not with a stand-in compiler: it has no --disable.)
if [ $quick = 0 ] && [ -z "$standin" ]; then
  for hw in 4096 1024; do
    name=blur_$hw
    sed -e "s/4100x4100/$((hw + 4))x$((hw + 4))/g; s/4100x4096/$((hw + 4))x$hw/g" \
        -e "s/4096x4096/${hw}x$hw/g" "$repo/examples/blur.mlir" > "$dir/mlir/$name.mlir"
    compile_case "$name" || continue
    if ! "$pbc" ${PBC_FLAGS:-} --disable=slice-fusion --emit=lib -o "$dir/lib/lib${name}_unfused.so" \
        "$dir/mlir/$name.mlir" >> "$dir/lib/$name.log" 2>&1; then
      echo "*** $name: compilation with --disable=slice-fusion FAILED"; status=1; continue
    fi
    run_case "pbc unfused" "$name" "$dir/bin/bench_blur" --lib "$dir/lib/lib$name.so" \
      --unfused "$dir/lib/lib${name}_unfused.so" --func blur "$hw" "$hw" "${extra[@]}"
  done
fi

echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
[ $status = 0 ] && echo "all checks passed" || echo "SOME CASES FAILED"
exit $status
