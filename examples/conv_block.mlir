// conv_block.mlir — a ResNet-style 3x3 convolution block (f32, NHWC).
//   y = relu(conv3x3(pad1(x), W) + b)
//   x: 1x56x56x64 (NHWC), W: 3x3x64x64 (HWCF), b: 64  ->  y: 1x56x56x64
// Ops: tensor.pad, linalg.fill, linalg.conv_2d_nhwc_hwcf, linalg.generic
// (bias broadcast + relu).

#map_nhwc = affine_map<(n, h, w, c) -> (n, h, w, c)>
#map_c    = affine_map<(n, h, w, c) -> (c)>

func.func @conv_block(%x: tensor<1x56x56x64xf32>, %w: tensor<3x3x64x64xf32>,
                      %b: tensor<64xf32>) -> tensor<1x56x56x64xf32> {
  %zero = arith.constant 0.0 : f32

  // Zero padding of 1 on H and W.
  %xp = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
    ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
      tensor.yield %zero : f32
  } : tensor<1x56x56x64xf32> to tensor<1x58x58x64xf32>

  %e = tensor.empty() : tensor<1x56x56x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  %conv = linalg.conv_2d_nhwc_hwcf
            {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
            ins(%xp, %w : tensor<1x58x58x64xf32>, tensor<3x3x64x64xf32>)
            outs(%z : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>

  %y = linalg.generic {indexing_maps = [#map_nhwc, #map_c, #map_nhwc],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%conv, %b : tensor<1x56x56x64xf32>, tensor<64xf32>)
      outs(%e : tensor<1x56x56x64xf32>) {
    ^bb0(%a: f32, %bb: f32, %o: f32):
      %s = arith.addf %a, %bb : f32
      %r = arith.maximumf %s, %zero : f32
      linalg.yield %r : f32
  } -> tensor<1x56x56x64xf32>
  return %y : tensor<1x56x56x64xf32>
}
