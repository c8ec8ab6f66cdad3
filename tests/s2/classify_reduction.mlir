// RUN: pbc-opt %s -p 'func.func(convert-linalg-to-affine-loops);pbc-classify-nests' | FileCheck %s

// Row sum: the k loop is absent from the store (a reduction loop) and the
// stored value accumulates into o[i]; no product: reduction.

// CHECK-LABEL: func.func @row_sum(
// CHECK-NOT:     pbc.kind
// CHECK:         } {pbc.kind = "reduction"}
// CHECK-NEXT:    return
func.func @row_sum(%a: memref<16x32xf32>, %o: memref<16xf32>) {
  linalg.reduce ins(%a : memref<16x32xf32>) outs(%o : memref<16xf32>)
      dimensions = [1]
    (%x: f32, %acc: f32) {
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
    }
  return
}
