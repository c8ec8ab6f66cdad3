// pbc-tile on GEMMs whose B is read across the vector loop (attention's
// Q·Kᵀ: K[h][j][k] along the output column j). B's access is marked
// pbc.pack_transposed = the dimension to move last (j), and the nest is
// tiled like any GEMM: pbc-pack copies B's blocks transposed
// (pack_transposed.mlir), no whole copy first. Where the nest reads that
// memref through another access too (X·Xᵀ, @gram), it is copied once,
// before the nest, into a buffer with j last (a scalar pbc.copy nest of
// kind pointwise, j outer, TILE; freed after the nest), which
// pbc-transpose-copies moves in 16 x 16 blocks through registers, the
// partial blocks' strips element by element. An input that the nest also
// writes, or one read along j at a stride other than 1, is not copied and
// the nest stays untiled.
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=1048576 l3-bytes=33554432}' | FileCheck %s --check-prefix=TILE
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=1048576 l3-bytes=33554432};pbc-transpose-copies{vector-bits=512}' | FileCheck %s
// CHECK-LABEL: func.func @qkt
// CHECK-NOT: memref.alloc
// CHECK: affine.load %arg1[%{{.*}}, %{{.*}}, %{{.*}}] {pbc.pack_transposed = 1 : i64} : memref<4x128x64xf32>
// CHECK: pbc.register_tile = 64 : i64, pbc.vectorize
// CHECK: pbc.kind = "matmul"
// CHECK-NOT: memref.dealloc
// CHECK: return
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
// X is 40 x 24, read as A and as B: one scalar nest, j outer; pbc-transpose-copies blocks
// 2 x 1 whole blocks (j < 32, k < 16) and leaves the right strip (j < 32,
// k >= 16) and the bottom one (j >= 32, all of k) element by element.
// TILE-LABEL: func.func @gram
// TILE: %[[BT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<24x40xf32>
// TILE: affine.for %[[J:.*]] = 0 to 40 {
// TILE-NEXT: affine.for %[[K:.*]] = 0 to 24 {
// TILE-NEXT: %[[V:.*]] = affine.load %arg0[%[[J]], %[[K]]] : memref<40x24xf32>
// TILE-NEXT: affine.store %[[V]], %[[BT]][%[[K]], %[[J]]] : memref<24x40xf32>
// CHECK-LABEL: func.func @gram
// CHECK: %[[BT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<24x40xf32>
// CHECK: affine.for %{{.*}} = 0 to 32 step 16 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 16 step 16 {
// CHECK-COUNT-16: affine.vector_load %arg0
// CHECK-COUNT-64: vector.shuffle
// CHECK-COUNT-16: affine.vector_store
// CHECK: } {pbc.copy, pbc.kind = "pointwise"}
// CHECK-NEXT: affine.for %[[J:.*]] = 0 to 32 {
// CHECK-NEXT: affine.for %[[K:.*]] = 16 to 24 {
// CHECK-NEXT: %[[V:.*]] = affine.load %arg0[%[[J]], %[[K]]] : memref<40x24xf32>
// CHECK-NEXT: affine.store %[[V]], %[[BT]][%[[K]], %[[J]]] : memref<24x40xf32>
// CHECK: } {pbc.copy, pbc.kind = "pointwise"}
// CHECK-NEXT: affine.for %[[J:.*]] = 32 to 40 {
// CHECK-NEXT: affine.for %[[K:.*]] = 0 to 24 {
// CHECK-NEXT: %[[V:.*]] = affine.load %arg0[%[[J]], %[[K]]] : memref<40x24xf32>
// CHECK-NEXT: affine.store %[[V]], %[[BT]][%[[K]], %[[J]]] : memref<24x40xf32>
// CHECK: } {pbc.copy, pbc.kind = "pointwise"}
// CHECK-NOT: pbc.copy
// CHECK: pbc.kind = "matmul"
// CHECK-NEXT: memref.dealloc %[[BT]] : memref<24x40xf32>
func.func @gram(%x: memref<40x24xf32>, %c: memref<40x40xf32>) {
  affine.for %i = 0 to 40 {
    affine.for %j = 0 to 40 {
      affine.for %kk = 0 to 24 {
        %a = affine.load %x[%i, %kk] : memref<40x24xf32>
        %b = affine.load %x[%j, %kk] : memref<40x24xf32>
        %z = affine.load %c[%i, %j] : memref<40x40xf32>
        %p = arith.mulf %a, %b : f32
        %r = arith.addf %z, %p : f32
        affine.store %r, %c[%i, %j] : memref<40x40xf32>
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
