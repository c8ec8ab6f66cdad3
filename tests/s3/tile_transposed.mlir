// pbc-tile on a GEMM whose B is read across the vector loop (attention's
// Q·Kᵀ: K[h][j][k] along the output column j). B is copied once, before the
// nest, into a buffer with j last (a pbc.copy nest of kind pointwise, freed
// after it), the access reads the copy at [h, k, j], and the nest is tiled
// like any GEMM. An input that the nest also writes, or one read along j at
// a stride other than 1, is not copied and the nest stays untiled.
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=1048576 l3-bytes=33554432}' | FileCheck %s
// CHECK-LABEL: func.func @qkt
// CHECK: %[[KT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x64x128xf32>
// CHECK: affine.for %[[H:.*]] = 0 to 4 {
// CHECK-NEXT: affine.for %[[K:.*]] = 0 to 64 {
// CHECK-NEXT: affine.for %[[J:.*]] = 0 to 128 {
// CHECK-NEXT: %[[V:.*]] = affine.load %arg1[%[[H]], %[[J]], %[[K]]] : memref<4x128x64xf32>
// CHECK-NEXT: affine.store %[[V]], %[[KT]][%[[H]], %[[K]], %[[J]]] : memref<4x64x128xf32>
// CHECK: } {pbc.copy, pbc.kind = "pointwise"}
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
