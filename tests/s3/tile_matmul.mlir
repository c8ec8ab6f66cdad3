// pbc-tile on a GEMM-shaped nest: cache tiles in BLIS order (jc, kc, ic)
// with the point loops inside, pack sites on the cache tile loops, register
// tile sizes (MR x NR) on the point loops, and pbc.kind moved to the new root.
// With 32 vector registers of 16 lanes: MR=4, NV=4 (NR=64) maximise FMAs per
// load among tiles that divide 256x256. Non-key nests are left alone.
// KC: the B micro-panel (KC x 64) fills a quarter of L2 (64 KiB: KC 64;
// 1 MiB: all 256), MC the rest with A's block (capped at 256 / 2 cores).
// With a 64 KiB L2, B's 64x256 block (64 KiB) is shared: BLIS order. With
// 1 MiB it fits in each core's L2 and each core has one ic block: ic stays
// outermost (one parallel region; each core packs B's block).
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=65536 l3-bytes=33554432}' | FileCheck %s
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=1048576 l3-bytes=33554432}' | FileCheck %s --check-prefix=ICOUTER
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=2097152 l3-bytes=33554432}' | FileCheck %s --check-prefix=LONGK
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=1048576 l3-bytes=33554432}' | FileCheck %s --check-prefix=JCSPLIT
// ICOUTER-LABEL: func.func @matmul
// ICOUTER: affine.for %[[IC:.*]] = 0 to 256 step 128 {
// ICOUTER-NEXT: affine.for %[[JC:.*]] = 0 to 256 step 256 {
// ICOUTER-NEXT: affine.for %[[KC:.*]] = 0 to 256 step 256 {
// ICOUTER: } {pbc.kind = "matmul", pbc.pack_site, pbc.parallel}
// CHECK-LABEL: func.func @matmul
// CHECK: affine.for %[[JC:.*]] = 0 to 256 step 256 {
// CHECK-NEXT: affine.for %[[KC:.*]] = 0 to 256 step 64 {
// CHECK-NEXT: affine.for %[[IC:.*]] = 0 to 256 step 128 {
// CHECK-NEXT: affine.for %{{.*}} = #{{.*}}(%[[IC]]) to #{{.*}}(%[[IC]]) {
// CHECK-NEXT: affine.for %{{.*}} = #{{.*}}(%[[JC]]) to #{{.*}}(%[[JC]]) {
// CHECK-NEXT: affine.for %{{.*}} = #{{.*}}(%[[KC]]) to #{{.*}}(%[[KC]]) {
// CHECK: } {pbc.register_tile = 64 : i64, pbc.vectorize}
// CHECK-NEXT: } {pbc.register_tile = 4 : i64}
// CHECK-NEXT: } {pbc.pack_site, pbc.parallel}
// CHECK-NEXT: } {pbc.pack_site}
// CHECK-NEXT: } {pbc.kind = "matmul", pbc.pack_site, pbc.parallel}
func.func @matmul(%a: memref<256x256xf32>, %b: memref<256x256xf32>, %c: memref<256x256xf32>) {
  affine.for %i = 0 to 256 {
    affine.for %j = 0 to 256 {
      affine.for %k = 0 to 256 {
        %x = affine.load %a[%i, %k] : memref<256x256xf32>
        %y = affine.load %b[%k, %j] : memref<256x256xf32>
        %z = affine.load %c[%i, %j] : memref<256x256xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<256x256xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// Few rows and more columns (a transformer's GEMMs at 128-512 tokens): the
// 64 rows make one block per core at most, so the cores split the columns
// (jc outermost and parallel), each packing only its own B blocks. The
// core's whole output block stays in L2 across KC steps, so KC is sized for
// the micro-panel to fit L1 (48 KiB / 64 columns: 192, the largest divisor
// of 256 below it is 128) and all 64 rows form one A block; NC: the B
// block and its output rows in 3/4 of L2, at most half the columns (256).
// JCSPLIT-LABEL: func.func @wide
// JCSPLIT: affine.for %[[JC:.*]] = 0 to 512 step 256 {
// JCSPLIT-NEXT: affine.for %[[KC:.*]] = 0 to 256 step 128 {
// JCSPLIT-NEXT: affine.for %[[IC:.*]] = 0 to 64 step 64 {
// JCSPLIT: } {pbc.register_tile = 64 : i64, pbc.vectorize}
// JCSPLIT: } {pbc.kind = "matmul", pbc.pack_site, pbc.parallel}
func.func @wide(%a: memref<64x256xf32>, %b: memref<256x512xf32>, %c: memref<64x512xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 512 {
      affine.for %k = 0 to 256 {
        %x = affine.load %a[%i, %k] : memref<64x256xf32>
        %y = affine.load %b[%k, %j] : memref<256x512xf32>
        %z = affine.load %c[%i, %j] : memref<64x512xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<64x512xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// 49 rows (a 1x1 convolution at 7 x 7 pixels as a GEMM) are 7 row blocks
// of MR = 7, more than the cores, but all of A (49 x 256) fits in half of
// L2: the columns are split as well, A's rows in one block (before, each of
// the 7 blocks streamed all of B).
// JCSPLIT-LABEL: func.func @rows_49
// JCSPLIT: affine.for %{{.*}} = 0 to 512 step 256 {
// JCSPLIT-NEXT: affine.for %{{.*}} = 0 to 256 step 256 {
// JCSPLIT-NEXT: affine.for %{{.*}} = 0 to 49 step 49 {
// JCSPLIT: } {pbc.register_tile = 7 : i64}
func.func @rows_49(%a: memref<49x256xf32>, %b: memref<256x512xf32>, %c: memref<49x512xf32>) {
  affine.for %i = 0 to 49 {
    affine.for %j = 0 to 512 {
      affine.for %k = 0 to 256 {
        %x = affine.load %a[%i, %k] : memref<49x256xf32>
        %y = affine.load %b[%k, %j] : memref<256x512xf32>
        %z = affine.load %c[%i, %j] : memref<49x512xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<49x512xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// A strided output column (j not contiguous) is not a nest pbc-tile knows
// how to vectorize: untouched.
// CHECK-LABEL: func.func @transposed_out
// CHECK-NOT: pbc.register_tile
// CHECK: } {pbc.kind = "matmul"}
func.func @transposed_out(%a: memref<64x256xf32>, %b: memref<256x128xf32>, %c: memref<128x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 128 {
      affine.for %k = 0 to 256 {
        %x = affine.load %a[%i, %k] : memref<64x256xf32>
        %y = affine.load %b[%k, %j] : memref<256x128xf32>
        %z = affine.load %c[%j, %i] : memref<128x64xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%j, %i] : memref<128x64xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// CHECK-LABEL: func.func @pointwise
// CHECK-NOT: pbc.register_tile
func.func @pointwise(%a: memref<64xf32>) {
  affine.for %i = 0 to 64 {
    %x = affine.load %a[%i] : memref<64xf32>
    %y = arith.addf %x, %x : f32
    affine.store %y, %a[%i] : memref<64xf32>
  } {pbc.kind = "pointwise"}
  return
}
// A call in the nest may touch any memory (here C, through its argument):
// the access analysis can't see all of C's uses, so the nest is not tiled.
// CHECK-LABEL: func.func @call_in_body
// CHECK-NOT: pbc.register_tile
// CHECK: return
func.func private @observe(memref<64x64xf32>)
func.func @call_in_body(%a: memref<64x64xf32>, %b: memref<64x64xf32>, %c: memref<64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      affine.for %k = 0 to 64 {
        %x = affine.load %a[%i, %k] : memref<64x64xf32>
        %y = affine.load %b[%k, %j] : memref<64x64xf32>
        %z = affine.load %c[%i, %j] : memref<64x64xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<64x64xf32>
        func.call @observe(%c) : (memref<64x64xf32>) -> ()
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// MC splits the rows evenly over the cores (1 MiB L2, the ICOUTER run): 1000
// rows in multiples of MR = 8
// divide into blocks of 8, 40 or 200 (at most 214 fit L2 beside the B
// panel); 5 blocks of 200 leave one core 3, 25 blocks of 40 give 13 and 12
// (13 x 44 < 3 x 204 row-equivalents, each block also streaming B once).
// ICOUTER-LABEL: func.func @unbalanced_rows
// ICOUTER: affine.for %{{.*}} = 0 to 1008 step 1008 {
// ICOUTER-NEXT: affine.for %{{.*}} = 0 to 1000 step 1000 {
// ICOUTER-NEXT: affine.for %{{.*}} = 0 to 1000 step 40 {
// ICOUTER: } {pbc.register_tile = 8 : i64}
// ICOUTER-NEXT: } {pbc.pack_site, pbc.parallel}
func.func @unbalanced_rows(%a: memref<1000x1000xf32>, %b: memref<1000x1008xf32>, %c: memref<1000x1008xf32>) {
  affine.for %i = 0 to 1000 {
    affine.for %j = 0 to 1008 {
      affine.for %k = 0 to 1000 {
        %x = affine.load %a[%i, %k] : memref<1000x1000xf32>
        %y = affine.load %b[%k, %j] : memref<1000x1008xf32>
        %z = affine.load %c[%i, %j] : memref<1000x1008xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<1000x1008xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}

// A 2 MiB L2 would give K = 3072 blocks of 1536 rows (a quarter of L2 for
// the 64-wide panel); past 1024 rows K is cut into blocks of 512 (a B read
// in place at a few KiB pitch no longer stays in L2 across row tiles).
// LONGK-LABEL: func.func @long_k
// LONGK: affine.for %{{.*}} = 0 to 3072 step 512 {
func.func @long_k(%a: memref<64x3072xf32>, %b: memref<3072x64xf32>, %c: memref<64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      affine.for %k = 0 to 3072 {
        %x = affine.load %a[%i, %k] : memref<64x3072xf32>
        %y = affine.load %b[%k, %j] : memref<3072x64xf32>
        %z = affine.load %c[%i, %j] : memref<64x64xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<64x64xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// 196 rows (a 1x1 convolution's 14 x 14 pixels): 4 x 4 tiles allow row
// blocks of 4 or 28 rows only, and 7 blocks of 28 leave one core idle an
// eighth of the time; 14 x 2 tiles (almost as many FMAs per load) give two
// blocks of 98, one per core.
// ICOUTER-LABEL: func.func @rows_196
// ICOUTER: affine.for %{{.*}} = 0 to 196 step 98 {
// ICOUTER: } {pbc.register_tile = 32 : i64, pbc.vectorize}
// ICOUTER-NEXT: } {pbc.register_tile = 14 : i64}
// ICOUTER-NEXT: } {pbc.pack_site, pbc.parallel}
func.func @rows_196(%a: memref<196x1024xf32>, %b: memref<1024x256xf32>, %c: memref<196x256xf32>) {
  affine.for %i = 0 to 196 {
    affine.for %j = 0 to 256 {
      affine.for %k = 0 to 1024 {
        %x = affine.load %a[%i, %k] : memref<196x1024xf32>
        %y = affine.load %b[%k, %j] : memref<1024x256xf32>
        %z = affine.load %c[%i, %j] : memref<196x256xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<196x256xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
