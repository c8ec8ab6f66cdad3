// RUN: pbc-opt %s -p 'pbc-verify-stage{stage=s1}' | FileCheck %s

// Tensor-typed arith.constant results are allowed after S1; memref code passes.

// CHECK-LABEL: func.func @f(
// CHECK:         arith.constant dense<1.000000e+00> : tensor<4xf32>
func.func @f(%m: memref<4xf32>) {
  %c = arith.constant dense<1.0> : tensor<4xf32>
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%m : memref<4xf32>)
  return
}
