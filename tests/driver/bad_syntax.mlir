// A syntax error is reported at its file:line:col with a non-zero exit.
// RUN: not pbc --emit=s1 %s 2>&1 | FileCheck %s
// CHECK: bad_syntax.mlir:[[# @LINE + 2]]:{{[0-9]+}}: error:
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32
  return %0 : tensor<4xf32>
}
