func.func @bmm(%a: tensor<4x32x64xf16>, %b: tensor<4x64x48xf16>) -> tensor<4x32x48xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x32x48xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x32x48xf32>) -> tensor<4x32x48xf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<4x32x64xf16>, tensor<4x64x48xf16>) outs(%f : tensor<4x32x48xf32>) -> tensor<4x32x48xf32>
  return %r : tensor<4x32x48xf32>
}

