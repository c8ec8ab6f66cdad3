// pbc-pack copies each read-only input at the innermost pack site its
// subscripts depend on: B (k, j) and A (i, k) once per kc tile (inside ic,
// which pbc-tile keeps outermost here), into buffers whose 256-byte rows get
// one cache line of padding (power-of-two rows put every row of a
// tile in the same cache sets); the output is never packed; copy nests are
// marked pbc.copy; the compute nest reads the buffers.
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=65536 l3-bytes=33554432};pbc-pack{cache-line-bytes=64}' | FileCheck %s
// CHECK-LABEL: func.func @matmul
// CHECK: affine.for %{{.*}} = 0 to 256 step 64 {
// CHECK: %[[B:.*]] = memref.alloc() : memref<64x80xf32>
// CHECK: affine.load %arg1
// CHECK-NEXT: affine.store %{{.*}}, %[[B]]
// CHECK: } {pbc.copy}
// CHECK: %[[A:.*]] = memref.alloc() : memref<32x80xf32>
// CHECK: affine.load %arg0
// CHECK-NEXT: affine.store %{{.*}}, %[[A]]
// CHECK: } {pbc.copy}
// CHECK: affine.load %[[A]]
// CHECK-NEXT: affine.load %[[B]]
// CHECK-NEXT: affine.load %arg2
// CHECK-NOT: pbc.pack_site
// CHECK: memref.dealloc %[[A]]
// CHECK: memref.dealloc %[[B]]
func.func @matmul(%a: memref<64x256xf32>, %b: memref<256x64xf32>, %c: memref<64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      affine.for %k = 0 to 256 {
        %x = affine.load %a[%i, %k] : memref<64x256xf32>
        %y = affine.load %b[%k, %j] : memref<256x64xf32>
        %z = affine.load %c[%i, %j] : memref<64x64xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<64x64xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// A buffer the function allocates and a copy nest only reads (here A, made
// by the first nest) keeps its rows: only the buffers the copies fill are
// padded (padding A's own rows changed the layout its producer writes).
// CHECK-LABEL: func.func @produced_input
// CHECK: %[[T:.*]] = memref.alloc() : memref<64x256xf32>
// CHECK: memref.alloc() : memref<32x80xf32>
// CHECK: affine.load %[[T]]
// CHECK: } {pbc.copy}
func.func @produced_input(%a: memref<64x256xf32>, %b: memref<256x64xf32>, %c: memref<64x64xf32>) {
  %t = memref.alloc() : memref<64x256xf32>
  affine.for %i = 0 to 64 {
    affine.for %k = 0 to 256 {
      %x = affine.load %a[%i, %k] : memref<64x256xf32>
      %y = arith.addf %x, %x : f32
      affine.store %y, %t[%i, %k] : memref<64x256xf32>
    }
  }
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      affine.for %k = 0 to 256 {
        %x = affine.load %t[%i, %k] : memref<64x256xf32>
        %y = affine.load %b[%k, %j] : memref<256x64xf32>
        %z = affine.load %c[%i, %j] : memref<64x64xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<64x64xf32>
      }
    }
  } {pbc.kind = "matmul"}
  memref.dealloc %t : memref<64x256xf32>
  return
}
