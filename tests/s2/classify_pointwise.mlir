// RUN: pbc-opt %s -p 'func.func(convert-linalg-to-affine-loops);pbc-classify-nests' | FileCheck %s

// Elementwise generic: every load uses the store's IVs: pointwise.

#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @add(
// CHECK-NOT:     pbc.kind
// CHECK:         arith.addf
// CHECK-NOT:     pbc.kind
// CHECK:         } {pbc.kind = "pointwise"}
// CHECK-NEXT:    return
func.func @add(%a: memref<16x32xf32>, %b: memref<16x32xf32>,
               %o: memref<16x32xf32>) {
  linalg.generic {indexing_maps = [#id, #id, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : memref<16x32xf32>, memref<16x32xf32>)
      outs(%o : memref<16x32xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %s = arith.addf %x, %y : f32
    %e = math.exp %s : f32
    linalg.yield %e : f32
  }
  return
}
