// pbc-tile on skinny GEMMs (pbc/skinny_gemm.h): up to 8 rows, one register
// tile spans all rows; up to 32, tiles of up to 8 rows; B is read in place --
// no pack sites, no transposed copy. With a 64 KiB L2, B (2 x 256 x 112: 112 KiB) streams at
// 2 cycles a vector: of 7 vectors of J, tiles of 3 (48 columns) cost the
// busiest core 6 + 4 cycles a step; the 16 columns left run as a second
// nest (origin 96) with a tile of one vector.
// B read along K (a linear layer's weight): dot products, the register tile
// counts rows of B (6 rows x 3 of A: 18 accumulators, 3 + 6 loaded
// vectors), J not vectorized (pbc-vectorize-reductions vectorizes K); the
// one row left runs as a second nest.
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=65536 l3-bytes=33554432}' | FileCheck %s --check-prefixes=CHECK,L3
// With an L3 of 32 KiB, @dot_rows64's B (16 KiB) is larger than a quarter of
// it: 64 rows are read as dot products too, in tiles of 8 rows (A fits L1).
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=65536 l3-bytes=32768}' | FileCheck %s --check-prefix=SMALLL3
// B outgrows L2 and all rows are one register tile (blockGemvK): each
// core's columns (one tile of 48 here) are swept by blocks of 16 rows of B,
// [jT kT iT i j k], jT parallel; with a 256 KiB L2 (B fits, streaming at a vector a cycle), the plain
// plan, all 7 vectors of J in one tile.
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=262144 l3-bytes=33554432}' | FileCheck %s --check-prefix=FITS
// CHECK-LABEL: func.func @rows
// CHECK-NOT: memref.alloc
// CHECK: %[[C96:.*]] = arith.constant 96 : index
// CHECK-NEXT: affine.for %{{.*}} = 0 to 96 step 48 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 256 step 16 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 2 step 2 {
// CHECK-NEXT: affine.for
// CHECK-NEXT: affine.for
// CHECK-NEXT: affine.for
// CHECK: } {pbc.register_tile = 48 : i64, pbc.vectorize}
// CHECK-NEXT: } {pbc.register_tile = 2 : i64}
// CHECK: } {pbc.kind = "matmul", pbc.parallel}
// CHECK-NEXT: affine.for %{{.*}} = 0 to 2 {
// FITS-LABEL: func.func @rows
// FITS: affine.for %{{.*}} = 0 to 2 {
// FITS-NEXT: affine.for %{{.*}} = 0 to 112 {
// FITS-NEXT: affine.for %{{.*}} = 0 to 256 {
// FITS: } {pbc.register_tile = 112 : i64, pbc.vectorize}
// FITS-NEXT: } {pbc.kind = "matmul", pbc.register_tile = 2 : i64}
// FITS-NEXT: return
// CHECK-NEXT: affine.for %[[J:.*]] = 0 to 16 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 256 {
// CHECK-NEXT: affine.apply #{{.*}}(%[[C96]], %[[J]])
// CHECK: } {pbc.register_tile = 16 : i64, pbc.vectorize}
// CHECK-NEXT: } {pbc.kind = "matmul", pbc.register_tile = 2 : i64}
// CHECK-NOT: pbc.pack_site
// CHECK-LABEL: func.func @dot
// CHECK-NOT: memref.alloc
// CHECK: affine.for %{{.*}} = 0 to 3 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 36 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 64 {
// CHECK-NEXT: affine.load %arg0
// CHECK-NEXT: affine.load %arg1
// CHECK: } {pbc.register_tile = 6 : i64}
// CHECK-NEXT: } {pbc.kind = "matmul", pbc.register_tile = 3 : i64}
// CHECK-NEXT: affine.for %{{.*}} = 0 to 3 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 1 {
// CHECK-NOT: pbc.pack_site
// 16 rows, B read along K: A (16 x 64) fits L1, register tiles of 8 rows
// of A; A (16 x 1024) does not (each tile re-reads it from L2): tiles of 2
// rows of A (by up to 8 rows of B).
// CHECK-LABEL: func.func @dot_rows16
// CHECK-NOT: memref.alloc
// CHECK: } {pbc.kind = "matmul", pbc.register_tile = 8 : i64}
// CHECK-NOT: pbc.pack_site
// CHECK-LABEL: func.func @dot_rows16_a_past_l1
// CHECK-NOT: memref.alloc
// CHECK: } {pbc.kind = "matmul", pbc.register_tile = 2 : i64}
// CHECK-NOT: pbc.pack_site
func.func @rows(%a: memref<2x256xf32>, %b: memref<256x112xf32>, %c: memref<2x112xf32>) {
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 112 {
      affine.for %k = 0 to 256 {
        %x = affine.load %a[%i, %k] : memref<2x256xf32>
        %y = affine.load %b[%k, %j] : memref<256x112xf32>
        %z = affine.load %c[%i, %j] : memref<2x112xf32>
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %z, %m : f32
        affine.store %s, %c[%i, %j] : memref<2x112xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @dot(%a: memref<3x64xf32>, %b: memref<37x64xf32>, %c: memref<3x37xf32>) {
  affine.for %i = 0 to 3 {
    affine.for %j = 0 to 37 {
      affine.for %k = 0 to 64 {
        %x = affine.load %a[%i, %k] : memref<3x64xf32>
        %y = affine.load %b[%j, %k] : memref<37x64xf32>
        %z = affine.load %c[%i, %j] : memref<3x37xf32>
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %z, %m : f32
        affine.store %s, %c[%i, %j] : memref<3x37xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @dot_rows16(%a: memref<16x64xf32>, %b: memref<8x64xf32>, %c: memref<16x8xf32>) {
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 8 {
      affine.for %k = 0 to 64 {
        %x = affine.load %a[%i, %k] : memref<16x64xf32>
        %y = affine.load %b[%j, %k] : memref<8x64xf32>
        %z = affine.load %c[%i, %j] : memref<16x8xf32>
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %z, %m : f32
        affine.store %s, %c[%i, %j] : memref<16x8xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @dot_rows16_a_past_l1(%a: memref<16x1024xf32>, %b: memref<8x1024xf32>,
                                %c: memref<16x8xf32>) {
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 8 {
      affine.for %k = 0 to 1024 {
        %x = affine.load %a[%i, %k] : memref<16x1024xf32>
        %y = affine.load %b[%j, %k] : memref<8x1024xf32>
        %z = affine.load %c[%i, %j] : memref<16x8xf32>
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %z, %m : f32
        affine.store %s, %c[%i, %j] : memref<16x8xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// L3-LABEL: func.func @dot_rows64
// L3: pbc.pack_transposed
// L3: pbc.pack_site
// SMALLL3-LABEL: func.func @dot_rows64
// SMALLL3-NOT: pbc.pack
// SMALLL3: } {pbc.kind = "matmul", pbc.register_tile = 8 : i64}
// SMALLL3-NOT: pbc.pack
func.func @dot_rows64(%a: memref<64x64xf32>, %b: memref<64x64xf32>, %c: memref<64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      affine.for %k = 0 to 64 {
        %x = affine.load %a[%i, %k] : memref<64x64xf32>
        %y = affine.load %b[%j, %k] : memref<64x64xf32>
        %z = affine.load %c[%i, %j] : memref<64x64xf32>
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %z, %m : f32
        affine.store %s, %c[%i, %j] : memref<64x64xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// 16 rows, B as K x N: register tiles of 8 rows, inside J's tiles, B in
// place. 48 rows: the blocked plan (pack sites).
// CHECK-LABEL: func.func @rows16
// SMALLL3-LABEL: func.func @rows16
// CHECK-NOT: memref.alloc
// CHECK: } {pbc.kind = "matmul", pbc.register_tile = 8 : i64}
// CHECK-NOT: pbc.pack_site
// CHECK-LABEL: func.func @rows48
// CHECK: pbc.pack_site
func.func @rows16(%a: memref<16x64xf32>, %b: memref<64x112xf32>, %c: memref<16x112xf32>) {
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 112 {
      affine.for %k = 0 to 64 {
        %x = affine.load %a[%i, %k] : memref<16x64xf32>
        %y = affine.load %b[%k, %j] : memref<64x112xf32>
        %z = affine.load %c[%i, %j] : memref<16x112xf32>
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %z, %m : f32
        affine.store %s, %c[%i, %j] : memref<16x112xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @rows48(%a: memref<48x64xf32>, %b: memref<64x112xf32>, %c: memref<48x112xf32>) {
  affine.for %i = 0 to 48 {
    affine.for %j = 0 to 112 {
      affine.for %k = 0 to 64 {
        %x = affine.load %a[%i, %k] : memref<48x64xf32>
        %y = affine.load %b[%k, %j] : memref<64x112xf32>
        %z = affine.load %c[%i, %j] : memref<48x112xf32>
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %z, %m : f32
        affine.store %s, %c[%i, %j] : memref<48x112xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// 24 rows over K = 768: J's 32-column panel of B and a row tile of A (768 x
// (32 + 8) x 4 bytes, 120 KiB) outgrow half the 64 KiB L2, so K is blocked by
// 256 between J's tiles (parallel) and the row tiles: [jT kT iT i j k].
// CHECK-LABEL: func.func @rows24_k_blocked
// CHECK-NOT: memref.alloc
// CHECK: affine.for %{{.*}} = 0 to 64 step 32 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 768 step 256 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 24 step 24 {
// CHECK-NEXT: affine.for
// CHECK-NEXT: affine.for
// CHECK-NEXT: affine.for
// CHECK: } {pbc.register_tile = 32 : i64, pbc.vectorize}
// CHECK-NEXT: } {pbc.register_tile = 8 : i64}
// CHECK: } {pbc.kind = "matmul", pbc.parallel}
func.func @rows24_k_blocked(%a: memref<24x768xf32>, %b: memref<768x64xf32>, %c: memref<24x64xf32>) {
  affine.for %i = 0 to 24 {
    affine.for %j = 0 to 64 {
      affine.for %k = 0 to 768 {
        %x = affine.load %a[%i, %k] : memref<24x768xf32>
        %y = affine.load %b[%k, %j] : memref<768x64xf32>
        %z = affine.load %c[%i, %j] : memref<24x64xf32>
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %z, %m : f32
        affine.store %s, %c[%i, %j] : memref<24x64xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
