// pbc-tile on a GEMM whose B is read across the vector loop (attention's
// Q·Kᵀ: K[h][j][k] along the output column j). B is copied once, before the
// nest, into a buffer with j last (pbc.copy nests of kind pointwise, freed
// after it), the access reads the copy at [h, k, j], and the nest is tiled
// like any GEMM. The copy of whole 16 x 16 blocks is a scalar nest with j
// outer (TILE), which pbc-transpose-copies turns into 16 vector loads along
// k, 4 rounds of 16 shuffles, 16 vector stores along j; the strips of
// partial blocks (@partial) stay element by element. An input that the
// nest also writes, or one read along j at a stride other than 1, is not
// copied and the nest stays untiled.
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=1048576 l3-bytes=33554432}' | FileCheck %s --check-prefix=TILE
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=1048576 l3-bytes=33554432};pbc-transpose-copies{vector-bits=512}' | FileCheck %s
// TILE-LABEL: func.func @qkt
// TILE: %[[KT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x64x128xf32>
// TILE: affine.for %[[H:.*]] = 0 to 4 {
// TILE-NEXT: affine.for %[[J:.*]] = 0 to 128 {
// TILE-NEXT: affine.for %[[K:.*]] = 0 to 64 {
// TILE-NEXT: %[[V:.*]] = affine.load %arg1[%[[H]], %[[J]], %[[K]]] : memref<4x128x64xf32>
// TILE-NEXT: affine.store %[[V]], %[[KT]][%[[H]], %[[K]], %[[J]]] : memref<4x64x128xf32>
// TILE: } {pbc.copy, pbc.kind = "pointwise"}
// TILE-NOT: pbc.copy
// TILE: pbc.kind = "matmul"
// CHECK-LABEL: func.func @qkt
// CHECK: %[[KT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x64x128xf32>
// CHECK: affine.for %[[H:.*]] = 0 to 4 {
// CHECK-NEXT: affine.for %[[J:.*]] = 0 to 128 step 16 {
// CHECK-NEXT: affine.for %[[K:.*]] = 0 to 64 step 16 {
// CHECK-NEXT: %[[R0:.*]] = affine.vector_load %arg1[%[[H]], %[[J]], %[[K]]] : memref<4x128x64xf32>, vector<16xf32>
// CHECK-NEXT: %[[R1:.*]] = affine.vector_load %arg1[%[[H]], %[[J]] + 1, %[[K]]]
// CHECK-COUNT-14: affine.vector_load %arg1
// CHECK-NEXT: %{{.*}} = vector.shuffle %[[R0]], %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]
// CHECK-COUNT-63: vector.shuffle
// CHECK-NEXT: affine.vector_store %{{.*}}, %[[KT]][%[[H]], %[[K]], %[[J]]] : memref<4x64x128xf32>, vector<16xf32>
// CHECK-NEXT: affine.vector_store %{{.*}}, %[[KT]][%[[H]], %[[K]] + 1, %[[J]]]
// CHECK-COUNT-14: affine.vector_store
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: } {pbc.copy, pbc.kind = "pointwise"}
// CHECK-NOT: pbc.copy
// CHECK: affine.load %[[KT]][%{{.*}}, %[[KK:.*]], %[[JJ:.*]]] : memref<4x64x128xf32>
// CHECK: pbc.register_tile = 64 : i64, pbc.vectorize
// CHECK: pbc.kind = "matmul"
// CHECK-NEXT: memref.dealloc %[[KT]] : memref<4x64x128xf32>
func.func @qkt(%q: memref<4x128x64xf32>, %k: memref<4x128x64xf32>, %s: memref<4x128x128xf32>) {
  affine.for %h = 0 to 4 {
    affine.for %i = 0 to 128 {
      affine.for %j = 0 to 128 {
        affine.for %kk = 0 to 64 {
          %x = affine.load %q[%h, %i, %kk] : memref<4x128x64xf32>
          %y = affine.load %k[%h, %j, %kk] : memref<4x128x64xf32>
          %z = affine.load %s[%h, %i, %j] : memref<4x128x128xf32>
          %p = arith.mulf %x, %y : f32
          %r = arith.addf %z, %p : f32
          affine.store %r, %s[%h, %i, %j] : memref<4x128x128xf32>
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// B is 40 x 24: one row of 2 whole blocks (j < 32, k < 16); the right strip
// (j >= 32, all of k) and the bottom strip (k >= 16, j < 32) as scalar nests.
// CHECK-LABEL: func.func @partial
// CHECK: %[[BT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<24x40xf32>
// CHECK: affine.for %{{.*}} = 0 to 32 step 16 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 16 step 16 {
// CHECK-COUNT-16: affine.vector_load %arg1
// CHECK-COUNT-64: vector.shuffle
// CHECK-COUNT-16: affine.vector_store
// CHECK: } {pbc.copy, pbc.kind = "pointwise"}
// CHECK-NEXT: affine.for %[[K:.*]] = 0 to 24 {
// CHECK-NEXT: affine.for %[[J:.*]] = 0 to 8 {
// CHECK-NEXT: %[[V:.*]] = affine.load %arg1[%[[J]] + 32, %[[K]]] : memref<40x24xf32>
// CHECK-NEXT: affine.store %[[V]], %[[BT]][%[[K]], %[[J]] + 32] : memref<24x40xf32>
// CHECK: } {pbc.copy, pbc.kind = "pointwise"}
// CHECK-NEXT: affine.for %[[K:.*]] = 0 to 8 {
// CHECK-NEXT: affine.for %[[J:.*]] = 0 to 32 {
// CHECK-NEXT: %[[V:.*]] = affine.load %arg1[%[[J]], %[[K]] + 16] : memref<40x24xf32>
// CHECK-NEXT: affine.store %[[V]], %[[BT]][%[[K]] + 16, %[[J]]] : memref<24x40xf32>
// CHECK: } {pbc.copy, pbc.kind = "pointwise"}
// CHECK-NOT: pbc.copy
// CHECK: pbc.kind = "matmul"
// CHECK-NEXT: memref.dealloc %[[BT]] : memref<24x40xf32>
func.func @partial(%a: memref<64x24xf32>, %b: memref<40x24xf32>, %c: memref<64x40xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 40 {
      affine.for %kk = 0 to 24 {
        %x = affine.load %a[%i, %kk] : memref<64x24xf32>
        %y = affine.load %b[%j, %kk] : memref<40x24xf32>
        %z = affine.load %c[%i, %j] : memref<64x40xf32>
        %p = arith.mulf %x, %y : f32
        %r = arith.addf %z, %p : f32
        affine.store %r, %c[%i, %j] : memref<64x40xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// CHECK-LABEL: func.func @strided
// CHECK-NOT: memref.alloc
// CHECK-NOT: pbc.register_tile
// CHECK: return
func.func @strided(%a: memref<64x64xf32>, %b: memref<256x64xf32>, %c: memref<64x128xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 128 {
      affine.for %kk = 0 to 64 {
        %x = affine.load %a[%i, %kk] : memref<64x64xf32>
        %y = affine.load %b[2 * %j, %kk] : memref<256x64xf32>
        %z = affine.load %c[%i, %j] : memref<64x128xf32>
        %p = arith.mulf %x, %y : f32
        %r = arith.addf %z, %p : f32
        affine.store %r, %c[%i, %j] : memref<64x128xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// CHECK-LABEL: func.func @written
// CHECK-NOT: memref.alloc
// CHECK-NOT: pbc.register_tile
// CHECK: return
func.func @written(%a: memref<128x128xf32>, %c: memref<128x128xf32>) {
  affine.for %i = 0 to 128 {
    affine.for %j = 0 to 128 {
      affine.for %kk = 0 to 128 {
        %x = affine.load %a[%i, %kk] : memref<128x128xf32>
        %y = affine.load %c[%j, %kk] : memref<128x128xf32>
        %z = affine.load %c[%i, %j] : memref<128x128xf32>
        %p = arith.mulf %x, %y : f32
        %r = arith.addf %z, %p : f32
        affine.store %r, %c[%i, %j] : memref<128x128xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
