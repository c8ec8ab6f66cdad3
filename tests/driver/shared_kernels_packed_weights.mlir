// Two GEMMs of one shape on two weights (arguments marked pbc.invariant,
// whose packed tiles pbc-pack-once keeps in globals) share one outlined
// function: the globals are read in the entry and passed in, so the nests
// differ in nothing else (BERT's 12 layers compiled 72 GEMM kernels, each
// naming its own global, on every compile).
// RUN: pbc --emit=s4 %s | FileCheck %s
// CHECK-LABEL: func.func @f(
// CHECK: memref.get_global @pbc_packed
// CHECK: call @f_nest0(
// CHECK: call @f_nest0(
// CHECK-NOT: call @f_nest
// CHECK-LABEL: func.func private @f_nest0(
// CHECK-NOT: memref.get_global
// CHECK-NOT: func.func private @f_nest1
func.func @f(%a: tensor<64x256xf32>, %w1: tensor<256x256xf32> {pbc.invariant},
             %w2: tensor<256x256xf32> {pbc.invariant}) -> tensor<64x256xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x256xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x256xf32>) -> tensor<64x256xf32>
  %x = linalg.matmul ins(%a, %w1 : tensor<64x256xf32>, tensor<256x256xf32>) outs(%f : tensor<64x256xf32>) -> tensor<64x256xf32>
  %e2 = tensor.empty() : tensor<64x256xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<64x256xf32>) -> tensor<64x256xf32>
  %y = linalg.matmul ins(%x, %w2 : tensor<64x256xf32>, tensor<256x256xf32>) outs(%f2 : tensor<64x256xf32>) -> tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}
