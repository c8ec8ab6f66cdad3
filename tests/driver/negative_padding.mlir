// A tensor.pad with a negative padding is a located error (MLIR's verifier
// accepts it; bufferization crashed on it).
// RUN: not pbc --emit=s1 %s 2>&1 | FileCheck %s
// CHECK: negative_padding.mlir:[[# @LINE + 4]]:{{[0-9]+}}: error: 'tensor.pad' with a negative padding is not supported
// CHECK-NOT: crash
func.func @f(%a: tensor<8xf32>) -> tensor<6xf32> {
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %a low[1] high[-3] {
  ^bb0(%i: index):
    tensor.yield %z : f32
  } : tensor<8xf32> to tensor<6xf32>
  return %p : tensor<6xf32>
}
