// pbc-gpu-map-matrix-units fuses an attention chain only where the kernel
// computes what the program does. A row max that maximumf starts from NaN
// stays NaN (maximumf propagates it), which the kernel's running max would
// not: that chain stays unfused (its score buffer remains). From -inf it
// fuses: one kernel, no buffer of scores.
// RUN: split-file %s %t
// RUN: pbc --target=nvgpu --emit=s3 %t/ninf.mlir | FileCheck %s --check-prefix=FUSED
// RUN: pbc --target=nvgpu --emit=s3 %t/nan.mlir | FileCheck %s --check-prefix=UNFUSED

// FUSED-LABEL: func.func @attention
// FUSED-NOT: memref.alloc
// FUSED: gpu.launch
// FUSED-NOT: gpu.launch
// FUSED: return

// UNFUSED-LABEL: func.func @attention
// UNFUSED: memref.alloc() {{.*}} : memref<64x64xf32>
// UNFUSED: gpu.launch
// UNFUSED: gpu.launch

//--- ninf.mlir
#qk = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>]
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @attention(%q: tensor<64x32xf16>, %k: tensor<64x32xf16>, %v: tensor<64x32xf16>) -> tensor<64x32xf32> {
  %z = arith.constant 0.0 : f32
  %init = arith.constant 0xFF800000 : f32
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
  %er = tensor.empty() : tensor<64xf32>
  %fm = linalg.fill ins(%init : f32) outs(%er : tensor<64xf32>) -> tensor<64xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%s : tensor<64x64xf32>) outs(%fm : tensor<64xf32>) {
  ^bb0(%x: f32, %r: f32):
    %t = arith.maximumf %x, %r : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  %ee = tensor.empty() : tensor<64x64xf32>
  %e = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s, %mx : tensor<64x64xf32>, tensor<64xf32>) outs(%ee : tensor<64x64xf32>) {
  ^bb0(%x: f32, %r: f32, %o: f32):
    %d = arith.subf %x, %r : f32
    %t = math.exp %d : f32
    linalg.yield %t : f32
  } -> tensor<64x64xf32>
  %fl = linalg.fill ins(%z : f32) outs(%er : tensor<64xf32>) -> tensor<64xf32>
  %l = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : tensor<64x64xf32>) outs(%fl : tensor<64xf32>) {
  ^bb0(%x: f32, %r: f32):
    %t = arith.addf %x, %r : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  %p32 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e, %l : tensor<64x64xf32>, tensor<64xf32>) outs(%ee : tensor<64x64xf32>) {
  ^bb0(%x: f32, %r: f32, %o: f32):
    %d = arith.divf %x, %r : f32
    linalg.yield %d : f32
  } -> tensor<64x64xf32>
  %ep = tensor.empty() : tensor<64x64xf16>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p32 : tensor<64x64xf32>) outs(%ep : tensor<64x64xf16>) {
  ^bb0(%x: f32, %o: f16):
    %h = arith.truncf %x : f32 to f16
    linalg.yield %h : f16
  } -> tensor<64x64xf16>
  %eo = tensor.empty() : tensor<64x32xf32>
  %fo = linalg.fill ins(%z : f32) outs(%eo : tensor<64x32xf32>) -> tensor<64x32xf32>
  %o = linalg.matmul ins(%p, %v : tensor<64x64xf16>, tensor<64x32xf16>) outs(%fo : tensor<64x32xf32>) -> tensor<64x32xf32>
  return %o : tensor<64x32xf32>
}

//--- nan.mlir
#qk = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>]
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @attention(%q: tensor<64x32xf16>, %k: tensor<64x32xf16>, %v: tensor<64x32xf16>) -> tensor<64x32xf32> {
  %z = arith.constant 0.0 : f32
  %init = arith.constant 0x7FC00000 : f32
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
  %er = tensor.empty() : tensor<64xf32>
  %fm = linalg.fill ins(%init : f32) outs(%er : tensor<64xf32>) -> tensor<64xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%s : tensor<64x64xf32>) outs(%fm : tensor<64xf32>) {
  ^bb0(%x: f32, %r: f32):
    %t = arith.maximumf %x, %r : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  %ee = tensor.empty() : tensor<64x64xf32>
  %e = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s, %mx : tensor<64x64xf32>, tensor<64xf32>) outs(%ee : tensor<64x64xf32>) {
  ^bb0(%x: f32, %r: f32, %o: f32):
    %d = arith.subf %x, %r : f32
    %t = math.exp %d : f32
    linalg.yield %t : f32
  } -> tensor<64x64xf32>
  %fl = linalg.fill ins(%z : f32) outs(%er : tensor<64xf32>) -> tensor<64xf32>
  %l = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : tensor<64x64xf32>) outs(%fl : tensor<64xf32>) {
  ^bb0(%x: f32, %r: f32):
    %t = arith.addf %x, %r : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  %p32 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e, %l : tensor<64x64xf32>, tensor<64xf32>) outs(%ee : tensor<64x64xf32>) {
  ^bb0(%x: f32, %r: f32, %o: f32):
    %d = arith.divf %x, %r : f32
    linalg.yield %d : f32
  } -> tensor<64x64xf32>
  %ep = tensor.empty() : tensor<64x64xf16>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p32 : tensor<64x64xf32>) outs(%ep : tensor<64x64xf16>) {
  ^bb0(%x: f32, %o: f16):
    %h = arith.truncf %x : f32 to f16
    linalg.yield %h : f16
  } -> tensor<64x64xf16>
  %eo = tensor.empty() : tensor<64x32xf32>
  %fo = linalg.fill ins(%z : f32) outs(%eo : tensor<64x32xf32>) -> tensor<64x32xf32>
  %o = linalg.matmul ins(%p, %v : tensor<64x64xf16>, tensor<64x32xf16>) outs(%fo : tensor<64x32xf32>) -> tensor<64x32xf32>
  return %o : tensor<64x32xf32>
}
