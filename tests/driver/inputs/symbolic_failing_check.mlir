// A check of the sizes that fails for some sequences the entry could take
// (3 n <= 1000, n up to 512): no one compile (symbolic_sizes.mlir).
func.func @checked(%ids: tensor<1x?xi64>) -> tensor<1x?xi64> {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c1000 = arith.constant 1000 : index
  %table = arith.constant dense<7> : tensor<1x512xi64>
  %n = tensor.dim %ids, %c1 : tensor<1x?xi64>
  %t = arith.muli %n, %c3 : index
  %ok = arith.cmpi sle, %t, %c1000 : index
  cf.assert %ok, "three times the sequence fits"
  %s = tensor.extract_slice %table[0, 0] [1, %n] [1, 1] : tensor<1x512xi64> to tensor<1x?xi64>
  %e = tensor.empty(%n) : tensor<1x?xi64>
  %r = linalg.add ins(%s, %ids : tensor<1x?xi64>, tensor<1x?xi64>) outs(%e : tensor<1x?xi64>) -> tensor<1x?xi64>
  return %r : tensor<1x?xi64>
}
