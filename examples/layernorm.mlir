// layernorm.mlir — layer normalization over the last dimension (f32).
//   mean = sum_j x[i,j] / 768
//   var  = sum_j (x[i,j] - mean[i])^2 / 768
//   y    = (x - mean) * rsqrt(var + 1e-5) * gamma + beta
//   x: 128x768, gamma, beta: 768  ->  y: 128x768
// Ops: linalg.fill, linalg.generic (two row reductions, broadcasts,
// elementwise), math.rsqrt.

#map_mat = affine_map<(i, j) -> (i, j)>
#map_i   = affine_map<(i, j) -> (i)>
#map_j   = affine_map<(i, j) -> (j)>

func.func @layernorm(%x: tensor<128x768xf32>, %gamma: tensor<768xf32>,
                     %beta: tensor<768xf32>) -> tensor<128x768xf32> {
  %zero = arith.constant 0.0 : f32
  %inv_n = arith.constant 0.00130208333 : f32   // 1/768
  %eps = arith.constant 1.0e-5 : f32

  // Row sums -> mean.
  %er = tensor.empty() : tensor<128xf32>
  %zr = linalg.fill ins(%zero : f32) outs(%er : tensor<128xf32>) -> tensor<128xf32>
  %sum = linalg.generic {indexing_maps = [#map_mat, #map_i],
                         iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<128x768xf32>) outs(%zr : tensor<128xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %r = arith.addf %acc, %a : f32
      linalg.yield %r : f32
  } -> tensor<128xf32>
  %mean = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                          iterator_types = ["parallel"]}
      ins(%sum : tensor<128xf32>) outs(%er : tensor<128xf32>) {
    ^bb0(%a: f32, %o: f32):
      %r = arith.mulf %a, %inv_n : f32
      linalg.yield %r : f32
  } -> tensor<128xf32>

  // Sum of squared deviations (mean broadcast along j).
  %sq = linalg.generic {indexing_maps = [#map_mat, #map_i, #map_i],
                        iterator_types = ["parallel", "reduction"]}
      ins(%x, %mean : tensor<128x768xf32>, tensor<128xf32>) outs(%zr : tensor<128xf32>) {
    ^bb0(%a: f32, %m: f32, %acc: f32):
      %d = arith.subf %a, %m : f32
      %d2 = arith.mulf %d, %d : f32
      %r = arith.addf %acc, %d2 : f32
      linalg.yield %r : f32
  } -> tensor<128xf32>

  // rstd = rsqrt(var + eps)
  %rstd = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                          iterator_types = ["parallel"]}
      ins(%sq : tensor<128xf32>) outs(%er : tensor<128xf32>) {
    ^bb0(%a: f32, %o: f32):
      %v = arith.mulf %a, %inv_n : f32
      %ve = arith.addf %v, %eps : f32
      %r = math.rsqrt %ve : f32
      linalg.yield %r : f32
  } -> tensor<128xf32>

  // y = (x - mean) * rstd * gamma + beta
  %ey = tensor.empty() : tensor<128x768xf32>
  %y = linalg.generic {indexing_maps = [#map_mat, #map_i, #map_i, #map_j, #map_j, #map_mat],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %mean, %rstd, %gamma, %beta
          : tensor<128x768xf32>, tensor<128xf32>, tensor<128xf32>, tensor<768xf32>, tensor<768xf32>)
      outs(%ey : tensor<128x768xf32>) {
    ^bb0(%a: f32, %m: f32, %rs: f32, %g: f32, %b: f32, %o: f32):
      %d = arith.subf %a, %m : f32
      %n = arith.mulf %d, %rs : f32
      %s = arith.mulf %n, %g : f32
      %r = arith.addf %s, %b : f32
      linalg.yield %r : f32
  } -> tensor<128x768xf32>
  return %y : tensor<128x768xf32>
}
