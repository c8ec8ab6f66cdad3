// RUN: pbc-opt %s -p 'func.func(convert-linalg-to-affine-loops);pbc-classify-nests' | FileCheck %s

// A generic with two outputs becomes a nest with stores to two memrefs: misc.

#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @two_outputs(
// CHECK:         affine.store
// CHECK:         affine.store
// CHECK-NOT:     pbc.kind
// CHECK:         } {pbc.kind = "misc"}
// CHECK-NEXT:    return
func.func @two_outputs(%a: memref<16x32xf32>, %o1: memref<16x32xf32>,
                       %o2: memref<16x32xf32>) {
  linalg.generic {indexing_maps = [#id, #id, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<16x32xf32>)
      outs(%o1, %o2 : memref<16x32xf32>, memref<16x32xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %n = arith.negf %x : f32
    linalg.yield %x, %n : f32, f32
  }
  return
}
