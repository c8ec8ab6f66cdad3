// An op outside the accepted dialects is named, with its location.
// RUN: not pbc --emit=s1 %s 2>&1 | FileCheck %s
// CHECK: unsupported_op.mlir:[[# @LINE + 3]]:8: error: unsupported op 'memref.alloc'
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %m = memref.alloc() : memref<4xf32>
  return %a : tensor<4xf32>
}
