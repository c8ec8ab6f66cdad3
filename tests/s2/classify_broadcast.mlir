// RUN: pbc-opt %s -p 'func.func(convert-linalg-to-affine-loops);pbc-classify-nests' | FileCheck %s

// Bias add over rows: the bias load uses only j, a strict subset of the
// store's {i, j}: broadcast.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @bias_add(
// CHECK-NOT:     pbc.kind
// CHECK:         } {pbc.kind = "broadcast"}
// CHECK-NEXT:    return
func.func @bias_add(%a: memref<16x32xf32>, %bias: memref<32xf32>,
                    %o: memref<16x32xf32>) {
  linalg.generic {indexing_maps = [#id, #row, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a, %bias : memref<16x32xf32>, memref<32xf32>)
      outs(%o : memref<16x32xf32>) {
  ^bb0(%x: f32, %b: f32, %z: f32):
    %s = arith.addf %x, %b : f32
    linalg.yield %s : f32
  }
  return
}
