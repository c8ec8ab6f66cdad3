// RUN: not pbc-opt %s -p 'pbc-verify-stage{stage=s5}' 2>&1 | FileCheck %s

// After S5 only the llvm dialect (and gpu.binary) may remain.

// CHECK: error: stage s5 contract violated: 'func.func' remains after S5 (expected only llvm and omp dialect ops, gpu.binary and gpu.launch_func)
llvm.func @ok() {
  llvm.return
}
func.func @f() {
  return
}
