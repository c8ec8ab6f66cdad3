// pbc-panel-layout: a packed buffer (filled by a pbc.copy nest) whose reads
// walk its rows in their innermost loop at a fixed column window becomes
// ceil(C / NR) panels of R x NR, NR the register tile loop's step: the copy
// stores to (c floordiv NR, r, c mod NR), the reads to (panel, r, offset).
// Left alone: reads whose column moves in the innermost loop, a window wider
// than the step (no width both holds it and divides the base), and on-chip
// GPU buffers (fast-memory-space != 0).
// RUN: pbc-opt %s -p 'pbc-panel-layout' | FileCheck %s
// RUN: pbc-opt %s -p 'pbc-panel-layout{fast-memory-space=3}' | FileCheck %s --check-prefix=GPU
// CHECK-LABEL: func.func @panels
// CHECK: memref.alloc() : memref<5x128x64xf32>
// CHECK: affine.vector_store %{{.*}}, %[[BUF:.*]][%[[N:.*]] floordiv 64, %{{.*}}, %[[N]] mod 64] : memref<5x128x64xf32>
// CHECK: affine.for %[[JR:.*]] = 0 to 256 step 64
// CHECK: affine.for %[[K:.*]] = 0 to 128
// CHECK: affine.vector_load %[[BUF]][%[[JR]] floordiv 64, %[[K]], 0] : memref<5x128x64xf32>
// CHECK: affine.vector_load %[[BUF]][%[[JR]] floordiv 64, %[[K]], 48] : memref<5x128x64xf32>
// CHECK-LABEL: func.func @column_moves
// CHECK: memref.alloc() : memref<128x272xf32>
// CHECK-LABEL: func.func @window_too_wide
// CHECK: memref.alloc() : memref<128x272xf32>
// GPU-LABEL: func.func @panels
// GPU: memref.alloc() : memref<128x272xf32>

func.func @panels(%B: memref<128x256xf32>, %C: memref<4x256xf32>) {
  %alloc = memref.alloc() : memref<128x272xf32>
  affine.for %k = 0 to 128 {
    affine.for %n = 0 to 256 step 16 {
      %v = affine.vector_load %B[%k, %n] : memref<128x256xf32>, vector<16xf32>
      affine.vector_store %v, %alloc[%k, %n] : memref<128x272xf32>, vector<16xf32>
    }
  } {pbc.copy}
  %z = arith.constant dense<0.0> : vector<16xf32>
  affine.for %jr = 0 to 256 step 64 {
    %r:2 = affine.for %k = 0 to 128 iter_args(%a = %z, %b = %z) -> (vector<16xf32>, vector<16xf32>) {
      %x = affine.vector_load %alloc[%k, %jr] : memref<128x272xf32>, vector<16xf32>
      %y = affine.vector_load %alloc[%k, %jr + 48] : memref<128x272xf32>, vector<16xf32>
      %s = arith.addf %a, %x : vector<16xf32>
      %t = arith.addf %b, %y : vector<16xf32>
      affine.yield %s, %t : vector<16xf32>, vector<16xf32>
    }
    affine.vector_store %r#0, %C[0, %jr] : memref<4x256xf32>, vector<16xf32>
    affine.vector_store %r#1, %C[0, %jr + 48] : memref<4x256xf32>, vector<16xf32>
  }
  memref.dealloc %alloc : memref<128x272xf32>
  return
}

// The reads' innermost loop runs along the columns: already contiguous.
func.func @column_moves(%B: memref<128x256xf32>, %C: memref<128x256xf32>) {
  %alloc = memref.alloc() : memref<128x272xf32>
  affine.for %k = 0 to 128 {
    affine.for %n = 0 to 256 step 16 {
      %v = affine.vector_load %B[%k, %n] : memref<128x256xf32>, vector<16xf32>
      affine.vector_store %v, %alloc[%k, %n] : memref<128x272xf32>, vector<16xf32>
    }
  } {pbc.copy}
  affine.for %k = 0 to 128 {
    affine.for %n = 0 to 256 step 16 {
      %x = affine.vector_load %alloc[%k, %n] : memref<128x272xf32>, vector<16xf32>
      affine.vector_store %x, %C[%k, %n] : memref<128x256xf32>, vector<16xf32>
    }
  }
  memref.dealloc %alloc : memref<128x272xf32>
  return
}

// Reads 0..48 of a 32-wide step: no panel width holds the window and divides
// the step.
func.func @window_too_wide(%B: memref<128x256xf32>, %C: memref<4x256xf32>) {
  %alloc = memref.alloc() : memref<128x272xf32>
  affine.for %k = 0 to 128 {
    affine.for %n = 0 to 256 step 16 {
      %v = affine.vector_load %B[%k, %n] : memref<128x256xf32>, vector<16xf32>
      affine.vector_store %v, %alloc[%k, %n] : memref<128x272xf32>, vector<16xf32>
    }
  } {pbc.copy}
  %z = arith.constant dense<0.0> : vector<16xf32>
  affine.for %jr = 0 to 224 step 32 {
    %r = affine.for %k = 0 to 128 iter_args(%a = %z) -> (vector<16xf32>) {
      %x = affine.vector_load %alloc[%k, %jr + 32] : memref<128x272xf32>, vector<16xf32>
      %s = arith.addf %a, %x : vector<16xf32>
      affine.yield %s : vector<16xf32>
    }
    affine.vector_store %r, %C[0, %jr] : memref<4x256xf32>, vector<16xf32>
  }
  memref.dealloc %alloc : memref<128x272xf32>
  return
}
