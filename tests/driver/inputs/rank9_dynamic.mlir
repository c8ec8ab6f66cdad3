// A dynamic argument of a rank pbc does not pass (9 > 8).
func.func @f(%x: tensor<?x1x1x1x1x1x1x1x1xf32>) -> tensor<?x1x1x1x1x1x1x1x1xf32> {
  return %x : tensor<?x1x1x1x1x1x1x1x1xf32>
}
