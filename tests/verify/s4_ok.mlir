// RUN: pbc-opt %s -p 'func.func(lower-affine);pbc-verify-stage{stage=s4}' | FileCheck %s

// Affine code lowered to scf satisfies the s4 contract.

// CHECK-LABEL: func.func @f(
// CHECK:         scf.for
// CHECK-NOT:     affine.
func.func @f(%m: memref<4xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 4 {
    affine.store %z, %m[%i] : memref<4xf32>
  } {pbc.kind = "pointwise"}
  return
}
