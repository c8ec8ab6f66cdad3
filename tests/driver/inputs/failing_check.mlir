// A check that folds to false (sizes a shape contradicts).
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %false = arith.constant false
  cf.assert %false, "sizes must agree"
  return %x : tensor<4xf32>
}
