// Dynamic programs that do not separate over their batch: one located
// error per entry, naming the op and why (they compile with --shape or
// --dim instead). A slice of the batch, a pad of it, a gather of batch
// rows, a reduction over it, the batch index, a flattened batch returned,
// a batch merged behind another dimension, an extract by the loop index
// from a batch merged with the rows after it (the index spans several
// elements), a second dynamic dimension, a result without it, its size
// read into the arithmetic. (Without --dynamic=batch they compile with
// symbolic sizes instead, but for @flatten_batch: symbolic_sizes.mlir.)
// RUN: not pbc --emit=lib --dynamic=batch -o %t.so %s 2>&1 | FileCheck %s
// RUN: pbc --emit=s1 --dim=3 %s > /dev/null
// CHECK-DAG: batch_loop_refusals.mlir:29:8: error: @sum_batch does not separate over its batch (the leading `?` of its inputs): 'linalg.generic' reduces over the batch; give its sizes (pbc --shape or --dim) to compile it for them
// CHECK-DAG: batch_loop_refusals.mlir:40:8: error: @batch_index does not separate over its batch {{.*}} reads the batch index (linalg.index)
// CHECK-DAG: batch_loop_refusals.mlir:53:3: error: @flatten_batch does not separate {{.*}} 'func.return' returns a result whose leading dimension is not the batch
// CHECK-DAG: batch_loop_refusals.mlir:60:8: error: @shift does not separate {{.*}} 'tensor.extract_slice' takes part of the batch
// CHECK-DAG: batch_loop_refusals.mlir:72:8: error: @gather_rows does not separate {{.*}} reads a batched value inside its region
// CHECK-DAG: batch_loop_refusals.mlir:82:1: error: argument 0 of @two_dims has a dynamic size in dimension 1
// CHECK-DAG: batch_loop_refusals.mlir:86:3: error: @weights_out does not separate {{.*}} 'func.return' returns a result whose leading dimension is not the batch
// CHECK-DAG: batch_loop_refusals.mlir:118:8: error: @merged_extract does not separate {{.*}} 'linalg.generic' reads a batched value inside its region
// CHECK-DAG: batch_loop_refusals.mlir:107:8: error: @batch_behind does not separate {{.*}} 'tensor.collapse_shape' merges the batch into a dimension before it
// CHECK-DAG: batch_loop_refusals.mlir:92:9: error: @mean_batch does not separate {{.*}} 'arith.sitofp' computes with a dynamic size
#id = affine_map<(i, j) -> (i, j)>
func.func @sum_batch(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.reduce ins(%x : tensor<?x8xf32>) outs(%f : tensor<8xf32>) dimensions = [0]
    (%a: f32, %o: f32) { %s = arith.addf %a, %o : f32
      linalg.yield %s : f32 }
  %e2 = tensor.empty(%n) : tensor<?x8xf32>
  %b = linalg.broadcast ins(%r : tensor<8xf32>) outs(%e2 : tensor<?x8xf32>) dimensions = [0]
  return %b : tensor<?x8xf32>
}
func.func @batch_index(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %s = arith.addf %a, %fi : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
func.func @flatten_batch(%x: tensor<?x8xf32>) -> tensor<?xf32> {
  %c = tensor.collapse_shape %x [[0, 1]] : tensor<?x8xf32> into tensor<?xf32>
  return %c : tensor<?xf32>
}
func.func @shift(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %m = arith.subi %n, %c1 : index
  %s = tensor.extract_slice %x[1, 0] [%m, 8] [1, 1] : tensor<?x8xf32> to tensor<?x8xf32>
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %s low[0, 0] high[1, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %z : f32
  } : tensor<?x8xf32> to tensor<?x8xf32>
  return %p : tensor<?x8xf32>
}
func.func @gather_rows(%x: tensor<?x8xf32>, %idx: tensor<?xi64>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %idx, %c0 : tensor<?xi64>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, #id], iterator_types = ["parallel", "parallel"]}
      ins(%idx : tensor<?xi64>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%k: i64, %o: f32):
    %kk = arith.index_cast %k : i64 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %x[%kk, %j] : tensor<?x8xf32>
    linalg.yield %v : f32
  } -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
func.func @two_dims(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  return %x : tensor<?x?xf32>
}
func.func @weights_out(%x: tensor<?x8xf32>, %w: tensor<8xf32>) -> tensor<8xf32> {
  return %w : tensor<8xf32>
}
func.func @mean_batch(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %ni = arith.index_cast %n : index to i32
  %nf = arith.sitofp %ni : i32 to f32
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.divf %a, %nf : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
func.func @batch_behind(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%n) : tensor<8x?xf32>
  %t = linalg.transpose ins(%x : tensor<?x8xf32>) outs(%e : tensor<8x?xf32>) permutation = [1, 0]
  %c = tensor.collapse_shape %t [[0, 1]] : tensor<8x?xf32> into tensor<?xf32>
  %r = tensor.expand_shape %c [[0, 1]] output_shape [%n, 8] : tensor<?xf32> into tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
func.func @merged_extract(%x: tensor<?x8xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %flat = tensor.collapse_shape %x [[0, 1]] : tensor<?x8xf32> into tensor<?xf32>
  %m = arith.muli %n, %c8 : index
  %e = tensor.empty(%m) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>], iterator_types = ["parallel"]} outs(%e : tensor<?xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %v = tensor.extract %flat[%i] : tensor<?xf32>
    linalg.yield %v : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
