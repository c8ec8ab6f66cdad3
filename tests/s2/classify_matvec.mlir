// RUN: pbc-opt %s -p 'func.func(convert-linalg-to-affine-loops);pbc-classify-nests' | FileCheck %s

// matvec (mixed precision, extf on both operands): A[i,k] has every IV of
// y[i], x[k] lacks i; a contraction over k with reuse of x: matmul.

// CHECK-LABEL: func.func @matvec(
// CHECK:         arith.extf
// CHECK-NOT:     pbc.kind
// CHECK:         } {pbc.kind = "matmul"}
// CHECK-NEXT:    return
func.func @matvec(%a: memref<128x64xf16>, %x: memref<64xf16>,
                  %y: memref<128xf32>) {
  linalg.matvec ins(%a, %x : memref<128x64xf16>, memref<64xf16>)
                outs(%y : memref<128xf32>)
  return
}
