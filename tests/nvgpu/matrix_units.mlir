// pbc-gpu-map-matrix-units: f16 matmul-kind nests become one warp per 16x16
// tile of C on the tensor cores; the accumulator fragment stays in registers
// across the k loop. f32 matmuls and shapes that are not multiples of 16 keep
// the generic mapping.
// RUN: split-file %s %t
// RUN: pbc --target=nvgpu --emit=s3 %S/../gpu/inputs/mm.mlir | FileCheck %s --check-prefix=MMA
// RUN: pbc --target=nvgpu --emit=s3 %t/transposed.mlir | FileCheck %s --check-prefix=TRANS
// RUN: pbc --target=nvgpu --emit=s3 %S/../gpu/inputs/mm_f32.mlir | FileCheck %s --check-prefix=F32
// RUN: pbc --target=nvgpu --emit=s3 %t/odd.mlir | FileCheck %s --check-prefix=F32
// RUN: pbc --target=nvgpu --emit=s3 --disable=matrix-units %S/../gpu/inputs/mm.mlir | FileCheck %s --check-prefix=F32
// Whole-fragment loads need a plain gemm: a convolution stays generic here.
// RUN: pbc --target=nvgpu --emit=s3 %S/../gpu/inputs/conv.mlir | FileCheck %s --check-prefix=F32

// MMA-LABEL: func.func @mm
// MMA: gpu.launch blocks({{.*}}) in ({{.*}} = %c6, {{.*}} = %c8, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c32, {{.*}} = %c1, {{.*}} = %c1)
// MMA: %[[ACC0:.*]] = gpu.subgroup_mma_load_matrix %arg2{{.*}}leadDimension = 96{{.*}} -> !gpu.mma_matrix<16x16xf32, "COp">
// MMA: scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[ACC0]])
// MMA: gpu.subgroup_mma_load_matrix %arg0{{.*}}leadDimension = 64{{.*}}"AOp">
// MMA: gpu.subgroup_mma_load_matrix %arg1{{.*}}leadDimension = 96{{.*}}"BOp">
// MMA: gpu.subgroup_mma_compute {{.*}}, {{.*}}, %[[ACC]]
// MMA: scf.yield
// MMA: gpu.subgroup_mma_store_matrix
// MMA-NOT: affine.load
// MMA: return

// TRANS: gpu.subgroup_mma_load_matrix %arg1{{.*}}leadDimension = 32 : index, transpose{{.*}}"BOp">

// F32-NOT: gpu.subgroup_mma
// F32-NOT: gpu.launch

//--- transposed.mlir
func.func @qk(%q: tensor<64x32xf16>, %k: tensor<48x32xf16>) -> tensor<64x48xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<64x48xf16>
  %f = linalg.fill ins(%z : f16) outs(%e : tensor<64x48xf16>) -> tensor<64x48xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<64x32xf16>, tensor<48x32xf16>) outs(%f : tensor<64x48xf16>) {
  ^bb0(%x: f16, %y: f16, %acc: f16):
    %p = arith.mulf %x, %y : f16
    %s = arith.addf %acc, %p : f16
    linalg.yield %s : f16
  } -> tensor<64x48xf16>
  return %r : tensor<64x48xf16>
}

//--- odd.mlir
func.func @mm(%a: tensor<100x64xf16>, %b: tensor<64x96xf16>) -> tensor<100x96xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<100x96xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<100x96xf32>) -> tensor<100x96xf32>
  %r = linalg.matmul ins(%a, %b : tensor<100x64xf16>, tensor<64x96xf16>) outs(%f : tensor<100x96xf32>) -> tensor<100x96xf32>
  return %r : tensor<100x96xf32>
}
