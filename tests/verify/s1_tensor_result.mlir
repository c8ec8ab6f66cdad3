// RUN: not pbc-opt %s -p 'pbc-verify-stage{stage=s1}' 2>&1 | FileCheck %s

// A tensor-typed op result after S1 is reported on that op.

// CHECK: error: stage s1 contract violated: result #0 of 'tensor.empty' has tensor type 'tensor<4xf32>'
func.func @f(%m: memref<4xf32>) {
  %t = tensor.empty() : tensor<4xf32>
  return
}
