// --run --check runs on random inputs and compares with the naive reference.
// RUN: pbc --run=2 --check %s | FileCheck %s
// CHECK: @f: median {{.*}} ms
// CHECK: @f: check PASS
func.func @f(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>) -> tensor<64x48xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x48xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x48xf32>) -> tensor<64x48xf32>
  %m = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x48xf32>) outs(%f : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %m : tensor<64x48xf32>
}
