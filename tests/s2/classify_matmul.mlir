// RUN: pbc-opt %s -p 'func.func(convert-linalg-to-affine-loops);pbc-classify-nests' | FileCheck %s

// linalg.matmul becomes a 3-deep nest C[i,j] += A[i,k] * B[k,j]: the root
// loop (only it) is tagged matmul.

// CHECK-LABEL: func.func @matmul(
// CHECK-NOT:     pbc.kind
// CHECK:         arith.mulf
// CHECK-NOT:     pbc.kind
// CHECK:         } {pbc.kind = "matmul"}
// CHECK-NEXT:    return
func.func @matmul(%a: memref<64x32xf32>, %b: memref<32x128xf32>,
                  %c: memref<64x128xf32>) {
  linalg.matmul ins(%a, %b : memref<64x32xf32>, memref<32x128xf32>)
                outs(%c : memref<64x128xf32>)
  return
}
