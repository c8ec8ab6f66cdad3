// RUN: not pbc-opt %s -p 'pbc-verify-stage{stage=s1}' 2>&1 | FileCheck %s

// A tensor-typed function argument after S1 is reported on the function.

// CHECK: error: stage s1 contract violated: block argument #1 of 'func.func' has tensor type 'tensor<8x8xf32>'
func.func @f(%m: memref<4xf32>, %t: tensor<8x8xf32>) {
  return
}
