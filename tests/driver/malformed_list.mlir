// A malformed `permutation` list (linalg.transpose's custom syntax) is a
// located error; MLIR 22's parser crashed after reporting it.
// RUN: not pbc --emit=s1 %s 2>&1 | FileCheck %s
// CHECK: malformed_list.mlir:[[# @LINE + 4]]:{{[0-9]+}}: error: 'permutation' must be a list of integers
// CHECK-NOT: crash
func.func @f(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x4xf32>
  %t = linalg.transpose ins(%a : tensor<4x8xf32>) outs(%e : tensor<8x4xf32>) permutation = [1, 99999999999999999999]
  return %t : tensor<8x4xf32>
}
