func.func @matmul_i8(%a: tensor<128x256xi8>, %b: tensor<256x192xi8>) -> tensor<128x192xi32> {
  %z = arith.constant 0 : i32
  %e = tensor.empty() : tensor<128x192xi32>
  %f = linalg.fill ins(%z : i32) outs(%e : tensor<128x192xi32>) -> tensor<128x192xi32>
  %r = linalg.matmul ins(%a, %b : tensor<128x256xi8>, tensor<256x192xi8>) outs(%f : tensor<128x192xi32>) -> tensor<128x192xi32>
  return %r : tensor<128x192xi32>
}
