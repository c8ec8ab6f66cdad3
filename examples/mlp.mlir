// mlp.mlir — a two-layer perceptron with a softmax head (f32, static shapes).
//   h = relu(x · W1 + b1)        x: 32x256, W1: 256x512, b1: 512
//   y = softmax(h · W2 + b2)     W2: 512x128, b2: 128, softmax over the last dim
// Ops: linalg.fill, linalg.matmul, linalg.generic (bias broadcast + relu),
// linalg.softmax.

#map_mat  = affine_map<(d0, d1) -> (d0, d1)>
#map_row  = affine_map<(d0, d1) -> (d1)>

func.func @mlp(%x: tensor<32x256xf32>, %w1: tensor<256x512xf32>,
               %b1: tensor<512xf32>, %w2: tensor<512x128xf32>,
               %b2: tensor<128xf32>) -> tensor<32x128xf32> {
  %zero = arith.constant 0.0 : f32

  // Layer 1: matmul, then bias + relu in one elementwise generic.
  %e1 = tensor.empty() : tensor<32x512xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<32x512xf32>) -> tensor<32x512xf32>
  %m1 = linalg.matmul ins(%x, %w1 : tensor<32x256xf32>, tensor<256x512xf32>)
                      outs(%z1 : tensor<32x512xf32>) -> tensor<32x512xf32>
  %h = linalg.generic {indexing_maps = [#map_mat, #map_row, #map_mat],
                       iterator_types = ["parallel", "parallel"]}
      ins(%m1, %b1 : tensor<32x512xf32>, tensor<512xf32>)
      outs(%e1 : tensor<32x512xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      %r = arith.maximumf %s, %zero : f32
      linalg.yield %r : f32
  } -> tensor<32x512xf32>

  // Layer 2: matmul + bias.
  %e2 = tensor.empty() : tensor<32x128xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<32x128xf32>) -> tensor<32x128xf32>
  %m2 = linalg.matmul ins(%h, %w2 : tensor<32x512xf32>, tensor<512x128xf32>)
                      outs(%z2 : tensor<32x128xf32>) -> tensor<32x128xf32>
  %logits = linalg.generic {indexing_maps = [#map_mat, #map_row, #map_mat],
                            iterator_types = ["parallel", "parallel"]}
      ins(%m2, %b2 : tensor<32x128xf32>, tensor<128xf32>)
      outs(%e2 : tensor<32x128xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
  } -> tensor<32x128xf32>

  // Softmax over the class dimension.
  %y = linalg.softmax dimension(1) ins(%logits : tensor<32x128xf32>)
                                   outs(%e2 : tensor<32x128xf32>) -> tensor<32x128xf32>
  return %y : tensor<32x128xf32>
}
