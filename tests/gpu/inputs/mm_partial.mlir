// 100x72 . 72x96: M and K are not multiples of the tiles (partial tiles).
func.func @mm(%a: tensor<100x72xf16>, %b: tensor<72x96xf16>) -> tensor<100x96xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<100x96xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<100x96xf32>) -> tensor<100x96xf32>
  %r = linalg.matmul ins(%a, %b : tensor<100x72xf16>, tensor<72x96xf16>) outs(%f : tensor<100x96xf32>) -> tensor<100x96xf32>
  return %r : tensor<100x96xf32>
}
