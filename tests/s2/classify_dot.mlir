// RUN: pbc-opt %s -p 'func.func(convert-linalg-to-affine-loops);pbc-classify-nests' | FileCheck %s

// Products summed without reuse are reductions, not matmul: in a dot product
// the store has no IV at all, and in a row-wise dot both operands carry
// every IV of the store.

#ik = affine_map<(d0, d1) -> (d0, d1)>
#i = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @dot(
// CHECK-NOT:     pbc.kind
// CHECK:         } {pbc.kind = "reduction"}
// CHECK-NEXT:    return
func.func @dot(%a: memref<64xf32>, %b: memref<64xf32>, %o: memref<f32>) {
  linalg.dot ins(%a, %b : memref<64xf32>, memref<64xf32>) outs(%o : memref<f32>)
  return
}

// CHECK-LABEL: func.func @row_dot(
// CHECK-NOT:     pbc.kind
// CHECK:         } {pbc.kind = "reduction"}
// CHECK-NEXT:    return
func.func @row_dot(%a: memref<16x32xf32>, %b: memref<16x32xf32>,
                   %o: memref<16xf32>) {
  linalg.generic {indexing_maps = [#ik, #ik, #i],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a, %b : memref<16x32xf32>, memref<16x32xf32>)
      outs(%o : memref<16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
