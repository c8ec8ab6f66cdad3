// pbc-pack on a GEMM whose B pbc-tile marked pbc.pack_transposed (a linear
// layer's N x K weight W, read along k): W's block is copied into a buffer
// with the marked dimension (j) last, K x N (rows padded by a line), so the
// nest reads it along j; the copy transposes, and pbc-transpose-copies
// moves it in 16 x 16 blocks (j outer, vector loads along W's rows, stores
// along the buffer's). No mark is left behind.
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=1048576 l3-bytes=33554432};pbc-pack{cache-line-bytes=64 l2-bytes=1048576};pbc-transpose-copies{vector-bits=512}' | FileCheck %s
// CHECK-LABEL: func.func @linear
// CHECK: affine.for %[[JT:.*]] = 0 to 128 step 64 {
// CHECK-NEXT: affine.for %[[KT:.*]] = 0 to 64 step 64 {
// CHECK: %[[BUF:.*]] = memref.alloc() : memref<64x80xf32>
// CHECK-NEXT: affine.for %[[J:.*]] = #{{.*}}(%[[JT]]) to #{{.*}}(%[[JT]]) step 16 {
// CHECK-NEXT: affine.for %[[K:.*]] = #{{.*}}(%[[KT]]) to #{{.*}}(%[[KT]]) step 16 {
// CHECK-NEXT: affine.vector_load %arg1[%[[J]], %[[K]]] : memref<128x64xf32>, vector<16xf32>
// CHECK-COUNT-15: affine.vector_load %arg1
// CHECK-COUNT-64: vector.shuffle
// CHECK-NEXT: affine.vector_store %{{.*}}, %[[BUF]][%[[K]] - %[[KT]], %[[J]] - %[[JT]]] : memref<64x80xf32>, vector<16xf32>
// CHECK-COUNT-15: affine.vector_store %{{.*}}, %[[BUF]]
// CHECK: } {pbc.copy}
// CHECK-NEXT: affine.for %{{.*}} = 0 to 64 step 64 {
// CHECK-NEXT: affine.for %{{.*}} = {{.*}} {
// CHECK-NEXT: affine.for %[[JJ:.*]] = {{.*}} {
// CHECK-NEXT: affine.for %[[KK:.*]] = {{.*}} {
// CHECK: affine.load %[[BUF]][-%[[KT]] + %[[KK]], -%[[JT]] + %[[JJ]]] : memref<64x80xf32>
// CHECK: pbc.register_tile = 64 : i64, pbc.vectorize
// CHECK-NOT: pbc.pack_transposed
// CHECK: return
func.func @linear(%a: memref<64x64xf32>, %w: memref<128x64xf32>, %c: memref<64x128xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 128 {
      affine.for %kk = 0 to 64 {
        %x = affine.load %a[%i, %kk] : memref<64x64xf32>
        %y = affine.load %w[%j, %kk] : memref<128x64xf32>
        %z = affine.load %c[%i, %j] : memref<64x128xf32>
        %p = arith.mulf %x, %y : f32
        %r = arith.addf %z, %p : f32
        affine.store %r, %c[%i, %j] : memref<64x128xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
