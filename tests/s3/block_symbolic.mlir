// pbc-block-symbolic: a key nest whose leading loop runs to a run-time
// size (its bound a symbol) becomes loops over static blocks of 64, 16, 4
// and 1 rows, each marked pbc.blocks and holding a static nest whose rows
// are block * t + i (computed in the innermost body: the block loop holds
// the static nest alone); each level starts where the one before ended,
// and after blocks of one row nothing is left. Loops before the symbolic
// one (a batch of one) stay outside the blocks. A nest whose symbolic loop
// is its innermost stays as it is. Two symbolic loops with only parallel
// loops from the first to the second (attention's scores over two
// sequences; its values reducing over one) both get blocks, the second's
// inside the first's and outside every static loop: one static nest per
// pair of heights. A reduction before the second keeps it from moving
// out: then only the innermost gets blocks. Loops the nest's test finds
// parallel are marked so (the heads, outside the blocks, too).
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
// CHECK: } {pbc.kind = "matmul", pbc.parallel}
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

// CHECK-LABEL: func.func @scores
// CHECK: %[[N:.*]] = memref.dim
// CHECK: affine.for %{{.*}} = 0 to 2 {
// CHECK-NEXT: affine.for %[[IB:.*]] = #[[LB0]]()[%[[N]]] to #[[UB64]]()[%[[N]]] {
// CHECK-NEXT: affine.for %[[JB:.*]] = #[[LB0]]()[%[[N]]] to #[[UB64]]()[%[[N]]] {
// CHECK-NEXT: affine.for %[[I:.*]] = 0 to 64 {
// CHECK-NEXT: affine.for %[[J:.*]] = 0 to 64 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 8 {
// CHECK-DAG: affine.apply #[[ROW64]](%[[JB]], %[[J]])
// CHECK-DAG: affine.apply #[[ROW64]](%[[IB]], %[[I]])
// CHECK: } {pbc.parallel}
// CHECK-NEXT: } {pbc.parallel}
// CHECK-NEXT: } {pbc.blocks}
// CHECK-NEXT: affine.for %{{.*}} = #[[LB16]]()[%[[N]]] to #[[UB16]]()[%[[N]]] {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 64 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 16 {
// CHECK-COUNT-19: pbc.blocks
// CHECK-NEXT: } {pbc.kind = "matmul", pbc.parallel}
// CHECK-NOT: pbc.blocks
// CHECK: return
func.func @scores(%q: memref<2x?x8xf32>, %k: memref<2x8x?xf32>, %s: memref<2x?x?xf32>) {
  %c1 = arith.constant 1 : index
  %n = memref.dim %q, %c1 : memref<2x?x8xf32>
  affine.for %h = 0 to 2 {
    affine.for %i = 0 to %n {
      affine.for %j = 0 to %n {
        affine.for %d = 0 to 8 {
          %x = affine.load %q[%h, %i, %d] : memref<2x?x8xf32>
          %y = affine.load %k[%h, %d, %j] : memref<2x8x?xf32>
          %z = affine.load %s[%h, %i, %j] : memref<2x?x?xf32>
          %p = arith.mulf %x, %y : f32
          %a = arith.addf %z, %p : f32
          affine.store %a, %s[%h, %i, %j] : memref<2x?x?xf32>
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}

// CHECK-LABEL: func.func @values
// CHECK: %[[N:.*]] = memref.dim
// CHECK: affine.for %{{.*}} = 0 to 2 {
// CHECK-NEXT: affine.for %[[IB:.*]] = #[[LB0]]()[%[[N]]] to #[[UB64]]()[%[[N]]] {
// CHECK-NEXT: affine.for %[[KB:.*]] = #[[LB0]]()[%[[N]]] to #[[UB64]]()[%[[N]]] {
// CHECK-NEXT: affine.for %[[I:.*]] = 0 to 64 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 8 {
// CHECK-NEXT: affine.for %[[K:.*]] = 0 to 64 {
// CHECK-DAG: affine.apply #[[ROW64]](%[[KB]], %[[K]])
// CHECK-DAG: affine.apply #[[ROW64]](%[[IB]], %[[I]])
// CHECK: }
// CHECK-NEXT: } {pbc.parallel}
// CHECK-NEXT: } {pbc.parallel}
// CHECK-NEXT: } {pbc.blocks}
// CHECK-NEXT: affine.for %{{.*}} = #[[LB16]]()[%[[N]]] to #[[UB16]]()[%[[N]]] {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 64 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 8 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 16 {
// CHECK-COUNT-19: pbc.blocks
// CHECK-NEXT: } {pbc.kind = "matmul", pbc.parallel}
// CHECK-NOT: pbc.blocks
// CHECK: return
func.func @values(%p: memref<2x?x?xf32>, %v: memref<2x?x8xf32>, %o: memref<2x?x8xf32>) {
  %c1 = arith.constant 1 : index
  %n = memref.dim %p, %c1 : memref<2x?x?xf32>
  affine.for %h = 0 to 2 {
    affine.for %i = 0 to %n {
      affine.for %d = 0 to 8 {
        affine.for %k = 0 to %n {
          %x = affine.load %p[%h, %i, %k] : memref<2x?x?xf32>
          %y = affine.load %v[%h, %k, %d] : memref<2x?x8xf32>
          %z = affine.load %o[%h, %i, %d] : memref<2x?x8xf32>
          %m = arith.mulf %x, %y : f32
          %a = arith.addf %z, %m : f32
          affine.store %a, %o[%h, %i, %d] : memref<2x?x8xf32>
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}

// CHECK-LABEL: func.func @reduction_first
// CHECK: affine.for %{{.*}} = 0 to %{{.*}} {
// CHECK-NEXT: affine.for %{{.*}} = #[[LB0]]()[%{{.*}}] to #[[UB64]]()[%{{.*}}] {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 64 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 16 {
// CHECK-COUNT-4: pbc.blocks
// CHECK-NEXT: } {pbc.kind = "matmul"}
// CHECK-NOT: pbc.blocks
// CHECK: return
func.func @reduction_first(%a: memref<?x?xf32>, %b: memref<?x16xf32>, %c: memref<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?x?xf32>
  %m = memref.dim %a, %c1 : memref<?x?xf32>
  affine.for %k = 0 to %m {
    affine.for %i = 0 to %n {
      affine.for %j = 0 to 16 {
        %x = affine.load %a[%i, %k] : memref<?x?xf32>
        %y = affine.load %b[%k, %j] : memref<?x16xf32>
        %z = affine.load %c[%i, %j] : memref<?x16xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<?x16xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
