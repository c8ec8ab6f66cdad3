// An entry whose inputs lead with a dynamic size (the batch) and whose
// program computes each batch element from that element alone is compiled
// once for every batch size: the batch-of-one function @F__pbc_slice, and
// glue that loops over the batch. The header and signatures show the batch
// as `?` (-1); a batched input loses a pbc.invariant mark (each element is
// another buffer), a weight keeps it; a static entry beside it is
// unchanged; --dim still compiles for given sizes.
// RUN: rm -rf %t && mkdir -p %t
// RUN: pbc --emit=lib -o %t/libmlp.so --signatures=%t/mlp.sig %s
// RUN: FileCheck %s --check-prefix=HDR --input-file=%t/libmlp.h
// RUN: FileCheck %s --check-prefix=SIG --input-file=%t/mlp.sig
// RUN: llvm-nm -D %t/libmlp.so | FileCheck %s --check-prefix=SYM
// RUN: pbc --emit=s1 %s | FileCheck %s --check-prefix=S1
// RUN: pbc --emit=s1 --dim=6 %s | FileCheck %s --check-prefix=SIZED
// HDR: A size ? is the call's batch
// HDR: void _mlir_ciface_mlp(const PbcMemRef_f32_2 *in0 /* ?x8xf32 */,
// HDR-NEXT: const PbcMemRef_f32_2 *in1 /* 8x4xf32 */,
// HDR-NEXT: const PbcMemRef_f32_1 *in2 /* 4xf32 */,
// HDR-NEXT: PbcMemRef_f32_2 *out0 /* ?x4xf32 */);
// HDR: void _mlir_ciface_pairs(const PbcMemRef_f32_3 *in0 /* ?x2x3xf32 */,
// HDR-NEXT: const PbcMemRef_f32_2 *in1 /* ?x3xf32 */,
// HDR-NEXT: PbcMemRef_f32_3 *out0 /* ?x3x2xf32 */);
// HDR: void _mlir_ciface_rows(const PbcMemRef_f32_3 *in0 /* ?x4x3xf32 */,
// HDR: void _mlir_ciface_broadcast(const PbcMemRef_f32_2 *in0 /* ?x4xf32 */,
// HDR: void _mlir_ciface_still(const PbcMemRef_f32_1 *in0 /* 5xf32 */,
// SIG: entries 5
// SIG-NEXT: mlp 3 1
// SIG-NEXT: 0 2 -1 8
// SIG-NEXT: 0 2 8 4
// SIG-NEXT: 0 1 4
// SIG-NEXT: 0 2 -1 4
// SYM-DAG: T _mlir_ciface_mlp
// SYM-DAG: T _mlir_ciface_mlp__pbc_slice
// SYM-DAG: T _pbc_packed_mlp
// SYM-DAG: T _mlir_ciface_pairs
// S1: func.func @mlp__pbc_slice(%arg0: memref<1x8xf32>, %arg1: memref<8x4xf32> {pbc.invariant}, %arg2: memref<4xf32>, %arg3: memref<1x4xf32>)
// S1: func.func @pairs__pbc_slice(%arg0: memref<1x2x3xf32>, %arg1: memref<1x3xf32>, %arg2: memref<1x3x2xf32>)
// S1: func.func @rows__pbc_slice(%arg0: memref<1x4x3xf32>, %arg1: memref<3x5xf32>, %arg2: memref<1x4x5xf32>)
// S1: func.func @broadcast__pbc_slice(%arg0: memref<1x4xf32>, %arg1: memref<1x1xf32>, %arg2: memref<1x4xf32>)
// S1: func.func @still(
// SIZED: func.func @mlp(%arg0: memref<6x8xf32>
#id2 = affine_map<(i, j) -> (i, j)>
func.func @mlp(%x: tensor<?x8xf32> {pbc.invariant}, %w: tensor<8x4xf32> {pbc.invariant}, %b: tensor<4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<?x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>
  %m = linalg.matmul ins(%x, %w : tensor<?x8xf32>, tensor<8x4xf32>) outs(%f : tensor<?x4xf32>) -> tensor<?x4xf32>
  %r = linalg.generic {indexing_maps = [#id2, affine_map<(i, j) -> (j)>, #id2],
       iterator_types = ["parallel", "parallel"]} ins(%m, %b : tensor<?x4xf32>, tensor<4xf32>) outs(%e : tensor<?x4xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %t = arith.maximumf %s, %z : f32
    linalg.yield %t : f32
  } -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
// Two batched inputs, a transpose and a reduction over another dimension.
func.func @pairs(%x: tensor<?x2x3xf32>, %y: tensor<?x3xf32>) -> tensor<?x3x2xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x2x3xf32>
  %e = tensor.empty(%n) : tensor<?x3x2xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, j, i)>, affine_map<(b, i, j) -> (b, i)>,
                                        affine_map<(b, i, j) -> (b, i, j)>],
       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %y : tensor<?x2x3xf32>, tensor<?x3xf32>) outs(%e : tensor<?x3x2xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.mulf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<?x3x2xf32>
  return %t : tensor<?x3x2xf32>
}
// The batch merged with the rows after it for a matmul (BERT's linear
// layers: batch x sequence rows), then split again.
func.func @rows(%x: tensor<?x4x3xf32>, %w: tensor<3x5xf32>) -> tensor<?x4x5xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x4x3xf32>
  %flat = tensor.collapse_shape %x [[0, 1], [2]] : tensor<?x4x3xf32> into tensor<?x3xf32>
  %c4 = arith.constant 4 : index
  %m = arith.muli %n, %c4 : index
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%m) : tensor<?x5xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x5xf32>) -> tensor<?x5xf32>
  %p = linalg.matmul ins(%flat, %w : tensor<?x3xf32>, tensor<3x5xf32>) outs(%f : tensor<?x5xf32>) -> tensor<?x5xf32>
  %r = tensor.expand_shape %p [[0, 1], [2]] output_shape [%n, 4, 5] : tensor<?x5xf32> into tensor<?x4x5xf32>
  return %r : tensor<?x4x5xf32>
}
// torch-mlir's broadcast of a dynamic size: an extract in the body at
// select(n == 1, 0, i), i the index of the loop over n.
func.func @broadcast(%x: tensor<?x4xf32>, %s: tensor<?x1xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x4xf32>
  %e = tensor.empty(%n) : tensor<?x4xf32>
  %b = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<?x4xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %one = arith.cmpi eq, %n, %c1 : index
    %k = arith.select %one, %c0, %i : index
    %v = tensor.extract %s[%k, %c0] : tensor<?x1xf32>
    linalg.yield %v : f32
  } -> tensor<?x4xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<?x4xf32>, tensor<?x4xf32>) outs(%e : tensor<?x4xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %t = arith.mulf %a, %c : f32
    linalg.yield %t : f32
  } -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
func.func @still(%x: tensor<5xf32>) -> tensor<5xf32> {
  %e = tensor.empty() : tensor<5xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
       iterator_types = ["parallel"]} ins(%x : tensor<5xf32>) outs(%e : tensor<5xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<5xf32>
  return %r : tensor<5xf32>
}
