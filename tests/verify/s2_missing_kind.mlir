// RUN: not pbc-opt %s -p 'func.func(convert-linalg-to-affine-loops);pbc-verify-stage{stage=s2}' 2>&1 | FileCheck %s

// Lowered to affine loops but not classified: the root affine.for lacks
// pbc.kind.

// CHECK: error: stage s2 contract violated: 'affine.for' root loop has no pbc.kind attribute
func.func @f(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>)
                outs(%c : memref<4x16xf32>)
  return
}
