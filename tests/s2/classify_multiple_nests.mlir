// RUN: pbc-opt %s -p 'func.func(convert-linalg-to-affine-loops);pbc-classify-nests' | FileCheck %s

// Each root nest of a function is classified on its own: fill then matmul.

// CHECK-LABEL: func.func @fill_matmul(
// CHECK:         } {pbc.kind = "pointwise"}
// CHECK-NOT:     pbc.kind
// CHECK:         } {pbc.kind = "matmul"}
// CHECK-NEXT:    return
func.func @fill_matmul(%a: memref<64x32xf32>, %b: memref<32x128xf32>,
                       %c: memref<64x128xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<64x128xf32>)
  linalg.matmul ins(%a, %b : memref<64x32xf32>, memref<32x128xf32>)
                outs(%c : memref<64x128xf32>)
  return
}
