// A convolution stride below 1 is a located error (MLIR's verifier let this
// one through; the code read outside its input and gave garbage).
// RUN: not pbc --emit=s1 %s 2>&1 | FileCheck %s
// CHECK: conv_stride.mlir:[[# @LINE + 2]]:{{[0-9]+}}: error: 'linalg.conv_2d_nchw_fchw' strides must be at least 1
func.func @f(%x: tensor<2x32x8x10xf16>, %w: tensor<32x32x5x1xf16>, %o: tensor<2x32x4x10xf16>) -> tensor<2x32x4x10xf16> {
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<[1, 1]> : tensor<2xi64>, strides = dense<[-1, 1]> : tensor<2xi64>}
         ins(%x, %w : tensor<2x32x8x10xf16>, tensor<32x32x5x1xf16>) outs(%o : tensor<2x32x4x10xf16>) -> tensor<2x32x4x10xf16>
  return %r : tensor<2x32x4x10xf16>
}
