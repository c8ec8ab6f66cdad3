// RUN: not pbc-opt %s -p 'pbc-verify-stage{stage=s3}' 2>&1 | FileCheck %s

// After S3, a root affine.parallel must carry pbc.kind too (S3 passes that
// rebuild loops must propagate it).

// CHECK: error: stage s3 contract violated: 'affine.parallel' root loop has no pbc.kind attribute
func.func @f(%a: memref<16xf32>, %o: memref<16xf32>) {
  affine.parallel (%i) = (0) to (16) {
    %x = affine.load %a[%i] : memref<16xf32>
    affine.store %x, %o[%i] : memref<16xf32>
  }
  return
}
