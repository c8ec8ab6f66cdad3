// An entry that slices a table of 512 positions by its sequence
// (torch-mlir's x[:, :n], n clamped to the table) and checks, as the ONNX
// importer does, that the slice is as long as the sequence: compiled with
// s0 <= 512, the clamp and the check gone (symbolic_sizes.mlir).
func.func @positions(%ids: tensor<1x?xi64>) -> tensor<1x?xi64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %cm1 = arith.constant -1 : index
  %table = arith.constant dense<7> : tensor<1x512xi64>
  %n = tensor.dim %ids, %c1 : tensor<1x?xi64>
  %neg = arith.cmpi slt, %n, %c0 : index
  %wrapped = arith.addi %n, %c512 : index
  %end0 = arith.select %neg, %wrapped, %n : index
  %neg2 = arith.cmpi slt, %end0, %c0 : index
  %end1 = arith.select %neg2, %cm1, %end0 : index
  %end2 = arith.minsi %end1, %c512 : index
  %end = arith.maxsi %end2, %c0 : index
  %ok = arith.cmpi sge, %end, %n : index
  cf.assert %ok, "the slice is as long as the sequence"
  %s = tensor.extract_slice %table[0, 0] [1, %end] [1, 1] : tensor<1x512xi64> to tensor<1x?xi64>
  %e = tensor.empty(%n) : tensor<1x?xi64>
  %r = linalg.add ins(%s, %ids : tensor<1x?xi64>, tensor<1x?xi64>) outs(%e : tensor<1x?xi64>) -> tensor<1x?xi64>
  return %r : tensor<1x?xi64>
}
