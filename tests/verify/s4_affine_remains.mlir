// RUN: not pbc-opt %s -p 'pbc-verify-stage{stage=s4}' 2>&1 | FileCheck %s

// Affine ops after S4 are violations; only the first offending op (in
// pre-order) is reported.

// CHECK: error: stage s4 contract violated: 'affine.for' remains after S4
// CHECK-NOT: contract violated
func.func @f(%m: memref<4xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 4 {
    affine.store %z, %m[%i] : memref<4xf32>
  } {pbc.kind = "pointwise"}
  return
}
func.func @g(%m: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %v = affine.load %m[%c0] : memref<4xf32>
  return
}
