// RUN: pbc-opt %s -p 'pbc-verify-stage{stage=s5}' | FileCheck %s

// llvm dialect ops, nested builtin.module and gpu.binary satisfy s5.

// CHECK: gpu.binary @kernels
// CHECK: llvm.func @main
module attributes {gpu.container_module} {
  gpu.binary @kernels [#gpu.object<#nvvm.target, "BLOB">]
  llvm.func @main(%arg0: i64) -> i64 {
    %0 = llvm.mlir.constant(1 : i64) : i64
    %1 = llvm.add %arg0, %0 : i64
    llvm.return %1 : i64
  }
}
