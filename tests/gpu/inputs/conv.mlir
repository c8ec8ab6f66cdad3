// f16 3x3 convolution, stride 2 (NHWC, HWCF), f32 output: an implicit GEMM
// with M = 16*16, N = 64, K = 3*3*32.
func.func @conv(%x: tensor<1x33x33x32xf16>, %w: tensor<3x3x32x64xf16>) -> tensor<1x16x16x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x16x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<1x33x33x32xf16>, tensor<3x3x32x64xf16>) outs(%f : tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32>
  return %r : tensor<1x16x16x64xf32>
}
