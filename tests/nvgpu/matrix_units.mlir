// pbc-gpu-map-matrix-units on NVIDIA (unit=mma-sync, the chips' default):
// f16 matmul-kind nests become block-tiled kernels: A and B tiles staged in
// shared memory (rows padded by 8 halves) by 16-byte cp.async copies, S
// stages in flight (wait for at most S-2 groups, then a barrier, then the
// next copies), ldmatrix fragments, mma.sync m16n8k16 accumulators carried
// across the k loop, C stored once. The fill before the nest and a
// pointwise consumer after it are absorbed: the accumulators start from the
// fill's value, and the consumer (bias, relu, truncation) runs on them in
// registers instead of reading C back from memory. Operands whose 8 consecutive k (A) or n
// (B) are not contiguous are staged by element copies. f32 matmuls and
// M, N or K that are not multiples of the tiles get partial tiles.
// RUN: split-file %s %t
// RUN: pbc --target=nvgpu --emit=s3 %S/../gpu/inputs/mm.mlir | FileCheck %s --check-prefix=MMA
// RUN: pbc --target=nvgpu --emit=s3 %S/../gpu/inputs/conv.mlir | FileCheck %s --check-prefix=CONV
// RUN: pbc --target=nvgpu --emit=s3 %S/../gpu/inputs/mm_bias_relu.mlir | FileCheck %s --check-prefix=FUSED
// RUN: pbc --target=nvgpu --emit=s3 %t/consumers.mlir | FileCheck %s --check-prefix=CONSUMERS
// RUN: pbc --target=nvgpu --emit=s3 %t/transposed.mlir | FileCheck %s --check-prefix=TRANS
// RUN: pbc --target=nvgpu --emit=s3 %t/large.mlir | FileCheck %s --check-prefix=LARGE
// RUN: pbc --target=nvgpu --chip=sm_86 --emit=s3 %t/large.mlir | FileCheck %s --check-prefix=SM86
// RUN: pbc --target=nvgpu --emit=s3 %S/../gpu/inputs/mm_f32.mlir | FileCheck %s --check-prefix=F32
// RUN: pbc --target=nvgpu --emit=s3 %S/../gpu/inputs/mm_partial.mlir | FileCheck %s --check-prefix=PARTIAL
// RUN: pbc --target=nvgpu --emit=s3 --disable=matrix-units %S/../gpu/inputs/mm.mlir | FileCheck %s --check-prefix=F32
// The whole-fragment emitter (unit=subgroup-mma) takes plain gemms only.
// RUN: pbc-opt --target=nvgpu --through=s2 %S/../gpu/inputs/mm.mlir | pbc-opt --target=nvgpu -p 'pbc-gpu-map-matrix-units{unit=subgroup-mma}' - | FileCheck %s --check-prefix=WMMA
// RUN: pbc-opt --target=nvgpu --through=s2 %t/transposed.mlir | pbc-opt --target=nvgpu -p 'pbc-gpu-map-matrix-units{unit=subgroup-mma}' - | FileCheck %s --check-prefix=WMMA-TRANS
// RUN: pbc-opt --target=nvgpu --through=s2 %S/../gpu/inputs/conv.mlir | pbc-opt --target=nvgpu -p 'pbc-gpu-map-matrix-units{unit=subgroup-mma}' - | FileCheck %s --check-prefix=F32

// 128x64 . 64x96 on 108 SMs: 32x32 block tiles (more blocks), 2x2 warps of
// 16x16, BK 32, 2 stages (K has 2 tiles). The zero fill is absorbed.
// MMA-LABEL: func.func @mm
// MMA: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<2x2xf32>
// MMA-NOT: affine.for
// MMA: gpu.launch blocks({{.*}}) in ({{.*}} = %c3, {{.*}} = %c4, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c128, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c10240_i32
// MMA: %[[RAW:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// MMA: %[[AS:.*]] = memref.view %[[RAW]][%c0][] {{.*}} to memref<2x32x40xf16, #gpu.address_space<workgroup>>
// MMA: %[[BS:.*]] = memref.view %[[RAW]][%c5120][] {{.*}} to memref<2x32x40xf16, #gpu.address_space<workgroup>>
// MMA: nvgpu.device_async_copy %arg0[{{.*}}], %[[AS]][%c0, {{.*}}], 8 {bypassL1}
// MMA: nvgpu.device_async_copy %arg1[{{.*}}], %[[BS]][%c0, {{.*}}], 8 {bypassL1}
// MMA: %[[G:.*]] = nvgpu.device_async_create_group
// MMA-NOT: memref.load %arg2
// MMA: scf.for {{.*}} iter_args({{.*}} = %[[ZERO]], {{.*}} = %[[ZERO]]) -> (vector<2x2xf32>, vector<2x2xf32>)
// MMA-NEXT: nvgpu.device_async_wait %[[G]] {numGroups = 0 : i32}
// MMA-NEXT: gpu.barrier
// MMA: nvgpu.device_async_copy %arg0
// MMA: nvgpu.device_async_copy %arg1
// MMA: nvgpu.device_async_create_group
// MMA: nvgpu.ldmatrix %[[AS]][{{.*}}] {numTiles = 4 : i32, transpose = false} {{.*}} -> vector<4x2xf16>
// MMA: nvgpu.ldmatrix %[[BS]][{{.*}}] {numTiles = 4 : i32, transpose = true} {{.*}} -> vector<4x2xf16>
// MMA: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// MMA: scf.yield
// MMA: nvgpu.device_async_wait %[[G]] {numGroups = 0 : i32}
// Whole tiles, no epilogue: C's tile staged in shared memory (between
// barriers), then 16-byte rows to C.
// MMA-NEXT: gpu.barrier
// MMA: memref.store {{.*}}, %{{.*}} : memref<{{.*}}xf32, #gpu.address_space<workgroup>>
// MMA: gpu.barrier
// MMA: vector.load {{.*}} {alignment = 16 : i64} : memref<{{.*}}xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// MMA: vector.store {{.*}}, %arg2[{{.*}}] {alignment = 16 : i64} : memref<{{.*}}xf32>, vector<4xf32>
// MMA-NOT: affine.load
// MMA: return

// bias + relu + truncf in the copy-out: no f32 intermediate buffer, no
// second nest; C's element goes from the accumulator to the consumer,
// whose f16 result is staged in shared memory and leaves in 16-byte stores.
// FUSED-LABEL: func.func @mm_bias_relu
// FUSED-NOT: memref.alloc
// FUSED: gpu.launch
// FUSED: nvgpu.mma.sync
// FUSED: scf.yield
// FUSED: nvgpu.device_async_wait
// FUSED-NOT: memref.store
// FUSED: %[[X:.*]] = vector.extract
// FUSED-NOT: memref.store
// FUSED: %[[BIAS:.*]] = memref.load %arg2
// FUSED: %[[S:.*]] = arith.addf %[[X]], %[[BIAS]] {{.*}}: f32
// FUSED: %[[R:.*]] = arith.maximumf %[[S]], {{.*}} : f32
// FUSED: %[[H:.*]] = arith.truncf %[[R]] : f32 to f16
// FUSED: memref.store %[[H]], %{{.*}} : memref<{{.*}}xf16, #gpu.address_space<workgroup>>
// FUSED: gpu.barrier
// FUSED: vector.load {{.*}} {alignment = 16 : i64} : memref<{{.*}}xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// FUSED: vector.store {{.*}}, %arg3[{{.*}}] {alignment = 16 : i64} : memref<{{.*}}xf16>, vector<8xf16>
// FUSED-NOT: affine.for
// FUSED-NOT: memref.alloc
// FUSED: return

// Consumers that stay nests: a row sum (its store is not one element per
// iteration) keeps C stored; a consumer reading C shifted by one column is
// not element-wise. A consumer reading C transposed is absorbed.
// CONSUMERS-LABEL: func.func @rowsum
// CONSUMERS: %[[C:.*]] = memref.alloc() {{.*}} : memref<64x64xf32>
// CONSUMERS: gpu.launch
// CONSUMERS: vector.store {{.*}}, %[[C]]
// CONSUMERS: affine.{{for|parallel}}
// CONSUMERS: affine.load %[[C]]
// CONSUMERS-LABEL: func.func @shifted
// CONSUMERS: %[[C:.*]] = memref.alloc() {{.*}} : memref<64x64xf32>
// CONSUMERS: gpu.launch
// CONSUMERS: vector.store {{.*}}, %[[C]]
// CONSUMERS: affine.{{for|parallel}}
// CONSUMERS: affine.load %[[C]]
// CONSUMERS-LABEL: func.func @transposed_out
// CONSUMERS-NOT: memref.alloc
// CONSUMERS: gpu.launch
// CONSUMERS: arith.addf
// CONSUMERS: memref.store {{.*}}, %arg2
// CONSUMERS-NOT: affine.{{for|parallel}}
// CONSUMERS: return

// Partial tiles: 100 x 72 . 72 x 96 in 32 x 32 x 32 tiles, a grid of 3 x 4.
// Copies past K's edge read a clamped address and zero-fill (a source size
// of 0 elements); rows past M's edge read row 99 (clamped), and the
// copy-out skips them.
// PARTIAL: gpu.launch blocks({{.*}}) in ({{.*}} = %c3, {{.*}} = %c4, {{.*}} = %c1)
// PARTIAL: %[[ROW:.*]] = arith.minui {{.*}}, %c99 : index
// PARTIAL: %[[KIN:.*]] = arith.cmpi slt, %[[K:.*]], %c72 : index
// PARTIAL: %[[KC:.*]] = arith.minui %[[K]], %c64 : index
// PARTIAL: %[[N:.*]] = arith.select %[[KIN]], %c8, %c0 : index
// PARTIAL: nvgpu.device_async_copy %arg0[%[[ROW]], %[[KC]]], {{.*}}, 8, %[[N]] {bypassL1}
// PARTIAL: scf.for
// PARTIAL: scf.yield
// PARTIAL: %[[IN:.*]] = arith.cmpi slt, {{.*}}, %c100 : index
// PARTIAL: scf.if %[[IN]] {
// PARTIAL-NEXT: memref.store {{.*}}, %arg2
// PARTIAL-NEXT: }

// Implicit GEMM (M = 256, N = 64, K = 288): A's k runs along the input's
// channels, so the window is copied 16 bytes at a time from the input itself;
// 4 stages, at most 2 copy groups in flight at each wait.
// CONV: gpu.launch blocks({{.*}}) in ({{.*}} = %c2, {{.*}} = %c8, {{.*}} = %c1)
// CONV: nvgpu.device_async_copy %arg0[{{.*}}, {{.*}}, {{.*}}, {{.*}}], {{.*}} : memref<1x33x33x32xf16> to memref<4x32x40xf16, #gpu.address_space<workgroup>>
// CONV: nvgpu.device_async_copy %arg1[{{.*}}, {{.*}}, {{.*}}, {{.*}}], {{.*}} : memref<3x3x32x64xf16> to memref<4x32x40xf16, #gpu.address_space<workgroup>>
// CONV: scf.for
// CONV-NEXT: nvgpu.device_async_wait {{.*}} {numGroups = 2 : i32}
// CONV: nvgpu.mma.sync

// Q.K^T reads K as [n][k]: 8 consecutive k are contiguous, so K's tile is
// staged n-major ([stage][n][k + 8]) by 16-byte copies along k and read by
// ldmatrix without .trans; Q keeps its copies. f16 C.
// TRANS-LABEL: func.func @qk
// TRANS: %[[KS:.*]] = memref.view {{.*}} to memref<{{[0-9]+}}x16x40xf16, #gpu.address_space<workgroup>>
// TRANS: nvgpu.device_async_copy %arg0
// TRANS: nvgpu.device_async_copy %arg1[{{.*}}], %[[KS]][{{.*}}], 8
// TRANS-NOT: memref.load %arg1
// TRANS: nvgpu.ldmatrix %[[KS]][{{.*}}] {numTiles = 4 : i32, transpose = false}
// TRANS: nvgpu.mma.sync
// TRANS: arith.truncf {{.*}} : f32 to f16

// 2048 x 2048 x 1024 on sm_80: 128x128x32 block tiles of 2x2 warps (64x64
// each: 4x8 accumulators), 4 stages of 18944 bytes (half the SM's shared
// memory per block). sm_86 has less shared memory: 2 stages.
// LARGE: gpu.launch blocks({{.*}}) in ({{.*}} = %c16, {{.*}} = %c16, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c128, {{.*}}) dynamic_shared_memory_size %c75776_i32
// LARGE: memref<4x128x40xf16, #gpu.address_space<workgroup>>
// LARGE: memref<4x32x136xf16, #gpu.address_space<workgroup>>
// LARGE: scf.for {{.*}} -> (vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>)
// LARGE-NEXT: nvgpu.device_async_wait {{.*}} {numGroups = 2 : i32}
// LARGE-COUNT-64: nvgpu.mma.sync
// LARGE-NOT: nvgpu.mma.sync
// LARGE: scf.yield
// SM86: dynamic_shared_memory_size %c37888_i32
// SM86: memref<2x128x40xf16, #gpu.address_space<workgroup>>

// WMMA-LABEL: func.func @mm
// WMMA: gpu.launch blocks({{.*}}) in ({{.*}} = %c6, {{.*}} = %c8, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c32, {{.*}} = %c1, {{.*}} = %c1)
// WMMA: %[[ACC0:.*]] = gpu.subgroup_mma_load_matrix %arg2{{.*}}leadDimension = 96{{.*}} -> !gpu.mma_matrix<16x16xf32, "COp">
// WMMA: scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[ACC0]])
// WMMA: gpu.subgroup_mma_load_matrix %arg0{{.*}}leadDimension = 64{{.*}}"AOp">
// WMMA: gpu.subgroup_mma_load_matrix %arg1{{.*}}leadDimension = 96{{.*}}"BOp">
// WMMA: gpu.subgroup_mma_compute {{.*}}, {{.*}}, %[[ACC]]
// WMMA: scf.yield
// WMMA: gpu.subgroup_mma_store_matrix

// WMMA-TRANS: gpu.subgroup_mma_load_matrix %arg1{{.*}}leadDimension = 32 : index, transpose{{.*}}"BOp">

// F32-NOT: gpu.subgroup_mma
// F32-NOT: nvgpu.mma.sync
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


//--- large.mlir
func.func @mm(%a: tensor<2048x1024xf16>, %b: tensor<1024x2048xf16>) -> tensor<2048x2048xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2048x2048xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  %r = linalg.matmul ins(%a, %b : tensor<2048x1024xf16>, tensor<1024x2048xf16>) outs(%f : tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  return %r : tensor<2048x2048xf32>
}

//--- consumers.mlir
#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
#row = affine_map<(d0, d1) -> (d0)>
#shift = affine_map<(d0, d1) -> (d0, d1 + 1)>
func.func @rowsum(%a: tensor<64x32xf16>, %b: tensor<32x64xf16>) -> tensor<64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %m = linalg.matmul ins(%a, %b : tensor<64x32xf16>, tensor<32x64xf16>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  %e1 = tensor.empty() : tensor<64xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<64xf32>) -> tensor<64xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%m : tensor<64x64xf32>) outs(%f1 : tensor<64xf32>) {
    ^bb0(%x: f32, %acc: f32):
      %y = arith.addf %x, %acc : f32
      linalg.yield %y : f32
  } -> tensor<64xf32>
  return %s : tensor<64xf32>
}
func.func @shifted(%a: tensor<64x32xf16>, %b: tensor<32x64xf16>) -> tensor<64x63xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %m = linalg.matmul ins(%a, %b : tensor<64x32xf16>, tensor<32x64xf16>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  %e1 = tensor.empty() : tensor<64x63xf32>
  %s = linalg.generic {indexing_maps = [#shift, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<64x64xf32>) outs(%e1 : tensor<64x63xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.addf %x, %x : f32
      linalg.yield %y : f32
  } -> tensor<64x63xf32>
  return %s : tensor<64x63xf32>
}
func.func @transposed_out(%a: tensor<64x32xf16>, %b: tensor<32x64xf16>) -> tensor<64x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %m = linalg.matmul ins(%a, %b : tensor<64x32xf16>, tensor<32x64xf16>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  %e1 = tensor.empty() : tensor<64x64xf32>
  %s = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<64x64xf32>) outs(%e1 : tensor<64x64xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.addf %x, %x : f32
      linalg.yield %y : f32
  } -> tensor<64x64xf32>
  return %s : tensor<64x64xf32>
}
