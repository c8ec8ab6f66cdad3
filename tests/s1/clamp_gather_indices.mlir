// pbc-clamp-gather-indices clamps a subscript of tensor.extract that comes
// from the data (arith.index_cast of a tensor element) into [0, dim - 1]:
// a static dimension's bound is a constant, a dynamic one's tensor.dim - 1.
// Subscripts from linalg.index (and its casts) are left alone.
// RUN: pbc-opt %s -p 'pbc-clamp-gather-indices' | FileCheck %s
// CHECK-LABEL: func.func @embedding
// CHECK: %[[I:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: %[[D:.*]] = linalg.index 2
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[LAST:.*]] = arith.constant 99 : index
// CHECK: %[[LO:.*]] = arith.maxsi %[[I]], %[[ZERO]] : index
// CHECK: %[[C:.*]] = arith.minsi %[[LO]], %[[LAST]] : index
// CHECK: tensor.extract %arg1[%[[C]], %[[D]]] : tensor<100x16xf32>
func.func @embedding(%ids: tensor<1x8xi64>, %table: tensor<100x16xf32>) -> tensor<1x8x16xf32> {
  %e = tensor.empty() : tensor<1x8x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<1x8xi64>) outs(%e : tensor<1x8x16xf32>) {
  ^bb0(%i: i64, %o: f32):
    %ii = arith.index_cast %i : i64 to index
    %d = linalg.index 2 : index
    %v = tensor.extract %table[%ii, %d] : tensor<100x16xf32>
    linalg.yield %v : f32
  } -> tensor<1x8x16xf32>
  return %r : tensor<1x8x16xf32>
}
// CHECK-LABEL: func.func @dynamic_rows
// CHECK: %[[I:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: %[[DIM:.*]] = tensor.dim %arg1, %{{.*}} : tensor<?x4xf32>
// CHECK: %[[LAST:.*]] = arith.subi %[[DIM]], %{{.*}} : index
// CHECK: %[[LO:.*]] = arith.maxsi %[[I]], %{{.*}} : index
// CHECK: %[[C:.*]] = arith.minsi %[[LO]], %[[LAST]] : index
// CHECK: tensor.extract %arg1[%[[C]], %{{.*}}] : tensor<?x4xf32>
func.func @dynamic_rows(%ids: tensor<8xi32>, %table: tensor<?x4xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<8xi32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%i: i32, %o: f32):
    %ii = arith.index_cast %i : i32 to index
    %d = linalg.index 1 : index
    %v = tensor.extract %table[%ii, %d] : tensor<?x4xf32>
    linalg.yield %v : f32
  } -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
// A subscript computed from loop indices (a reversal) is not clamped.
// CHECK-LABEL: func.func @from_loop_index
// CHECK-NOT: arith.maxsi
// CHECK-NOT: arith.minsi
// CHECK: return
func.func @from_loop_index(%x: tensor<16xf32>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e : tensor<16xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %c15 = arith.constant 15 : index
    %j = arith.subi %c15, %i : index
    %v = tensor.extract %x[%j] : tensor<16xf32>
    linalg.yield %v : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}
