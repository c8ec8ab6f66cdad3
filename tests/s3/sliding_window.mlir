// pbc-sliding-window: a 3-row stencil over a private buffer of 10 rows
// becomes a prologue (the producer's rows 0 and 1) and one nest whose body
// computes the producer's row r+2 into slot (r+2) mod 3, then the
// consumer's row r from slots r mod 3, (r+1) mod 3 and the value just
// computed; the buffer keeps 3 rows. Left alone: a buffer read after the
// consumer, a consumer that writes the producer's input, and a newest row
// read at other columns than the producer writes at the same point.
// Inside a tile loop, the tile grows taller (K-1 = 2 recomputed rows within
// 1% of it) while each core keeps a tile; not if the tile's index is used
// other than with the row's.
// RUN: pbc-opt %s -p 'pbc-sliding-window' | FileCheck %s
// RUN: pbc-opt %s -p 'pbc-sliding-window{cores=2}' | FileCheck %s --check-prefix=CORES2

// CHECK-LABEL: func.func @three_rows
// CHECK: %[[BUF:.*]] = memref.alloc() {alignment = 64 : i64} : memref<3x80xf32>
// CHECK: affine.for %{{.*}} = 0 to 2 {
// CHECK: affine.vector_store %{{.*}}, %[[BUF]][%{{.*}}, %{{.*}}] : memref<3x80xf32>
// CHECK: affine.for %[[R:.*]] = 0 to 8 {
// CHECK-NEXT: affine.for %[[I:.*]] = 0 to 64 step 16 {
// CHECK-NEXT: %[[A:.*]] = affine.vector_load %arg0[%[[R]] + 2, %[[I]]]
// CHECK-NEXT: %[[B:.*]] = affine.vector_load %arg0[%[[R]] + 2, %[[I]] + 1]
// CHECK-NEXT: %[[H:.*]] = arith.addf %[[A]], %[[B]]
// CHECK-NEXT: affine.vector_store %[[H]], %[[BUF]][(%[[R]] + 2) mod 3, %[[I]]]
// CHECK-NEXT: %[[R0:.*]] = affine.vector_load %[[BUF]][%[[R]] mod 3, %[[I]]]
// CHECK-NEXT: %[[R1:.*]] = affine.vector_load %[[BUF]][(%[[R]] + 1) mod 3, %[[I]]]
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[R0]], %[[R1]]
// CHECK-NEXT: arith.addf %[[S]], %[[H]]
// CHECK: memref.dealloc %[[BUF]] : memref<3x80xf32>
func.func @three_rows(%x: memref<10x80xf32>, %y: memref<8x64xf32>) {
  %buf = memref.alloc() {alignment = 64 : i64} : memref<10x80xf32>
  affine.for %r = 0 to 10 {
    affine.for %i = 0 to 64 step 16 {
      %a = affine.vector_load %x[%r, %i] : memref<10x80xf32>, vector<16xf32>
      %b = affine.vector_load %x[%r, %i + 1] : memref<10x80xf32>, vector<16xf32>
      %s = arith.addf %a, %b : vector<16xf32>
      affine.vector_store %s, %buf[%r, %i] : memref<10x80xf32>, vector<16xf32>
    }
  }
  affine.for %r = 0 to 8 {
    affine.for %i = 0 to 64 step 16 {
      %a = affine.vector_load %buf[%r, %i] : memref<10x80xf32>, vector<16xf32>
      %b = affine.vector_load %buf[%r + 1, %i] : memref<10x80xf32>, vector<16xf32>
      %c = affine.vector_load %buf[%r + 2, %i] : memref<10x80xf32>, vector<16xf32>
      %s = arith.addf %a, %b : vector<16xf32>
      %t = arith.addf %s, %c : vector<16xf32>
      affine.vector_store %t, %y[%r, %i] : memref<8x64xf32>, vector<16xf32>
    }
  }
  memref.dealloc %buf : memref<10x80xf32>
  return
}

// CHECK-LABEL: func.func @read_after
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<10x80xf32>
// CHECK-NOT: mod
// CHECK: return
func.func @read_after(%x: memref<10x80xf32>, %y: memref<8x64xf32>) {
  %buf = memref.alloc() {alignment = 64 : i64} : memref<10x80xf32>
  affine.for %r = 0 to 10 {
    affine.for %i = 0 to 64 step 16 {
      %a = affine.vector_load %x[%r, %i] : memref<10x80xf32>, vector<16xf32>
      %b = affine.vector_load %x[%r, %i + 1] : memref<10x80xf32>, vector<16xf32>
      %s = arith.addf %a, %b : vector<16xf32>
      affine.vector_store %s, %buf[%r, %i] : memref<10x80xf32>, vector<16xf32>
    }
  }
  affine.for %r = 0 to 8 {
    affine.for %i = 0 to 64 step 16 {
      %a = affine.vector_load %buf[%r, %i] : memref<10x80xf32>, vector<16xf32>
      %b = affine.vector_load %buf[%r + 1, %i] : memref<10x80xf32>, vector<16xf32>
      %c = affine.vector_load %buf[%r + 2, %i] : memref<10x80xf32>, vector<16xf32>
      %s = arith.addf %a, %b : vector<16xf32>
      %t = arith.addf %s, %c : vector<16xf32>
      affine.vector_store %t, %y[%r, %i] : memref<8x64xf32>, vector<16xf32>
    }
  }
  %v = affine.load %buf[0, 0] : memref<10x80xf32>
  affine.store %v, %y[0, 0] : memref<8x64xf32>
  memref.dealloc %buf : memref<10x80xf32>
  return
}

// CHECK-LABEL: func.func @writes_producer_input
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<10x80xf32>
// CHECK-NOT: mod
// CHECK: return
func.func @writes_producer_input(%x: memref<10x80xf32>, %y: memref<8x64xf32>) {
  %buf = memref.alloc() {alignment = 64 : i64} : memref<10x80xf32>
  affine.for %r = 0 to 10 {
    affine.for %i = 0 to 64 step 16 {
      %a = affine.vector_load %x[%r, %i] : memref<10x80xf32>, vector<16xf32>
      %b = affine.vector_load %x[%r, %i + 1] : memref<10x80xf32>, vector<16xf32>
      %s = arith.addf %a, %b : vector<16xf32>
      affine.vector_store %s, %buf[%r, %i] : memref<10x80xf32>, vector<16xf32>
    }
  }
  affine.for %r = 0 to 8 {
    affine.for %i = 0 to 64 step 16 {
      %a = affine.vector_load %buf[%r, %i] : memref<10x80xf32>, vector<16xf32>
      %b = affine.vector_load %buf[%r + 1, %i] : memref<10x80xf32>, vector<16xf32>
      %c = affine.vector_load %buf[%r + 2, %i] : memref<10x80xf32>, vector<16xf32>
      %s = arith.addf %a, %b : vector<16xf32>
      %t = arith.addf %s, %c : vector<16xf32>
      affine.vector_store %t, %x[%r, %i] : memref<10x80xf32>, vector<16xf32>
    }
  }
  memref.dealloc %buf : memref<10x80xf32>
  return
}

// CHECK-LABEL: func.func @other_columns
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<10x80xf32>
// CHECK-NOT: mod
// CHECK: return
func.func @other_columns(%x: memref<10x80xf32>, %y: memref<8x64xf32>) {
  %buf = memref.alloc() {alignment = 64 : i64} : memref<10x80xf32>
  affine.for %r = 0 to 10 {
    affine.for %i = 0 to 64 step 16 {
      %a = affine.vector_load %x[%r, %i] : memref<10x80xf32>, vector<16xf32>
      %b = affine.vector_load %x[%r, %i + 1] : memref<10x80xf32>, vector<16xf32>
      %s = arith.addf %a, %b : vector<16xf32>
      affine.vector_store %s, %buf[%r, %i] : memref<10x80xf32>, vector<16xf32>
    }
  }
  affine.for %r = 0 to 8 {
    affine.for %i = 0 to 64 step 16 {
      %a = affine.vector_load %buf[%r, %i] : memref<10x80xf32>, vector<16xf32>
      %b = affine.vector_load %buf[%r + 1, %i] : memref<10x80xf32>, vector<16xf32>
      %c = affine.vector_load %buf[%r + 2, %i + 16] : memref<10x80xf32>, vector<16xf32>
      %s = arith.addf %a, %b : vector<16xf32>
      %t = arith.addf %s, %c : vector<16xf32>
      affine.vector_store %t, %y[%r, %i] : memref<8x64xf32>, vector<16xf32>
    }
  }
  memref.dealloc %buf : memref<10x80xf32>
  return
}

// One core: one tile of all 256 rows. Two: a tile each.
// CHECK-LABEL: func.func @taller_tiles
// CHECK: affine.for %[[T:.*]] = 0 to 256 step 256 {
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<3x80xf32>
// CHECK: affine.for %{{.*}} = 0 to 2 {
// CHECK: affine.for %[[R:.*]] = 0 to 256 {
// CHECK: affine.vector_load %arg0[%[[T]] + %[[R]] + 2, %{{.*}}]
// CHECK: affine.vector_store %{{.*}}, %arg1[%[[T]] + %[[R]], %{{.*}}]
// CORES2-LABEL: func.func @taller_tiles
// CORES2: affine.for %{{.*}} = 0 to 256 step 128 {
// CORES2: affine.for %{{.*}} = 0 to 128 {
func.func @taller_tiles(%x: memref<258x80xf32>, %y: memref<256x64xf32>) {
  affine.for %t = 0 to 256 step 8 {
    %buf = memref.alloc() {alignment = 64 : i64} : memref<10x80xf32>
    affine.for %r = 0 to 10 {
      affine.for %i = 0 to 64 step 16 {
        %a = affine.vector_load %x[%t + %r, %i] : memref<258x80xf32>, vector<16xf32>
        %b = affine.vector_load %x[%t + %r, %i + 1] : memref<258x80xf32>, vector<16xf32>
        %s = arith.addf %a, %b : vector<16xf32>
        affine.vector_store %s, %buf[%r, %i] : memref<10x80xf32>, vector<16xf32>
      }
    }
    affine.for %r = 0 to 8 {
      affine.for %i = 0 to 64 step 16 {
        %a = affine.vector_load %buf[%r, %i] : memref<10x80xf32>, vector<16xf32>
        %b = affine.vector_load %buf[%r + 1, %i] : memref<10x80xf32>, vector<16xf32>
        %c = affine.vector_load %buf[%r + 2, %i] : memref<10x80xf32>, vector<16xf32>
        %s = arith.addf %a, %b : vector<16xf32>
        %u = arith.addf %s, %c : vector<16xf32>
        affine.vector_store %u, %y[%t + %r, %i] : memref<256x64xf32>, vector<16xf32>
      }
    }
    memref.dealloc %buf : memref<10x80xf32>
  }
  return
}

// 1024 rows: the tile stops at 256 rows, the first whose 2-row prologue is
// within 1% of it (one tile of 1024 would be the core's whole share).
// CHECK-LABEL: func.func @prologue_bound
// CHECK: affine.for %{{.*}} = 0 to 1024 step 256 {
// CHECK: affine.for %{{.*}} = 0 to 256 {
func.func @prologue_bound(%x: memref<1026x80xf32>, %y: memref<1024x64xf32>) {
  affine.for %t = 0 to 1024 step 8 {
    %buf = memref.alloc() {alignment = 64 : i64} : memref<10x80xf32>
    affine.for %r = 0 to 10 {
      affine.for %i = 0 to 64 step 16 {
        %a = affine.vector_load %x[%t + %r, %i] : memref<1026x80xf32>, vector<16xf32>
        %b = affine.vector_load %x[%t + %r, %i + 1] : memref<1026x80xf32>, vector<16xf32>
        %s = arith.addf %a, %b : vector<16xf32>
        affine.vector_store %s, %buf[%r, %i] : memref<10x80xf32>, vector<16xf32>
      }
    }
    affine.for %r = 0 to 8 {
      affine.for %i = 0 to 64 step 16 {
        %a = affine.vector_load %buf[%r, %i] : memref<10x80xf32>, vector<16xf32>
        %b = affine.vector_load %buf[%r + 1, %i] : memref<10x80xf32>, vector<16xf32>
        %c = affine.vector_load %buf[%r + 2, %i] : memref<10x80xf32>, vector<16xf32>
        %s = arith.addf %a, %b : vector<16xf32>
        %u = arith.addf %s, %c : vector<16xf32>
        affine.vector_store %u, %y[%t + %r, %i] : memref<1024x64xf32>, vector<16xf32>
      }
    }
    memref.dealloc %buf : memref<10x80xf32>
  }
  return
}

// The window applies; the tile keeps its 8 rows: z is written per tile.
// CHECK-LABEL: func.func @tile_index_alone
// CHECK: affine.for %{{.*}} = 0 to 256 step 8 {
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<3x80xf32>
// CHECK: affine.for %{{.*}} = 0 to 8 {
func.func @tile_index_alone(%x: memref<258x80xf32>, %y: memref<256x64xf32>, %z: memref<256x64xf32>) {
  affine.for %t = 0 to 256 step 8 {
    %buf = memref.alloc() {alignment = 64 : i64} : memref<10x80xf32>
    affine.for %r = 0 to 10 {
      affine.for %i = 0 to 64 step 16 {
        %a = affine.vector_load %x[%t + %r, %i] : memref<258x80xf32>, vector<16xf32>
        %b = affine.vector_load %x[%t + %r, %i + 1] : memref<258x80xf32>, vector<16xf32>
        %s = arith.addf %a, %b : vector<16xf32>
        affine.vector_store %s, %buf[%r, %i] : memref<10x80xf32>, vector<16xf32>
      }
    }
    affine.for %r = 0 to 8 {
      affine.for %i = 0 to 64 step 16 {
        %a = affine.vector_load %buf[%r, %i] : memref<10x80xf32>, vector<16xf32>
        %b = affine.vector_load %buf[%r + 1, %i] : memref<10x80xf32>, vector<16xf32>
        %c = affine.vector_load %buf[%r + 2, %i] : memref<10x80xf32>, vector<16xf32>
        %s = arith.addf %a, %b : vector<16xf32>
        %u = arith.addf %s, %c : vector<16xf32>
        affine.vector_store %u, %y[%t + %r, %i] : memref<256x64xf32>, vector<16xf32>
        affine.vector_store %u, %z[%t, %i] : memref<256x64xf32>, vector<16xf32>
      }
    }
    memref.dealloc %buf : memref<10x80xf32>
  }
  return
}
