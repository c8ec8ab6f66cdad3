// RUN: pbc-opt %s -p 'pbc-verify-stage{stage=s3}' | FileCheck %s

// Root affine.for and affine.parallel with pbc.kind pass; loops nested in
// them need no kind.

// CHECK-LABEL: func.func @f(
// CHECK:         affine.parallel
// CHECK:         affine.for
func.func @f(%a: memref<16x16xf32>, %o: memref<16x16xf32>) {
  affine.parallel (%i) = (0) to (16) {
    affine.for %j = 0 to 16 {
      %x = affine.load %a[%i, %j] : memref<16x16xf32>
      affine.store %x, %o[%i, %j] : memref<16x16xf32>
    }
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 16 {
    affine.parallel (%j) = (0) to (16) {
      %x = affine.load %a[%i, %j] : memref<16x16xf32>
      affine.store %x, %o[%j, %i] : memref<16x16xf32>
    }
  } {pbc.kind = "pointwise"}
  return
}
