// pbc-tile on a GEMV (one row of A, B as K x N) whose B outgrows L2
// (split_gemv.h): the cores split B's rows, each reading one contiguous
// block (here 128 of the 256 rows, 4 rows per step) into its own partial
// row P[t] of C (128 wide: each row starts at a whole vector), zeroed
// first; whole vectors of columns (112) and the last partial vector (8) in
// two j loops inside each step; then one pointwise nest adds both partial
// rows to C. With a 64 KiB L2, B (120 KiB) streams.
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=65536 l3-bytes=33554432}' | FileCheck %s
// B within L2 (256 KiB), one core, or K no multiple of cores x 4 rows: the
// GEMV keeps the column split (blockGemvK or the plain plan), no partial rows.
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=262144 l3-bytes=33554432}' | FileCheck %s --check-prefix=KEPT
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=1 l1d-bytes=49152 l2-bytes=65536 l3-bytes=33554432}' | FileCheck %s --check-prefix=KEPT
// pbc-pad-gemm leaves the partial vector of such a GEMV to pbc-tile (no
// second nest over columns 112-119), but not with one core.
// RUN: pbc-opt %s -p 'pbc-pad-gemm{vector-bits=512 cores=2 l1d-bytes=49152 l2-bytes=65536}' | FileCheck %s --check-prefix=PAD
// RUN: pbc-opt %s -p 'pbc-pad-gemm{vector-bits=512 cores=1 l1d-bytes=49152 l2-bytes=65536}' | FileCheck %s --check-prefix=PAD1

// CHECK-LABEL: func.func @gemv
// CHECK: %[[P:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x1x128xf32>
// CHECK: affine.for %[[T:.*]] = 0 to 2 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 1 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 120 {
// CHECK-NEXT: affine.store %{{.*}}, %[[P]][%[[T]], %{{.*}}, %{{.*}}]
// CHECK: %[[K0:.*]] = affine.apply #{{.*}}(%[[T]])
// CHECK: affine.for %[[KT:.*]] = 0 to 128 step 4 {
// CHECK-NEXT: affine.for %[[I:.*]] = 0 to 1 {
// CHECK-NEXT: affine.for %[[J:.*]] = 0 to 112 {
// CHECK-NEXT: affine.for %[[K:.*]] = #{{.*}}(%[[KT]]) to #{{.*}}(%[[KT]]) {
// CHECK: %[[R:.*]] = affine.apply #{{.*}}(%[[K0]], %[[K]])
// CHECK: affine.load %{{.*}}[%[[R]], %[[J]]] : memref<256x120xf32>
// CHECK: affine.load %[[P]][%[[T]], %[[I]], %[[J]]]
// CHECK: affine.store %{{.*}}, %[[P]][%[[T]], %[[I]], %[[J]]]
// CHECK: } {pbc.vectorize}
// CHECK: affine.for %{{.*}} = 0 to 8 {
// CHECK: } {pbc.vectorize}
// CHECK: } {pbc.kind = "matmul", pbc.parallel}
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT: affine.for %[[SI:.*]] = 0 to 1 {
// CHECK-NEXT: affine.for %[[SJ:.*]] = 0 to 120 {
// CHECK-NEXT: %[[C:.*]] = affine.load %arg2[%[[SI]], %[[SJ]]]
// CHECK-NEXT: %[[P0:.*]] = affine.load %[[P]][%[[C0]], %[[SI]], %[[SJ]]]
// CHECK-NEXT: %[[S0:.*]] = arith.addf %[[C]], %[[P0]]
// CHECK-NEXT: %[[P1:.*]] = affine.load %[[P]][%[[C1]], %[[SI]], %[[SJ]]]
// CHECK-NEXT: %[[S1:.*]] = arith.addf %[[S0]], %[[P1]]
// CHECK-NEXT: affine.store %[[S1]], %arg2[%[[SI]], %[[SJ]]]
// CHECK: } {pbc.kind = "pointwise"}
// CHECK-NEXT: memref.dealloc %[[P]]
// CHECK-LABEL: func.func @gemv_k_odd
// CHECK-NOT: memref.alloc
// CHECK-LABEL: func.func @gemv_rows2
// CHECK-NOT: memref.alloc
// A bf16 C (sums whose order decides much of the result) keeps its plan.
// CHECK-LABEL: func.func @gemv_bf16
// CHECK-NOT: memref.alloc
// CHECK: return
// KEPT-LABEL: func.func @gemv
// KEPT-NOT: memref.alloc
// KEPT: return
// PAD-LABEL: func.func @gemv
// PAD: affine.for %{{.*}} = 0 to 120 {
// PAD: } {pbc.kind = "matmul"}
// PAD-NEXT: return
// PAD1-LABEL: func.func @gemv
// PAD1: affine.for %{{.*}} = 0 to 112 {
// PAD1: affine.for %{{.*}} = 0 to 8 {
func.func @gemv(%a: memref<1x256xf32>, %b: memref<256x120xf32>, %c: memref<1x120xf32>) {
  affine.for %i = 0 to 1 {
    affine.for %j = 0 to 120 {
      affine.for %k = 0 to 256 {
        %x = affine.load %a[%i, %k] : memref<1x256xf32>
        %y = affine.load %b[%k, %j] : memref<256x120xf32>
        %z = affine.load %c[%i, %j] : memref<1x120xf32>
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %z, %m : f32
        affine.store %s, %c[%i, %j] : memref<1x120xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @gemv_k_odd(%a: memref<1x254xf32>, %b: memref<254x128xf32>, %c: memref<1x128xf32>) {
  affine.for %i = 0 to 1 {
    affine.for %j = 0 to 128 {
      affine.for %k = 0 to 254 {
        %x = affine.load %a[%i, %k] : memref<1x254xf32>
        %y = affine.load %b[%k, %j] : memref<254x128xf32>
        %z = affine.load %c[%i, %j] : memref<1x128xf32>
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %z, %m : f32
        affine.store %s, %c[%i, %j] : memref<1x128xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @gemv_rows2(%a: memref<2x256xf32>, %b: memref<256x128xf32>, %c: memref<2x128xf32>) {
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 128 {
      affine.for %k = 0 to 256 {
        %x = affine.load %a[%i, %k] : memref<2x256xf32>
        %y = affine.load %b[%k, %j] : memref<256x128xf32>
        %z = affine.load %c[%i, %j] : memref<2x128xf32>
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %z, %m : f32
        affine.store %s, %c[%i, %j] : memref<2x128xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @gemv_bf16(%a: memref<1x256xbf16>, %b: memref<256x256xbf16>, %c: memref<1x256xbf16>) {
  affine.for %i = 0 to 1 {
    affine.for %j = 0 to 256 {
      affine.for %k = 0 to 256 {
        %x = affine.load %a[%i, %k] : memref<1x256xbf16>
        %y = affine.load %b[%k, %j] : memref<256x256xbf16>
        %z = affine.load %c[%i, %j] : memref<1x256xbf16>
        %m = arith.mulf %x, %y : bf16
        %s = arith.addf %z, %m : bf16
        affine.store %s, %c[%i, %j] : memref<1x256xbf16>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
