// pbc-decompose-aggregates gives TOSA's convolutions (filter F x KH x KW x C)
// the filter layout S3 tiles: conv_2d_nhwc_hwcf on a transposed filter copy.
// A conv already in hwcf form is left alone.
// RUN: pbc-opt %s -p 'pbc-decompose-aggregates' | FileCheck %s
// CHECK-LABEL: func.func @fhwc
// CHECK-NOT: linalg.conv_2d_nhwc_fhwc
// CHECK: linalg.transpose ins(%{{.*}} : tensor<16x3x3x8xf32>) outs(%{{.*}} : tensor<3x3x8x16xf32>) permutation = [1, 2, 3, 0]
// CHECK: linalg.conv_2d_nhwc_hwcf
// CHECK-SAME: tensor<1x10x10x8xf32>, tensor<3x3x8x16xf32>
func.func @fhwc(%x: tensor<1x10x10x8xf32>, %w: tensor<16x3x3x8xf32>, %o: tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32> {
  %r = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<1x10x10x8xf32>, tensor<16x3x3x8xf32>) outs(%o : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  return %r : tensor<1x8x8x16xf32>
}
// CHECK-LABEL: func.func @hwcf
// CHECK-NOT: linalg.transpose
// CHECK: linalg.conv_2d_nhwc_hwcf
func.func @hwcf(%x: tensor<1x10x10x8xf32>, %w: tensor<3x3x8x16xf32>, %o: tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32> {
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<1x10x10x8xf32>, tensor<3x3x8x16xf32>) outs(%o : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  return %r : tensor<1x8x8x16xf32>
}
