// blur.mlir — separable 5-tap binomial blur (the PolyBlocks paper's "blur").
// Two depthwise convolutions on an NHWC image with 3 channels:
//   horizontal 1x5 pass, then vertical 5x1 pass, taps (1, 4, 6, 4, 1) / 16.
//   x: 1x4100x4100x3 (image with a 2-pixel border)  ->  y: 1x4096x4096x3
// The paper's image size (its Fig. 6 blurs 3x4096x4096): the intermediate
// (200 MB) is far larger than any cache, as in a real 16-megapixel image.
// Ops: arith.constant (dense filter), linalg.fill,
// linalg.depthwise_conv_2d_nhwc_hwc.

func.func @blur(%x: tensor<1x4100x4100x3xf32>) -> tensor<1x4096x4096x3xf32> {
  %zero = arith.constant 0.0 : f32
  // Horizontal filter, HWC = 1x5x3.
  %wh = arith.constant dense<[[[0.0625, 0.0625, 0.0625], [0.25, 0.25, 0.25],
                               [0.375, 0.375, 0.375], [0.25, 0.25, 0.25],
                               [0.0625, 0.0625, 0.0625]]]> : tensor<1x5x3xf32>
  // Vertical filter, HWC = 5x1x3.
  %wv = arith.constant dense<[[[0.0625, 0.0625, 0.0625]], [[0.25, 0.25, 0.25]],
                              [[0.375, 0.375, 0.375]], [[0.25, 0.25, 0.25]],
                              [[0.0625, 0.0625, 0.0625]]]> : tensor<5x1x3xf32>

  %e1 = tensor.empty() : tensor<1x4100x4096x3xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4100x4096x3xf32>) -> tensor<1x4100x4096x3xf32>
  %h = linalg.depthwise_conv_2d_nhwc_hwc
         {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%x, %wh : tensor<1x4100x4100x3xf32>, tensor<1x5x3xf32>)
         outs(%z1 : tensor<1x4100x4096x3xf32>) -> tensor<1x4100x4096x3xf32>

  %e2 = tensor.empty() : tensor<1x4096x4096x3xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x4096x4096x3xf32>) -> tensor<1x4096x4096x3xf32>
  %y = linalg.depthwise_conv_2d_nhwc_hwc
         {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%h, %wv : tensor<1x4100x4096x3xf32>, tensor<5x1x3xf32>)
         outs(%z2 : tensor<1x4096x4096x3xf32>) -> tensor<1x4096x4096x3xf32>
  return %y : tensor<1x4096x4096x3xf32>
}
