// A 2048x2048 projection with a short inner dimension (K = 128), then bias
// and ReLU: the epilogue's pass over C (16 MB) is a tenth of the work, so
// fusing it into the matmul's register tiles (pbc-fuse-epilogue) shows.
#map_mat = affine_map<(d0, d1) -> (d0, d1)>
#map_row = affine_map<(d0, d1) -> (d1)>
func.func @matmul_bias_relu(%x: tensor<2048x128xf32>, %w: tensor<128x2048xf32>,
                            %b: tensor<2048xf32>) -> tensor<2048x2048xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2048x2048xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  %m = linalg.matmul ins(%x, %w : tensor<2048x128xf32>, tensor<128x2048xf32>)
                     outs(%z : tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  %y = linalg.generic {indexing_maps = [#map_mat, #map_row, #map_mat],
                       iterator_types = ["parallel", "parallel"]}
      ins(%m, %b : tensor<2048x2048xf32>, tensor<2048xf32>) outs(%e : tensor<2048x2048xf32>) {
    ^bb0(%a: f32, %bb: f32, %o: f32):
      %s = arith.addf %a, %bb : f32
      %r = arith.maximumf %s, %zero : f32
      linalg.yield %r : f32
  } -> tensor<2048x2048xf32>
  return %y : tensor<2048x2048xf32>
}
