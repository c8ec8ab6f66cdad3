// RUN: pbc-opt %s -p 'func.func(convert-linalg-to-affine-loops);pbc-classify-nests' | FileCheck %s

// Convolutions are matmul-like: the input is indexed through affine.apply
// (oh * stride + kh * dilation), which the classifier looks through.

// CHECK-LABEL: func.func @conv_strided(
// CHECK:         affine.apply
// CHECK-NOT:     pbc.kind
// CHECK:         } {pbc.kind = "matmul"}
// CHECK-NEXT:    return
func.func @conv_strided(%i: memref<1x17x17x3xf32>, %f: memref<3x3x3x8xf32>,
                        %o: memref<1x8x8x8xf32>) {
  linalg.conv_2d_nhwc_hwcf
      {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%i, %f : memref<1x17x17x3xf32>, memref<3x3x3x8xf32>)
      outs(%o : memref<1x8x8x8xf32>)
  return
}

// CHECK-LABEL: func.func @conv_dilated(
// CHECK-NOT:     pbc.kind
// CHECK:         } {pbc.kind = "matmul"}
// CHECK-NEXT:    return
func.func @conv_dilated(%i: memref<2x12x12x4xf32>, %f: memref<3x3x4x16xf32>,
                        %o: memref<2x8x8x16xf32>) {
  linalg.conv_2d_nhwc_hwcf
      {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%i, %f : memref<2x12x12x4xf32>, memref<3x3x4x16xf32>)
      outs(%o : memref<2x8x8x16xf32>)
  return
}
