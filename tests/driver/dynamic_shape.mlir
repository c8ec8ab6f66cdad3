// Dynamic shapes are rejected at the function, with the reason.
// RUN: not pbc --emit=s1 %s 2>&1 | FileCheck %s
// CHECK: dynamic_shape.mlir:[[# @LINE + 1]]:1: error: argument 0 of @f: dynamic shapes are not supported
func.func @f(%a: tensor<?xf32>) -> tensor<?xf32> {
  return %a : tensor<?xf32>
}
