#!/bin/bash
# Builds pbc with Bazel (offline) and assembles build/bin: pbc, pbc-opt,
# libpbc.so (the embedding API), the shared MLIR C API library and the in-tree
# plugins side by side (pbc and libpbc find plugins next to themselves).
set -euo pipefail
cd "$(dirname "$0")/.."
bazel build //tools/pbc //tools/pbc-opt //targets/cpu:libpbc_target_cpu.so \
  //targets/cpu:libpbc_cpu_runtime.so \
  //targets/nvgpu:libpbc_target_nvgpu.so //targets/nvgpu:libpbc_nvgpu_runtime.so \
  //targets/amdgpu:libpbc_target_amdgpu.so //targets/amdgpu:libpbc_amdgpu_runtime.so \
  //plugins/template:libpbc_target_template.so //core:libpbc_mlir_capi.so \
  //tools/libpbc:libpbc.so
mkdir -p build/bin
for f in tools/pbc/pbc tools/pbc-opt/pbc-opt core/libpbc_mlir_capi.so \
         targets/cpu/libpbc_target_cpu.so targets/cpu/libpbc_cpu_runtime.so \
         plugins/template/libpbc_target_template.so \
         targets/nvgpu/libpbc_target_nvgpu.so targets/nvgpu/libpbc_nvgpu_runtime.so \
         targets/amdgpu/libpbc_target_amdgpu.so targets/amdgpu/libpbc_amdgpu_runtime.so \
         tools/libpbc/libpbc.so; do
  install -m 755 "bazel-bin/$f" build/bin/
done
echo "built: build/bin/pbc"
