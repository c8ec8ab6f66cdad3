// pbc-gpu-map-matrix-units on AMD: f16 contractions become one wave per
// 16x16 tile of C; each lane loads the elements the instruction's layout
// gives it and the accumulator vector stays in registers across the k loop.
// CDNA (gfx90a, gfx942): amdgpu.mfma, wave 64, 4 f16 of A and B per lane,
// 4 f32 of C. RDNA3 (gfx1100): amdgpu.wmma, wave 32, 16 f16, 8 f32.
// Convolutions (implicit GEMM) take the same path through their own
// subscripts; f32 stays on the generic mapping.
// RUN: pbc --target=amdgpu --chip=gfx90a --emit=s3 %S/../gpu/inputs/mm.mlir | FileCheck %s --check-prefix=MFMA
// RUN: pbc --target=amdgpu --chip=gfx942 --emit=s3 %S/../gpu/inputs/mm.mlir | FileCheck %s --check-prefix=MFMA
// RUN: pbc --target=amdgpu --chip=gfx1100 --emit=s3 %S/../gpu/inputs/mm.mlir | FileCheck %s --check-prefix=WMMA
// RUN: pbc --target=amdgpu --chip=gfx90a --emit=s3 %S/../gpu/inputs/conv.mlir | FileCheck %s --check-prefix=CONV
// RUN: pbc --target=amdgpu --chip=gfx90a --emit=s3 %S/../gpu/inputs/mm_f32.mlir | FileCheck %s --check-prefix=GENERIC
// RUN: pbc --target=amdgpu --chip=gfx90a --emit=s3 --disable=matrix-units %S/../gpu/inputs/mm.mlir | FileCheck %s --check-prefix=GENERIC

// 128x64 * 64x96: a grid of 96/16 x 128/16 waves. The zero fill is
// absorbed: the accumulators start from zero, C is not read.
// MFMA-LABEL: func.func @mm
// MFMA: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<4xf32>
// MFMA-NOT: affine.for
// MFMA: gpu.launch blocks({{.*}}) in ({{.*}} = %c6, {{.*}} = %c8, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c64, {{.*}} = %c1, {{.*}} = %c1)
// MFMA-NOT: memref.load %arg2
// MFMA: scf.for {{.*}} step %c16 iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (vector<4xf32>)
// MFMA: memref.load %arg0
// MFMA: memref.load %arg1
// MFMA: %[[A:.*]] = vector.from_elements {{.*}} : vector<4xf16>
// MFMA: %[[B:.*]] = vector.from_elements {{.*}} : vector<4xf16>
// MFMA: amdgpu.mfma 16x16x16 %[[A]] * %[[B]] + %[[ACC]]
// MFMA: scf.yield
// MFMA-COUNT-4: memref.store
// MFMA-NOT: affine.load
// MFMA: return

// WMMA: threads({{.*}}) in ({{.*}} = %c32, {{.*}} = %c1, {{.*}} = %c1)
// WMMA: scf.for {{.*}} -> (vector<8xf32>)
// WMMA: %[[A:.*]] = vector.from_elements {{.*}} : vector<16xf16>
// WMMA: %[[B:.*]] = vector.from_elements {{.*}} : vector<16xf16>
// WMMA: amdgpu.wmma 16x16x16 %[[A]] * %[[B]]
// WMMA-COUNT-8: memref.store
// WMMA-NOT: affine.load

// The input window of a stride-2 convolution: row m of the implicit GEMM is
// (n, oh, ow), k is (kh, kw, c); the input is read at (2*oh + kh, 2*ow + kw).
// CONV: gpu.launch blocks({{.*}}) in ({{.*}} = %c4, {{.*}} = %c16, {{.*}} = %c1)
// CONV: scf.for
// CONV: memref.load %arg0
// CONV: memref.load %arg1
// CONV: amdgpu.mfma 16x16x16
// CONV-NOT: affine.load %arg0

// GENERIC-NOT: amdgpu.mfma
// GENERIC-NOT: gpu.launch
