// RUN: pbc-opt %s -p 'func.func(convert-linalg-to-affine-loops);pbc-classify-nests' | FileCheck %s

// A transpose reads with the store's IVs permuted: pointwise.

// CHECK-LABEL: func.func @transpose(
// CHECK-NOT:     pbc.kind
// CHECK:         } {pbc.kind = "pointwise"}
// CHECK-NEXT:    return
func.func @transpose(%a: memref<16x32x8xf32>, %o: memref<8x16x32xf32>) {
  linalg.transpose ins(%a : memref<16x32x8xf32>)
                   outs(%o : memref<8x16x32xf32>) permutation = [2, 0, 1]
  return
}
