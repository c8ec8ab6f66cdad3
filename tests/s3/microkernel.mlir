// The register-level chain on a GEMM: pbc-register-tile splits MR x NR
// tiles (jr outside ir), pbc-vectorize widens j by 16 lanes (outer-loop
// vectorization over k), pbc-unroll-jam jams the 4 x 4 tile into the k loop
// (rows outer, vectors inner),
// and pbc-promote-accumulators keeps the 16 accumulators in iter_args: the k
// loop has no store, C is loaded and stored once per tile.
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=1 l1d-bytes=49152 l2-bytes=1048576 l3-bytes=33554432};pbc-register-tile;pbc-vectorize{vector-bits=512};pbc-unroll-jam;func.func(canonicalize);pbc-promote-accumulators' | FileCheck %s
// CHECK-LABEL: func.func @matmul
// CHECK: affine.for %{{.*}} = 0 to 128 step 64 {
// CHECK-NEXT: affine.for %{{.*}} step 4 {
// CHECK-COUNT-16: affine.vector_load %arg2
// CHECK-NEXT: %{{.*}}:16 = affine.for %{{.*}} iter_args
// Rows outer, vectors inner: row i's element meets all 4 vectors of B before
// row i+1 is read (live registers MR*NV + NV + 1, not MR*NV + MR + NV).
// CHECK-NEXT: affine.load %arg0[%[[I:arg[0-9]+]], %[[K:arg[0-9]+]]]
// CHECK-NOT: affine.load %arg0[%[[I]] + 1
// CHECK: affine.vector_load %arg1[%[[K]], %{{.*}} + 48]
// CHECK-NOT: affine.vector_store
// CHECK-NOT: affine.store
// CHECK: affine.load %arg0[%[[I]] + 1, %[[K]]]
// CHECK-NOT: affine.vector_store
// CHECK-NOT: affine.store
// CHECK: affine.yield %{{.*}} : vector<16xf32>
// CHECK-NEXT: }
// CHECK-COUNT-16: affine.vector_store %{{.*}}, %arg2
func.func @matmul(%a: memref<64x256xf32>, %b: memref<256x128xf32>, %c: memref<64x128xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 128 {
      affine.for %k = 0 to 256 {
        %x = affine.load %a[%i, %k] : memref<64x256xf32>
        %y = affine.load %b[%k, %j] : memref<256x128xf32>
        %z = affine.load %c[%i, %j] : memref<64x128xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<64x128xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
