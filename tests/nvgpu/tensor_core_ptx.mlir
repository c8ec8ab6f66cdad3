// f16 matmul, batch matmul and attention (Q.K^T, softmax, P.V) compile to
// tensor-core instructions in the PTX for sm_80 and sm_90.
// RUN: split-file %s %t
// RUN: pbc --target=nvgpu --chip=sm_80 --emit=device %t/mm.mlir | FileCheck %s --check-prefixes=PTX80,MM
// RUN: pbc --target=nvgpu --chip=sm_90 --emit=device %t/mm.mlir | FileCheck %s --check-prefixes=PTX90,MM
// RUN: pbc --target=nvgpu --chip=sm_80 --emit=device %t/bmm.mlir | FileCheck %s --check-prefix=MM
// RUN: pbc --target=nvgpu --chip=sm_90 --emit=device %t/bmm.mlir | FileCheck %s --check-prefix=MM
// RUN: pbc --target=nvgpu --chip=sm_80 --emit=device %t/attention.mlir | FileCheck %s --check-prefix=ATT
// RUN: pbc --target=nvgpu --chip=sm_90 --emit=device %t/attention.mlir | FileCheck %s --check-prefix=ATT

// PTX80: .target sm_80
// PTX90: .target sm_90
// MM: wmma.load.a.sync.aligned.row.m16n16k16
// MM: wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32
// MM: wmma.store.d.sync.aligned.row.m16n16k16.f32

// Q.K^T reads K as a column-major fragment; P.V as row-major.
// ATT: wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32
// ATT: wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32

//--- mm.mlir
func.func @mm(%a: tensor<128x64xf16>, %b: tensor<64x96xf16>) -> tensor<128x96xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x96xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<128x96xf32>) -> tensor<128x96xf32>
  %r = linalg.matmul ins(%a, %b : tensor<128x64xf16>, tensor<64x96xf16>) outs(%f : tensor<128x96xf32>) -> tensor<128x96xf32>
  return %r : tensor<128x96xf32>
}

//--- bmm.mlir
func.func @bmm(%a: tensor<4x32x64xf16>, %b: tensor<4x64x48xf16>) -> tensor<4x32x48xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x32x48xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x32x48xf32>) -> tensor<4x32x48xf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<4x32x64xf16>, tensor<4x64x48xf16>) outs(%f : tensor<4x32x48xf32>) -> tensor<4x32x48xf32>
  return %r : tensor<4x32x48xf32>
}

//--- attention.mlir
#qk = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>]
#id = affine_map<(i, j) -> (i, j)>
func.func @attention(%q: tensor<64x32xf16>, %k: tensor<64x32xf16>, %v: tensor<64x32xf16>) -> tensor<64x32xf32> {
  %z = arith.constant 0.0 : f32
  %es = tensor.empty() : tensor<64x64xf32>
  %fs = linalg.fill ins(%z : f32) outs(%es : tensor<64x64xf32>) -> tensor<64x64xf32>
  %s = linalg.generic {indexing_maps = #qk, iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<64x32xf16>, tensor<64x32xf16>) outs(%fs : tensor<64x64xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %xf = arith.extf %x : f16 to f32
    %yf = arith.extf %y : f16 to f32
    %m = arith.mulf %xf, %yf : f32
    %a = arith.addf %acc, %m : f32
    linalg.yield %a : f32
  } -> tensor<64x64xf32>
  %ep = tensor.empty() : tensor<64x64xf32>
  %p = linalg.softmax dimension(1) ins(%s : tensor<64x64xf32>) outs(%ep : tensor<64x64xf32>) -> tensor<64x64xf32>
  %eh = tensor.empty() : tensor<64x64xf16>
  %ph = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<64x64xf32>) outs(%eh : tensor<64x64xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<64x64xf16>
  %eo = tensor.empty() : tensor<64x32xf32>
  %fo = linalg.fill ins(%z : f32) outs(%eo : tensor<64x32xf32>) -> tensor<64x32xf32>
  %o = linalg.matmul ins(%ph, %v : tensor<64x64xf16>, tensor<64x32xf16>) outs(%fo : tensor<64x32xf32>) -> tensor<64x32xf32>
  return %o : tensor<64x32xf32>
}
