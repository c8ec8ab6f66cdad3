// RUN: pbc-opt %s -p 'func.func(convert-linalg-to-affine-loops);pbc-classify-nests;pbc-verify-stage{stage=s2}' | FileCheck %s

// Real S2 output (lowered and classified) satisfies the s2 contract; only
// root loops need pbc.kind.

// CHECK-LABEL: func.func @f(
// CHECK:         } {pbc.kind = "pointwise"}
// CHECK:         } {pbc.kind = "matmul"}
func.func @f(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%c : memref<4x16xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>)
                outs(%c : memref<4x16xf32>)
  return
}
