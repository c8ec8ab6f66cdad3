// RUN: not pbc-opt %s -p 'pbc-verify-stage{stage=s2}' 2>&1 | FileCheck %s

// A linalg op left on memrefs after S2 is reported by name.

// CHECK: error: stage s2 contract violated: 'linalg.matmul' remains after S2 (expected affine loop nests)
func.func @f(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>)
                outs(%c : memref<4x16xf32>)
  return
}
