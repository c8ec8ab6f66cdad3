// A linalg.generic output whose subscripts are not loop indices of their
// own, or that leaves out a parallel loop, is a located error: several
// iterations would write one element (which lands is undefined) and others
// none (MLIR's verifier accepts both; the fuzzer's mutant `d1 * 0 + d0
// floordiv 2` ran and disagreed with the naive reference). A constant 0
// into a dimension of 1 and a reduction loop left out are fine.
// RUN: split-file %s %t
// RUN: not pbc --emit=s1 %t/floordiv.mlir 2>&1 | FileCheck %s --check-prefix=FLOOR
// FLOOR: floordiv.mlir:2:8: error: 'linalg.generic' output 0: subscript 0 is not a loop index of its own (several iterations would write one element)
// RUN: not pbc --emit=s1 %t/dropped.mlir 2>&1 | FileCheck %s --check-prefix=DROP
// DROP: dropped.mlir:2:8: error: 'linalg.generic' output 0 leaves out parallel loop d1 (its iterations would write the same elements)
// RUN: pbc --emit=s1 %t/fine.mlir | FileCheck %s --check-prefix=FINE
// FINE: func.func @f

//--- floordiv.mlir
func.func @f(%a: tensor<8x4xf32>, %o: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0 floordiv 2, d1)>], iterator_types = ["parallel", "parallel"]}
       ins(%a : tensor<8x4xf32>) outs(%o : tensor<8x4xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  } -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
//--- dropped.mlir
func.func @f(%a: tensor<8x4xf32>, %o: tensor<8xf32>) -> tensor<8xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "parallel"]}
       ins(%a : tensor<8x4xf32>) outs(%o : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
//--- fine.mlir
func.func @f(%a: tensor<8x4xf32>, %o: tensor<8x1xf32>) -> tensor<8x1xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]}
       ins(%a : tensor<8x4xf32>) outs(%o : tensor<8x1xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8x1xf32>
  return %r : tensor<8x1xf32>
}
