// On the cpu target a vector math.exp/tanh/log becomes a polynomial on the
// whole vector (pbc-approximate-math in targets/cpu/s5.pipeline): LLVM has
// no vector expf on x86 and would call libm once per lane.
// The chip is named (AVX-512: 16 f32 lanes): the host's vector width varies.
// RUN: pbc --emit=llvm --chip=x86-64-v4 %s | FileCheck %s
// CHECK-LABEL: define {{.*}} @_mlir_ciface_softmax_like
// CHECK-NOT: call {{.*}} @expf
// CHECK-NOT: call {{.*}} @tanhf
// CHECK-NOT: call {{.*}} @logf
// CHECK: fmul {{.*}}<16 x float>
func.func @softmax_like(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %e = tensor.empty() : tensor<64x256xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x256xf32>) outs(%e : tensor<64x256xf32>) {
    ^bb0(%a: f32, %o: f32):
      %p = math.exp %a : f32
      %t = math.tanh %p : f32
      %l = math.log %t : f32
      linalg.yield %l : f32
  } -> tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}
