// pbc-fuse-attention (cpu): the attention chain becomes one parallel nest of
// kind "attention" per block of query rows; the scores live in a row buffer
// of a block's rows (here 2 register tiles of 8 rows x the keys padded to 16
// lanes), never in a buffer of all scores; Kᵀ is copied, padded with zero
// keys. Tails in the queries (100 rows: 6 blocks of 16 and one of 4) and in the keys (33: the last vector masked to -inf),
// an additive mask tensor, a causal mask computed from the indices, K read
// by rows or transposed by linalg.transpose. Each program also runs against
// the naive reference lowering (--check exits 3 on a mismatch). With the
// group disabled the score buffer stays; a chain whose scores are also
// returned is left alone.
// RUN: split-file %s %t
// RUN: pbc --chip=x86-64-v4 --emit=s3 %t/mask.mlir | FileCheck %s --check-prefix=MASK
// RUN: pbc --chip=x86-64-v4 --emit=s3 %t/causal.mlir | FileCheck %s --check-prefix=CAUSAL
// RUN: pbc --chip=x86-64-v4 --emit=s3 %t/rows.mlir | FileCheck %s --check-prefix=ROWS
// RUN: pbc --chip=x86-64-v4 --emit=s3 --disable=attention-fusion %t/mask.mlir | FileCheck %s --check-prefix=OFF
// RUN: pbc --chip=x86-64-v4 --emit=s3 %t/escapes.mlir | FileCheck %s --check-prefix=OFF
// RUN: pbc --run=1 --check %t/mask.mlir
// RUN: pbc --run=1 --check %t/causal.mlir
// RUN: pbc --run=1 --check %t/rows.mlir
// RUN: pbc --run=1 --check %t/escapes.mlir
// RUN: pbc --chip=x86-64-v4 --emit=s3 %t/freed.mlir | FileCheck %s --check-prefix=FREED
// RUN: pbc --run=1 --check %t/freed.mlir

// MASK-LABEL: func.func @attention
// MASK-NOT: memref<2x100x33xf32>
// MASK: memref.alloc() {alignment = 64 : i64} : memref<2x16x48xf32>
// MASK: memref.alloc() {alignment = 64 : i64} : memref<16x48xf32>
// MASK: vector.fma
// MASK: vector.maskedload %arg3
// MASK: math.exp
// MASK: } {pbc.kind = "attention"}
// MASK-NOT: memref<2x100x33xf32>
// MASK: return

// CAUSAL-LABEL: func.func @f
// CAUSAL-NOT: memref<12x17x17xf32>
// CAUSAL: arith.cmpi {{.*}} : vector<16xindex>
// CAUSAL: } {pbc.kind = "attention"}
// CAUSAL-NOT: memref<12x17x17xf32>

// ROWS-LABEL: func.func @attention
// ROWS-NOT: memref<3x17x17xf32>
// ROWS: } {pbc.kind = "attention"}

// Q and Kᵀ computed in the function (heads split by transposes, as
// PyTorch 2's attention lowers) are freed right after Q Kᵀ: the frees
// move after the kernel, which reads them.
// FREED-LABEL: func.func @attention
// FREED-NOT: memref<3x17x17xf32>
// FREED: } {pbc.kind = "attention"}
// FREED: memref.dealloc
// FREED-NOT: memref<3x17x17xf32>

// OFF: memref.alloc() {{.*}} : memref<{{2x100x33|2x8x8}}xf32>
// OFF-NOT: pbc.kind = "attention"

//--- mask.mlir
#q = affine_map<(b, i, j, k) -> (b, i, k)>
#k = affine_map<(b, i, j, k) -> (b, j, k)>
#s = affine_map<(b, i, j, k) -> (b, i, j)>
#id = affine_map<(b, i, j) -> (b, i, j)>
#t = affine_map<(b, i, j) -> (b, j, i)>
#mk = affine_map<(b, i, j) -> (i, j)>
func.func @attention(%q: tensor<2x100x16xf32>, %k: tensor<2x33x16xf32>, %v: tensor<2x33x16xf32>, %mask: tensor<100x33xf32>) -> tensor<2x100x16xf32> {
  %z = arith.constant 0.0 : f32
  %sc = arith.constant 0.25 : f32
  %es = tensor.empty() : tensor<2x100x33xf32>
  %zs = linalg.fill ins(%z : f32) outs(%es : tensor<2x100x33xf32>) -> tensor<2x100x33xf32>
  %ekt = tensor.empty() : tensor<2x16x33xf32>
  %kt = linalg.transpose ins(%k : tensor<2x33x16xf32>) outs(%ekt : tensor<2x16x33xf32>) permutation = [0, 2, 1]
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x100x16xf32>, tensor<2x16x33xf32>) outs(%zs : tensor<2x100x33xf32>) -> tensor<2x100x33xf32>
  %ss = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x100x33xf32>) outs(%es : tensor<2x100x33xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %sc : f32
    linalg.yield %r : f32
  } -> tensor<2x100x33xf32>
  %sm = linalg.generic {indexing_maps = [#id, #mk, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ss, %mask : tensor<2x100x33xf32>, tensor<100x33xf32>) outs(%es : tensor<2x100x33xf32>) {
  ^bb0(%a: f32, %mm: f32, %o: f32):
    %r = arith.addf %a, %mm : f32
    linalg.yield %r : f32
  } -> tensor<2x100x33xf32>
  %p = linalg.softmax dimension(2) ins(%sm : tensor<2x100x33xf32>) outs(%es : tensor<2x100x33xf32>) -> tensor<2x100x33xf32>
  %eo = tensor.empty() : tensor<2x100x16xf32>
  %zo = linalg.fill ins(%z : f32) outs(%eo : tensor<2x100x16xf32>) -> tensor<2x100x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x100x33xf32>, tensor<2x33x16xf32>) outs(%zo : tensor<2x100x16xf32>) -> tensor<2x100x16xf32>
  return %o : tensor<2x100x16xf32>
}

//--- causal.mlir
module {
  func.func @f(%a0: tensor<12x17x32xf32>, %a1: tensor<12x17x32xf32>, %a2: tensor<12x17x32xf32>) -> tensor<12x17x32xf32> {
    %e1 = tensor.empty() : tensor<12x32x17xf32>
    %v2 = linalg.transpose ins(%a1 : tensor<12x17x32xf32>) outs(%e1 : tensor<12x32x17xf32>) permutation = [0, 2, 1]
    %e3 = tensor.empty() : tensor<12x17x17xf32>
    %c4 = arith.constant 0.0 : f32
    %f5 = linalg.fill ins(%c4 : f32) outs(%e3 : tensor<12x17x17xf32>) -> tensor<12x17x17xf32>
    %v6 = linalg.batch_matmul ins(%a0, %v2 : tensor<12x17x32xf32>, tensor<12x32x17xf32>) outs(%f5 : tensor<12x17x17xf32>) -> tensor<12x17x17xf32>
    %e7 = tensor.empty() : tensor<12x17x17xf32>
    %v8 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%v6 : tensor<12x17x17xf32>) outs(%e7 : tensor<12x17x17xf32>) {
      ^bb0(%b0: f32, %bo: f32):
    %i10 = linalg.index 2 : index
    %i11 = linalg.index 1 : index
    %p9 = arith.cmpi uge, %i10, %i11 : index
    %c12 = arith.constant -10000.0 : f32
    %c13 = arith.constant 0.1767766922712326 : f32
    %v14 = arith.mulf %b0, %c13 : f32
    %v15 = arith.select %p9, %c12, %v14 : f32
      linalg.yield %v15 : f32
    } -> tensor<12x17x17xf32>
    %e16 = tensor.empty() : tensor<12x17xf32>
    %c17 = arith.constant 0xFF800000 : f32
    %f18 = linalg.fill ins(%c17 : f32) outs(%e16 : tensor<12x17xf32>) -> tensor<12x17xf32>
    %v19 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%v8 : tensor<12x17x17xf32>) outs(%f18 : tensor<12x17xf32>) {
      ^bb0(%x: f32, %y: f32):
        %v20 = arith.maximumf %x, %y : f32
      linalg.yield %v20 : f32
    } -> tensor<12x17xf32>
    %e21 = tensor.empty() : tensor<12x17x17xf32>
    %v22 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%v8, %v19 : tensor<12x17x17xf32>, tensor<12x17xf32>) outs(%e21 : tensor<12x17x17xf32>) {
      ^bb0(%b0: f32, %b1: f32, %bo: f32):
    %v23 = arith.subf %b0, %b1 : f32
    %v24 = math.exp %v23 : f32
      linalg.yield %v24 : f32
    } -> tensor<12x17x17xf32>
    %e25 = tensor.empty() : tensor<12x17xf32>
    %c26 = arith.constant 0.0 : f32
    %f27 = linalg.fill ins(%c26 : f32) outs(%e25 : tensor<12x17xf32>) -> tensor<12x17xf32>
    %v28 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%v22 : tensor<12x17x17xf32>) outs(%f27 : tensor<12x17xf32>) {
      ^bb0(%x: f32, %y: f32):
        %v29 = arith.addf %x, %y : f32
      linalg.yield %v29 : f32
    } -> tensor<12x17xf32>
    %e30 = tensor.empty() : tensor<12x17x17xf32>
    %v31 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%v22, %v28 : tensor<12x17x17xf32>, tensor<12x17xf32>) outs(%e30 : tensor<12x17x17xf32>) {
      ^bb0(%b0: f32, %b1: f32, %bo: f32):
    %v32 = arith.divf %b0, %b1 : f32
      linalg.yield %v32 : f32
    } -> tensor<12x17x17xf32>
    %e33 = tensor.empty() : tensor<12x17x32xf32>
    %c34 = arith.constant 0.0 : f32
    %f35 = linalg.fill ins(%c34 : f32) outs(%e33 : tensor<12x17x32xf32>) -> tensor<12x17x32xf32>
    %v36 = linalg.batch_matmul ins(%v31, %a2 : tensor<12x17x17xf32>, tensor<12x17x32xf32>) outs(%f35 : tensor<12x17x32xf32>) -> tensor<12x17x32xf32>
    return %v36 : tensor<12x17x32xf32>
  }
}

//--- rows.mlir
#q = affine_map<(b, i, j, k) -> (b, i, k)>
#k = affine_map<(b, i, j, k) -> (b, j, k)>
#s = affine_map<(b, i, j, k) -> (b, i, j)>
#id = affine_map<(b, i, j) -> (b, i, j)>
#t = affine_map<(b, i, j) -> (b, j, i)>
#mk = affine_map<(b, i, j) -> (i, j)>
func.func @attention(%q: tensor<3x17x8xf32>, %k: tensor<3x17x8xf32>, %v: tensor<3x17x8xf32>) -> tensor<3x17x8xf32> {
  %z = arith.constant 0.0 : f32
  %sc = arith.constant 0.35355339059327373 : f32
  %es = tensor.empty() : tensor<3x17x17xf32>
  %zs = linalg.fill ins(%z : f32) outs(%es : tensor<3x17x17xf32>) -> tensor<3x17x17xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<3x17x8xf32>, tensor<3x17x8xf32>) outs(%zs : tensor<3x17x17xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<3x17x17xf32>
  %ss = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<3x17x17xf32>) outs(%es : tensor<3x17x17xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %sc : f32
    linalg.yield %r : f32
  } -> tensor<3x17x17xf32>
  %p = linalg.softmax dimension(2) ins(%ss : tensor<3x17x17xf32>) outs(%es : tensor<3x17x17xf32>) -> tensor<3x17x17xf32>
  %eo = tensor.empty() : tensor<3x17x8xf32>
  %zo = linalg.fill ins(%z : f32) outs(%eo : tensor<3x17x8xf32>) -> tensor<3x17x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<3x17x17xf32>, tensor<3x17x8xf32>) outs(%zo : tensor<3x17x8xf32>) -> tensor<3x17x8xf32>
  return %o : tensor<3x17x8xf32>
}

//--- escapes.mlir
// The scores are a result too: the chain keeps its buffers.
func.func @attention(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xf32>, %v: tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x8xf32>) {
  %z = arith.constant 0.0 : f32
  %es = tensor.empty() : tensor<2x8x8xf32>
  %zs = linalg.fill ins(%z : f32) outs(%es : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %ekt = tensor.empty() : tensor<2x16x8xf32>
  %kt = linalg.transpose ins(%k : tensor<2x8x16xf32>) outs(%ekt : tensor<2x16x8xf32>) permutation = [0, 2, 1]
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x8x16xf32>, tensor<2x16x8xf32>) outs(%zs : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x8x8xf32>) outs(%es : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %eo = tensor.empty() : tensor<2x8x16xf32>
  %zo = linalg.fill ins(%z : f32) outs(%eo : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x8xf32>, tensor<2x8x16xf32>) outs(%zo : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %o, %s : tensor<2x8x16xf32>, tensor<2x8x8xf32>
}

//--- freed.mlir
func.func @attention(%q: tensor<17x3x8xf32>, %k: tensor<17x3x8xf32>, %v: tensor<3x17x8xf32>) -> tensor<3x17x8xf32> {
  %z = arith.constant 0.0 : f32
  %sc = arith.constant 0.35355339059327373 : f32
  %eq = tensor.empty() : tensor<3x17x8xf32>
  %qh = linalg.transpose ins(%q : tensor<17x3x8xf32>) outs(%eq : tensor<3x17x8xf32>) permutation = [1, 0, 2]
  %ek = tensor.empty() : tensor<3x8x17xf32>
  %kt = linalg.transpose ins(%k : tensor<17x3x8xf32>) outs(%ek : tensor<3x8x17xf32>) permutation = [1, 2, 0]
  %es = tensor.empty() : tensor<3x17x17xf32>
  %zs = linalg.fill ins(%z : f32) outs(%es : tensor<3x17x17xf32>) -> tensor<3x17x17xf32>
  %s = linalg.batch_matmul ins(%qh, %kt : tensor<3x17x8xf32>, tensor<3x8x17xf32>) outs(%zs : tensor<3x17x17xf32>) -> tensor<3x17x17xf32>
  %ss = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<3x17x17xf32>) outs(%es : tensor<3x17x17xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %sc : f32
    linalg.yield %r : f32
  } -> tensor<3x17x17xf32>
  %p = linalg.softmax dimension(2) ins(%ss : tensor<3x17x17xf32>) outs(%es : tensor<3x17x17xf32>) -> tensor<3x17x17xf32>
  %eo = tensor.empty() : tensor<3x17x8xf32>
  %zo = linalg.fill ins(%z : f32) outs(%eo : tensor<3x17x8xf32>) -> tensor<3x17x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<3x17x17xf32>, tensor<3x17x8xf32>) outs(%zo : tensor<3x17x8xf32>) -> tensor<3x17x8xf32>
  return %o : tensor<3x17x8xf32>
}
