// RUN: pbc-opt %s -p 'func.func(convert-linalg-to-affine-loops);pbc-classify-nests' | FileCheck %s

// Depthwise conv: the input carries every output IV (n, oh, ow, c) but the
// filter lacks n, oh, ow, and both are contracted over kh, kw: matmul.

// CHECK-LABEL: func.func @depthwise(
// CHECK-NOT:     pbc.kind
// CHECK:         } {pbc.kind = "matmul"}
// CHECK-NEXT:    return
func.func @depthwise(%i: memref<1x18x18x32xf32>, %f: memref<3x3x32xf32>,
                     %o: memref<1x8x8x32xf32>) {
  linalg.depthwise_conv_2d_nhwc_hwc
      {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%i, %f : memref<1x18x18x32xf32>, memref<3x3x32xf32>)
      outs(%o : memref<1x8x8x32xf32>)
  return
}
