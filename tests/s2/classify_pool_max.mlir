// RUN: pbc-opt %s -p 'func.func(convert-linalg-to-affine-loops);pbc-classify-nests' | FileCheck %s

// Max pooling: reduction loops over the window, accumulation by maximumf
// (no product, and the window memref is never loaded): reduction.

// CHECK-LABEL: func.func @pool_max(
// CHECK:         arith.maximumf
// CHECK-NOT:     pbc.kind
// CHECK:         } {pbc.kind = "reduction"}
// CHECK-NEXT:    return
func.func @pool_max(%i: memref<1x16x16x8xf32>, %w: memref<2x2xf32>,
                    %o: memref<1x8x8x8xf32>) {
  linalg.pooling_nhwc_max
      {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%i, %w : memref<1x16x16x8xf32>, memref<2x2xf32>)
      outs(%o : memref<1x8x8x8xf32>)
  return
}
