// pbc-block-symbolic: a key nest whose leading loop runs to a run-time
// size (its bound a symbol) becomes loops over static blocks of 64, 16, 4
// and 1 rows, each marked pbc.blocks and holding a static nest whose rows
// are block * t + i (computed in the innermost body: the block loop holds
// the static nest alone); each level starts where the one before ended,
// and after blocks of one row nothing is left. Loops before the symbolic
// one (a batch of one) stay outside the blocks. A nest whose symbolic loop
// is its innermost stays as it is.
// RUN: pbc-opt %s -p 'pbc-block-symbolic' | FileCheck %s

// CHECK-DAG: #[[LB0:.*]] = affine_map<()[s0] -> (0)>
// CHECK-DAG: #[[UB64:.*]] = affine_map<()[s0] -> (s0 floordiv 64)>
// CHECK-DAG: #[[ROW64:.*]] = affine_map<(d0, d1) -> (d0 * 64 + d1)>
// CHECK-DAG: #[[LB16:.*]] = affine_map<()[s0] -> ((s0 floordiv 64) * 4)>
// CHECK-DAG: #[[UB16:.*]] = affine_map<()[s0] -> (s0 floordiv 16)>
// CHECK-DAG: #[[LB4:.*]] = affine_map<()[s0] -> ((s0 floordiv 16) * 4)>
// CHECK-DAG: #[[UB4:.*]] = affine_map<()[s0] -> (s0 floordiv 4)>
// CHECK-DAG: #[[LB1:.*]] = affine_map<()[s0] -> ((s0 floordiv 4) * 4)>
// CHECK-LABEL: func.func @rows
// CHECK: %[[N:.*]] = memref.dim
// CHECK: affine.for %[[B:.*]] = #[[LB0]]()[%[[N]]] to #[[UB64]]()[%[[N]]] {
// CHECK-NEXT: affine.for %[[I:.*]] = 0 to 64 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 16 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 32 {
// CHECK-NEXT: %[[R:.*]] = affine.apply #[[ROW64]](%[[B]], %[[I]])
// CHECK-NEXT: affine.load %arg0[%[[R]], %{{.*}}]
// CHECK: } {pbc.blocks, pbc.kind = "matmul"}
// CHECK: affine.for %{{.*}} = #[[LB16]]()[%[[N]]] to #[[UB16]]()[%[[N]]] {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 16 {
// CHECK: } {pbc.blocks, pbc.kind = "matmul"}
// CHECK: affine.for %{{.*}} = #[[LB4]]()[%[[N]]] to #[[UB4]]()[%[[N]]] {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 4 {
// CHECK: } {pbc.blocks, pbc.kind = "matmul"}
// CHECK: affine.for %{{.*}} = #[[LB1]]()[%[[N]]] to %[[N]] {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 1 {
// CHECK: } {pbc.blocks, pbc.kind = "matmul"}
// CHECK-NOT: affine.for
// CHECK: return
func.func @rows(%a: memref<?x32xf32>, %b: memref<32x16xf32>, %c: memref<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %a, %c0 : memref<?x32xf32>
  affine.for %i = 0 to %n {
    affine.for %j = 0 to 16 {
      affine.for %k = 0 to 32 {
        %x = affine.load %a[%i, %k] : memref<?x32xf32>
        %y = affine.load %b[%k, %j] : memref<32x16xf32>
        %z = affine.load %c[%i, %j] : memref<?x16xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<?x16xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}

// CHECK-LABEL: func.func @inner
// CHECK-NOT: pbc.blocks
// CHECK: affine.for %{{.*}} = 0 to 4 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 16 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to %{{.*}} {
// CHECK-NOT: pbc.blocks
// CHECK: return
func.func @inner(%a: memref<4x?xf32>, %b: memref<?x16xf32>, %c: memref<4x16xf32>) {
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c1 : memref<4x?xf32>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 16 {
      affine.for %k = 0 to %n {
        %x = affine.load %a[%i, %k] : memref<4x?xf32>
        %y = affine.load %b[%k, %j] : memref<?x16xf32>
        %z = affine.load %c[%i, %j] : memref<4x16xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<4x16xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}

// CHECK-LABEL: func.func @batch_of_one
// CHECK: affine.for %{{.*}} = 0 to 1 {
// CHECK-NEXT: affine.for %{{.*}} = #{{.*}}()[%{{.*}}] to #{{.*}}()[%{{.*}}] {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 64 {
// CHECK: } {pbc.blocks}
// CHECK: } {pbc.kind = "matmul"}
func.func @batch_of_one(%a: memref<1x?x32xf32>, %b: memref<32x16xf32>, %c: memref<1x?x16xf32>) {
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c1 : memref<1x?x32xf32>
  affine.for %h = 0 to 1 {
    affine.for %i = 0 to %n {
      affine.for %j = 0 to 16 {
        affine.for %k = 0 to 32 {
          %x = affine.load %a[%h, %i, %k] : memref<1x?x32xf32>
          %y = affine.load %b[%k, %j] : memref<32x16xf32>
          %z = affine.load %c[%h, %i, %j] : memref<1x?x16xf32>
          %p = arith.mulf %x, %y : f32
          %s = arith.addf %z, %p : f32
          affine.store %s, %c[%h, %i, %j] : memref<1x?x16xf32>
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}
