// RUN: not pbc-opt %s -p 'pbc-verify-stage{stage=s5}' 2>&1 | FileCheck %s

// An unserialized gpu.module is a violation after S5 (gpu.binary is not).

// CHECK: error: stage s5 contract violated: 'gpu.module' remains after S5
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @k() {
      llvm.return
    }
  }
}
