#!/bin/bash
# Builds tests/fuzz/frontdoor_fuzzer.c with clang-22's libFuzzer, ASan and
# UBSan (Bazel's toolchain here is gcc, which has no libFuzzer) over the
# core's sources, and fuzzes pbc's front door (parse guard, parser, input
# check, S1) for SECONDS (default 120), starting from the examples and the
# saved reproducers. Findings (crash-*, leak-*, timeout-*) land in
# build/fuzz/artifacts/; exit status non-zero if there was one.
#   tests/fuzz/libfuzzer.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-120}
bazel build //pipelines:core_pipelines //core:libpbc_mlir_capi.so //targets/cpu:libpbc_target_cpu.so >/dev/null
out=build/fuzz
mkdir -p "$out/obj" "$out/artifacts" "$out/corpus"
LLVM=/usr/lib/llvm-22
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -g -O1"
INC="-Icore -Icore/include -Iplugins/include -Icore/mlir-ext/include -I$LLVM/include"
objs=()
for f in $(find core -name "*.c" -not -path "core/mlir-ext/*") bazel-bin/pipelines/core_pipelines.c \
         tests/fuzz/frontdoor_fuzzer.c; do
  o="$out/obj/$(echo "$f" | tr / _).o"
  clang-22 -std=c11 -D_GNU_SOURCE -DPBC_LIBFUZZER -fsanitize=fuzzer-no-link $SAN $INC -c "$f" -o "$o"
  objs+=("$o")
done
for f in core/mlir-ext/*.cc; do
  o="$out/obj/$(echo "$f" | tr / _).o"
  clang++-22 -std=c++17 -fno-rtti $SAN $INC -c "$f" -o "$o"
  objs+=("$o")
done
capi=$(dirname "$(readlink -f bazel-bin/core/libpbc_mlir_capi.so)")
clang++-22 -fsanitize=fuzzer $SAN "${objs[@]}" -o "$out/frontdoor_fuzzer" \
  -L"$capi" -l:libpbc_mlir_capi.so -Wl,-rpath,"$capi" \
  -L$LLVM/lib -lMLIR -lLLVM -Wl,-rpath,$LLVM/lib -ldl -lm -lpthread
cp -f examples/*.mlir tests/differential/regressions/*.mlir "$out/corpus/"
plugin=$(dirname "$(readlink -f bazel-bin/targets/cpu/libpbc_target_cpu.so)")
# MLIR keeps its context and pass managers for the process: not leaks.
PBC_PLUGIN_PATH="$plugin" ASAN_OPTIONS=detect_leaks=0 \
  "$out/frontdoor_fuzzer" -max_total_time="$secs" -timeout=30 -rss_limit_mb=4096 \
  -artifact_prefix="$out/artifacts/" -print_final_stats=1 "$out/corpus"
