// RUN: pbc-opt %s -p 'func.func(convert-linalg-to-affine-loops);pbc-classify-nests' | FileCheck %s

// Integer matmul with extsi and zero-point subtraction (subi of a value
// defined outside the nest) on each operand: matmul.

// CHECK-LABEL: func.func @qmatmul(
// CHECK:         arith.subi
// CHECK:         arith.muli
// CHECK-NOT:     pbc.kind
// CHECK:         } {pbc.kind = "matmul"}
// CHECK-NEXT:    return
func.func @qmatmul(%a: memref<16x32xi8>, %b: memref<32x8xi8>, %za: i32,
                   %zb: i32, %c: memref<16x8xi32>) {
  linalg.quantized_matmul
      ins(%a, %b, %za, %zb : memref<16x32xi8>, memref<32x8xi8>, i32, i32)
      outs(%c : memref<16x8xi32>)
  return
}
