// RUN: pbc-opt %s -p 'func.func(convert-linalg-to-affine-loops);pbc-classify-nests' | FileCheck %s

// A fill stores a loop-invariant value and loads nothing: pointwise.

// CHECK-LABEL: func.func @fill(
// CHECK-NOT:     pbc.kind
// CHECK:         } {pbc.kind = "pointwise"}
// CHECK-NEXT:    return
func.func @fill(%o: memref<16x32xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%o : memref<16x32xf32>)
  return
}
