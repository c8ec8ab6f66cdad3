// pbc crash reproducer
// signal 13 (Broken pipe) during: stage opt, pass 'pbc-decompose-aggregates' (<-p>:1)
// command: pbc-opt
// replay: pbc-opt THIS_FILE -p 'pbc-decompose-aggregates'
// pbc-decompose-aggregates turns linalg.softmax (no loop lowering of its own
// in MLIR 22) into max / sub+exp / sum / div generics on tensors.
// RUN: pbc-opt %s -p 'pbc-decompose-aggregates' | FileCheck %s
// CHECK-LABEL: func.func @sm
// CHECK-NOT: linalg.softmax
// CHECK: linalg.generic
// CHECK: arith.maxnumf
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: arith.divf
func.func @sm(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.softmax dimension(1) ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
