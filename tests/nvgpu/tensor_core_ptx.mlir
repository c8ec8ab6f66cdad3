// f16 matmul, batch matmul and attention (Q.K^T, softmax, P.V) compile to
// tensor-core instructions in the PTX for sm_80 and sm_90.
// RUN: pbc --target=nvgpu --chip=sm_80 --emit=device %S/../gpu/inputs/mm.mlir | FileCheck %s --check-prefixes=PTX80,MM
// RUN: pbc --target=nvgpu --chip=sm_90 --emit=device %S/../gpu/inputs/mm.mlir | FileCheck %s --check-prefixes=PTX90,MM
// RUN: pbc --target=nvgpu --chip=sm_80 --emit=device %S/../gpu/inputs/bmm.mlir | FileCheck %s --check-prefix=MM
// RUN: pbc --target=nvgpu --chip=sm_90 --emit=device %S/../gpu/inputs/bmm.mlir | FileCheck %s --check-prefix=MM
// RUN: pbc --target=nvgpu --chip=sm_80 --emit=device %S/../gpu/inputs/attention.mlir | FileCheck %s --check-prefix=ATT
// RUN: pbc --target=nvgpu --chip=sm_90 --emit=device %S/../gpu/inputs/attention.mlir | FileCheck %s --check-prefix=ATT

// PTX80: .target sm_80
// PTX90: .target sm_90
// MM: wmma.load.a.sync.aligned.row.m16n16k16
// MM: wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32
// MM: wmma.store.d.sync.aligned.row.m16n16k16.f32

// Q.K^T reads K as a column-major fragment; P.V as row-major.
// ATT: wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32
// ATT: wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32
