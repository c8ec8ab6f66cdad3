// pbc-distinct-empties: a tensor.empty used by several ops becomes one per
// use, each just before its user (with the same dynamic sizes); a single
// use is left alone.
// RUN: pbc-opt %s -p 'pbc-distinct-empties' | FileCheck %s
// CHECK-LABEL: func.func @shared
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT: %[[E2:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[E2]] :
// CHECK-NEXT: %[[E3:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[E3]] :
// CHECK: linalg.generic {{.*}} outs(%[[E1]] :
// CHECK-NOT: tensor.empty
// CHECK: return
func.func @shared(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %f : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.mulf %p, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @dynamic
// CHECK: %[[N:.*]] = tensor.dim
// CHECK-NEXT: %[[D1:.*]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK-NEXT: %[[D2:.*]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[D2]] :
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[D1]] :
func.func @dynamic(%x: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %a = linalg.fill ins(%one : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %b = linalg.fill ins(%two : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  return %a, %b : tensor<?xf32>, tensor<?xf32>
}
// CHECK-LABEL: func.func @single
// CHECK-COUNT-1: tensor.empty
// CHECK-NOT: tensor.empty
func.func @single(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %a = linalg.fill ins(%one : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}
