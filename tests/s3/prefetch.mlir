// pbc-prefetch: a micro kernel loads its accumulator tile (the init of the
// reduction loop's iter_args, stored back after it); when the output is
// larger than L2, each such load gets a prefetch (for writing) of the tile
// the next iteration of the enclosing loop loads: row i + 2 for a loop of
// step 2. An output within L2 is not, nor a tile whose reduction is short
// (a 5-tap stencil: nothing to run ahead of). B, read in place and larger
// than L2, a row per step and a 16-column panel at a time, gets a prefetch
// of the next panel (j + 16), spread over the panel's 128 row tiles: row
// (t * 256 + k) / 128 at step k of tile t = i / 2; not with one row tile
// (@one_tile: nothing to spread over) nor a panel too large to sit in L2
// beside the next (FITS's run has B within L2: no prefetch at all).
// Rows of an array beyond L2 read in short runs (a 2-D tile: 256 of 1024
// floats per row) get a read prefetch of a row ahead, one per cache line
// of each row read: 8 KiB ahead, 8 rows of these 1 KiB runs;
// full rows (16 KiB runs, which the hardware prefetchers follow) do not.
// RUN: pbc-opt %s -p 'pbc-prefetch{l2-bytes=65536 cache-line-bytes=64};func.func(canonicalize)' | FileCheck %s
// RUN: pbc-opt %s -p 'pbc-prefetch{l2-bytes=1048576}' | FileCheck %s --check-prefix=FITS
// RUN: pbc-opt %s -p 'pbc-parallelize{min-trip=2 min-work=0};pbc-prefetch{l2-bytes=65536 cache-line-bytes=64}' | FileCheck %s --check-prefix=PAR
// CHECK-LABEL: func.func @tile
// CHECK: affine.for %[[J:.*]] = 0 to 256 step 16 {
// CHECK-NEXT: affine.for %[[I:.*]] = 0 to 256 step 2 {
// CHECK-NEXT: affine.prefetch %arg2[%[[I]] + 2, %[[J]]], write, locality<3>, data : memref<256x256xf32>
// CHECK-NEXT: affine.vector_load %arg2[%[[I]], %[[J]]]
// CHECK-NEXT: affine.prefetch %arg2[%[[I]] + 3, %[[J]]], write, locality<3>, data : memref<256x256xf32>
// CHECK-NEXT: affine.vector_load %arg2[%[[I]] + 1, %[[J]]]
// CHECK-NEXT: affine.for %[[K:.*]] = 0 to 256 iter_args
// CHECK-NEXT: affine.prefetch %arg1[((%[[I]] floordiv 2) * 2 + %[[K]] floordiv 128) mod 256, %[[J]] + 16], read, locality<3>, data : memref<256x256xf32>
// CHECK-NEXT: affine.vector_load %arg1[%[[K]], %[[J]]]
// CHECK-NOT: affine.prefetch
// CHECK: return
// CHECK-LABEL: func.func @one_tile
// CHECK-NOT: affine.prefetch
// CHECK: return
// CHECK-LABEL: func.func @stencil
// CHECK-NOT: affine.prefetch
// CHECK-LABEL: func.func @short_rows
// CHECK: affine.for %[[I:.*]] = 0 to 256 {
// CHECK-NEXT: affine.for %[[J:.*]] = 0 to 256 step 32 {
// CHECK-NEXT: affine.prefetch %arg0[%[[I]] + 8, %[[J]] + symbol(%{{.*}})], read, locality<3>, data : memref<256x1024xf32>
// CHECK-NEXT: affine.vector_load %arg0[%[[I]], %[[J]] + symbol(%{{.*}})]
// CHECK-NEXT: affine.vector_load %arg0[%[[I]], %[[J]] + symbol(%{{.*}}) + 3]
// CHECK-NEXT: affine.prefetch %arg0[%[[I]] + 8, %[[J]] + symbol(%{{.*}}) + 16], read, locality<3>, data : memref<256x1024xf32>
// CHECK-NEXT: affine.vector_load %arg0[%[[I]], %[[J]] + symbol(%{{.*}}) + 16]
// CHECK-NEXT: affine.prefetch %arg0[%[[I]] + 9, %[[J]] + symbol(%{{.*}})], read, locality<3>, data : memref<256x1024xf32>
// CHECK-NEXT: affine.vector_load %arg0[%[[I]] + 1, %[[J]] + symbol(%{{.*}})]
// CHECK-NOT: affine.prefetch
// CHECK-LABEL: func.func @long_rows
// CHECK-NOT: affine.prefetch
// A row reached through an affine.apply: not advanced by rows, so no
// prefetch (it would fetch the line the load reads).
// CHECK-LABEL: func.func @apply_row
// CHECK-NOT: affine.prefetch
// A copy nest is left alone, also once parallelized (the mark moves to the
// affine.parallel).
// PAR-LABEL: func.func @copy_nest
// PAR: affine.parallel
// PAR-NOT: affine.prefetch
// PAR: } {pbc.copy}
// FITS-NOT: affine.prefetch
func.func @tile(%a: memref<256x256xf32>, %b: memref<256x256xf32>, %c: memref<256x256xf32>) {
  affine.for %j = 0 to 256 step 16 {
    affine.for %i = 0 to 256 step 2 {
      %c0 = affine.vector_load %c[%i, %j] : memref<256x256xf32>, vector<16xf32>
      %c1 = affine.vector_load %c[%i + 1, %j] : memref<256x256xf32>, vector<16xf32>
      %r:2 = affine.for %k = 0 to 256 iter_args(%x = %c0, %y = %c1) -> (vector<16xf32>, vector<16xf32>) {
        %bv = affine.vector_load %b[%k, %j] : memref<256x256xf32>, vector<16xf32>
        %a0 = affine.load %a[%i, %k] : memref<256x256xf32>
        %a1 = affine.load %a[%i + 1, %k] : memref<256x256xf32>
        %s0 = vector.broadcast %a0 : f32 to vector<16xf32>
        %s1 = vector.broadcast %a1 : f32 to vector<16xf32>
        %x1 = vector.fma %s0, %bv, %x : vector<16xf32>
        %y1 = vector.fma %s1, %bv, %y : vector<16xf32>
        affine.yield %x1, %y1 : vector<16xf32>, vector<16xf32>
      }
      affine.vector_store %r#0, %c[%i, %j] : memref<256x256xf32>, vector<16xf32>
      affine.vector_store %r#1, %c[%i + 1, %j] : memref<256x256xf32>, vector<16xf32>
    }
  }
  return
}

func.func @one_tile(%a: memref<2x256xf32>, %b: memref<256x256xf32>, %c: memref<2x256xf32>) {
  affine.for %j = 0 to 256 step 16 {
    affine.for %i = 0 to 2 step 2 {
      %c0 = affine.vector_load %c[%i, %j] : memref<2x256xf32>, vector<16xf32>
      %c1 = affine.vector_load %c[%i + 1, %j] : memref<2x256xf32>, vector<16xf32>
      %r:2 = affine.for %k = 0 to 256 iter_args(%x = %c0, %y = %c1) -> (vector<16xf32>, vector<16xf32>) {
        %bv = affine.vector_load %b[%k, %j] : memref<256x256xf32>, vector<16xf32>
        %a0 = affine.load %a[%i, %k] : memref<2x256xf32>
        %a1 = affine.load %a[%i + 1, %k] : memref<2x256xf32>
        %s0 = vector.broadcast %a0 : f32 to vector<16xf32>
        %s1 = vector.broadcast %a1 : f32 to vector<16xf32>
        %x1 = vector.fma %s0, %bv, %x : vector<16xf32>
        %y1 = vector.fma %s1, %bv, %y : vector<16xf32>
        affine.yield %x1, %y1 : vector<16xf32>, vector<16xf32>
      }
      affine.vector_store %r#0, %c[%i, %j] : memref<2x256xf32>, vector<16xf32>
      affine.vector_store %r#1, %c[%i + 1, %j] : memref<2x256xf32>, vector<16xf32>
    }
  }
  return
}

func.func @stencil(%x: memref<1024x1040xf32>, %y: memref<1024x1024xf32>) {
  affine.for %i = 0 to 1024 {
    affine.for %j = 0 to 1024 step 16 {
      %c0 = affine.vector_load %y[%i, %j] : memref<1024x1024xf32>, vector<16xf32>
      %r = affine.for %k = 0 to 5 iter_args(%acc = %c0) -> (vector<16xf32>) {
        %v = affine.vector_load %x[%i, %j + %k] : memref<1024x1040xf32>, vector<16xf32>
        %s = arith.addf %acc, %v : vector<16xf32>
        affine.yield %s : vector<16xf32>
      }
      affine.vector_store %r, %y[%i, %j] : memref<1024x1024xf32>, vector<16xf32>
    }
  }
  return
}

func.func @short_rows(%x: memref<256x1024xf32>, %y: memref<256x256xf32>, %t: index) {
  affine.for %i = 0 to 256 {
    affine.for %j = 0 to 256 step 32 {
      %a = affine.vector_load %x[%i, %j + %t] : memref<256x1024xf32>, vector<16xf32>
      %b = affine.vector_load %x[%i, %j + %t + 3] : memref<256x1024xf32>, vector<16xf32>
      %c = affine.vector_load %x[%i, %j + %t + 16] : memref<256x1024xf32>, vector<16xf32>
      %d = affine.vector_load %x[%i + 1, %j + %t] : memref<256x1024xf32>, vector<16xf32>
      %s = arith.addf %a, %b : vector<16xf32>
      affine.vector_store %s, %y[%i, %j] : memref<256x256xf32>, vector<16xf32>
      %e = arith.addf %c, %d : vector<16xf32>
      affine.vector_store %e, %y[%i, %j + 16] : memref<256x256xf32>, vector<16xf32>
    }
  }
  return
}

func.func @long_rows(%x: memref<64x4096xf32>, %y: memref<64x4096xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 4096 step 16 {
      %a = affine.vector_load %x[%i, %j] : memref<64x4096xf32>, vector<16xf32>
      affine.vector_store %a, %y[%i, %j] : memref<64x4096xf32>, vector<16xf32>
    }
  }
  return
}

func.func @apply_row(%x: memref<256x1024xf32>, %y: memref<256x256xf32>, %t: index) {
  affine.for %i = 0 to 256 {
    affine.for %j = 0 to 256 step 16 {
      %r = affine.apply affine_map<(d0)[s0] -> (d0 + s0)>(%i)[%t]
      %a = affine.vector_load %x[%r, %j] : memref<256x1024xf32>, vector<16xf32>
      affine.vector_store %a, %y[%i, %j] : memref<256x256xf32>, vector<16xf32>
    }
  }
  return
}

func.func @copy_nest(%x: memref<64x256x1024xf32>, %y: memref<64x256x256xf32>) {
  affine.for %b = 0 to 64 {
    affine.for %i = 0 to 256 {
      affine.for %j = 0 to 256 step 16 {
        %a = affine.vector_load %x[%b, %i, %j] : memref<64x256x1024xf32>, vector<16xf32>
        affine.vector_store %a, %y[%b, %i, %j] : memref<64x256x256xf32>, vector<16xf32>
      }
    }
  } {pbc.copy}
  return
}
