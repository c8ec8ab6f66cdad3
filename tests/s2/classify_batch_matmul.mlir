// RUN: pbc-opt %s -p 'func.func(convert-linalg-to-affine-loops);pbc-classify-nests' | FileCheck %s

// batch_matmul: the batch IV is in the store and both operands; each operand
// still lacks one of i, j.

// CHECK-LABEL: func.func @batch_matmul(
// CHECK-NOT:     pbc.kind
// CHECK:         } {pbc.kind = "matmul"}
// CHECK-NEXT:    return
func.func @batch_matmul(%a: memref<8x16x32xf32>, %b: memref<8x32x64xf32>,
                        %c: memref<8x16x64xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<8x16x32xf32>, memref<8x32x64xf32>)
                      outs(%c : memref<8x16x64xf32>)
  return
}
