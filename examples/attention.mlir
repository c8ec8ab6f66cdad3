// attention.mlir — scaled dot-product attention, one batch, 4 heads (f32).
//   S = (Q · K^T) / sqrt(d)     Q, K, V: 4x128x64 (heads x seq x d)
//   P = softmax(S)              over the key dimension
//   O = P · V                   O: 4x128x64
// Ops: linalg.generic (batched Q·K^T contraction and the scale),
// linalg.softmax, linalg.batch_matmul.

#map_q  = affine_map<(h, i, j, k) -> (h, i, k)>
#map_k  = affine_map<(h, i, j, k) -> (h, j, k)>
#map_s  = affine_map<(h, i, j, k) -> (h, i, j)>
#map_id = affine_map<(h, i, j) -> (h, i, j)>

func.func @attention(%q: tensor<4x128x64xf32>, %k: tensor<4x128x64xf32>,
                     %v: tensor<4x128x64xf32>) -> tensor<4x128x64xf32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.125 : f32   // 1/sqrt(64)

  // S[h,i,j] = sum_k Q[h,i,k] * K[h,j,k]
  %es = tensor.empty() : tensor<4x128x128xf32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<4x128x128xf32>) -> tensor<4x128x128xf32>
  %s = linalg.generic {indexing_maps = [#map_q, #map_k, #map_s],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<4x128x64xf32>, tensor<4x128x64xf32>)
      outs(%zs : tensor<4x128x128xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
  } -> tensor<4x128x128xf32>

  %ss = linalg.generic {indexing_maps = [#map_id, #map_id],
                        iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<4x128x128xf32>) outs(%es : tensor<4x128x128xf32>) {
    ^bb0(%a: f32, %o: f32):
      %r = arith.mulf %a, %scale : f32
      linalg.yield %r : f32
  } -> tensor<4x128x128xf32>

  %p = linalg.softmax dimension(2) ins(%ss : tensor<4x128x128xf32>)
                                   outs(%es : tensor<4x128x128xf32>) -> tensor<4x128x128xf32>

  %eo = tensor.empty() : tensor<4x128x64xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<4x128x64xf32>) -> tensor<4x128x64xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<4x128x128xf32>, tensor<4x128x64xf32>)
                           outs(%zo : tensor<4x128x64xf32>) -> tensor<4x128x64xf32>
  return %o : tensor<4x128x64xf32>
}
