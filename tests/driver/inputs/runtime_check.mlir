// A check of a value outside any linalg body: not pbc's to decide.
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %v = tensor.extract %x[%c0] : tensor<4xf32>
  %z = arith.constant 0.0 : f32
  %pos = arith.cmpf ogt, %v, %z : f32
  cf.assert %pos, "must be positive"
  return %x : tensor<4xf32>
}
