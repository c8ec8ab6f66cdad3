// f16 (and bf16) matmul, batch matmul, convolution (implicit GEMM) and attention
// (Q.K^T, softmax, P.V: one fused kernel) compile to tensor-core kernels in the PTX for sm_80
// and sm_90: 16-byte cp.async copies into shared memory with commit/wait
// groups, ldmatrix fragments (.trans for B), mma.sync m16n8k16.
// RUN: pbc --target=nvgpu --chip=sm_80 --emit=device %S/../gpu/inputs/mm.mlir | FileCheck %s --check-prefixes=PTX80,MMA
// RUN: pbc --target=nvgpu --chip=sm_90 --emit=device %S/../gpu/inputs/mm.mlir | FileCheck %s --check-prefixes=PTX90,MMA
// RUN: pbc --target=nvgpu --chip=sm_80 --emit=device %S/../gpu/inputs/bmm.mlir | FileCheck %s --check-prefix=MMA
// RUN: pbc --target=nvgpu --chip=sm_90 --emit=device %S/../gpu/inputs/bmm.mlir | FileCheck %s --check-prefix=MMA
// RUN: pbc --target=nvgpu --chip=sm_80 --emit=device %S/../gpu/inputs/conv.mlir | FileCheck %s --check-prefix=MMA
// RUN: pbc --target=nvgpu --chip=sm_90 --emit=device %S/../gpu/inputs/conv.mlir | FileCheck %s --check-prefix=MMA
// RUN: pbc --target=nvgpu --chip=sm_80 --emit=device %S/../gpu/inputs/attention.mlir | FileCheck %s --check-prefix=ATT
// RUN: pbc --target=nvgpu --chip=sm_90 --emit=device %S/../gpu/inputs/attention.mlir | FileCheck %s --check-prefix=ATT
// RUN: pbc --target=nvgpu --chip=sm_80 --emit=device %S/../gpu/inputs/mm_bf16.mlir | FileCheck %s --check-prefix=BF16
// RUN: pbc --target=nvgpu --chip=sm_90 --emit=device %S/../gpu/inputs/mm_bf16.mlir | FileCheck %s --check-prefix=BF16
// RUN: pbc --target=nvgpu --chip=sm_80 --emit=device %S/../gpu/inputs/mm_partial.mlir | FileCheck %s --check-prefix=PARTIAL
// RUN: pbc --target=nvgpu --chip=sm_90 --emit=device %S/../gpu/inputs/mm_bias_relu.mlir | FileCheck %s --check-prefix=FUSED

// PTX80: .target sm_80
// PTX90: .target sm_90
// MMA: .shared .align 16 .b8 __dynamic_shmem
// MMA: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16;
// MMA: cp.async.commit_group;
// MMA: cp.async.wait_group
// MMA: bar.sync 0;
// MMA: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// MMA: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// MMA: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// MMA: cp.async.wait_group 0;
// The copy-out of whole tiles goes through shared memory and leaves in
// 16-byte stores.
// MMA: bar.sync 0;
// MMA: st.shared.{{(v2.)?}}{{b32|b16}}
// MMA: bar.sync 0;
// MMA: ld.shared.v4.b32
// MMA: st.global.v4.b32

// Attention is one kernel (the score matrix never leaves registers): Q.K^T
// reads K staged n-major by plain ldmatrix, the row max meets by xor
// shuffles, exp, then P.V reads V by ldmatrix.trans; no second kernel.
// ATT: .entry
// ATT: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16;
// ATT-NOT: ldmatrix.sync.aligned.m8n8.x4.trans
// ATT: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// ATT: shfl.sync.bfly.b32
// ATT: ex2.approx
// ATT: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// ATT: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// ATT-NOT: .entry

// bf16 operands: the same staging and fragments, and the bf16 form of the
// instruction (nvvm.mma.sync: MLIR 22's nvgpu.mma.sync cannot type it).
// BF16: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16;
// BF16: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// BF16: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// BF16-NOT: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32

// Partial tiles: copies past K's edge give cp.async a source size in a
// register (0: zero-fill); the copy-out of C past M's edge is predicated.
// PARTIAL: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, %r{{[0-9]+}};
// PARTIAL: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PARTIAL: setp.{{.*}}
// PARTIAL: st.global.b32

// bias + relu + truncation in the matmul's kernel: one kernel, no f32 C in
// memory; the f16 results go through shared memory (pairs converted at
// once) and leave in 16-byte stores, as a tile without an epilogue does.
// FUSED: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// FUSED: max.NaN.f32
// FUSED: cvt.rn.f16{{(x2)?}}.f32
// FUSED: st.shared
// FUSED: bar.sync 0;
// FUSED: ld.shared.v4.b32
// FUSED: st.global.v4.b32
// FUSED-NOT: st.global.b32
// FUSED-NOT: pbc: gpu.binary
