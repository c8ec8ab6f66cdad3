func.func @mm(%a: tensor<128x64xi8>, %b: tensor<64x96xi8>) -> tensor<128x96xi32> {
  %z = arith.constant 0 : i32
  %e = tensor.empty() : tensor<128x96xi32>
  %f = linalg.fill ins(%z : i32) outs(%e : tensor<128x96xi32>) -> tensor<128x96xi32>
  %r = linalg.matmul ins(%a, %b : tensor<128x64xi8>, tensor<64x96xi8>) outs(%f : tensor<128x96xi32>) -> tensor<128x96xi32>
  return %r : tensor<128x96xi32>
}

