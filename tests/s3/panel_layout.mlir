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

// A convolution's weight block (kh x kw x c x NC, rows of NC): the reads walk
// c in their innermost loop with kh and kw outside, so the rows are the
// leading three subscripts, and the panels are 3 x 3 x 64 x 32.
// CHECK-LABEL: func.func @conv_weights
// CHECK: memref.alloc() : memref<5x3x3x64x32xf32>
// CHECK: affine.vector_store %{{.*}}, %[[BUF:.*]][%[[F:.*]] floordiv 32, %{{.*}}, %{{.*}}, %{{.*}}, %[[F]] mod 32] : memref<5x3x3x64x32xf32>
// CHECK: affine.for %[[JR:.*]] = 0 to 128 step 32
// CHECK: affine.for %[[KH:.*]] = 0 to 3
// CHECK: affine.for %[[KW:.*]] = 0 to 3
// CHECK: affine.for %[[C:.*]] = 0 to 64
// CHECK: affine.vector_load %[[BUF]][%[[JR]] floordiv 32, %[[KH]], %[[KW]], %[[C]], 0] : memref<5x3x3x64x32xf32>
// CHECK: affine.vector_load %[[BUF]][%[[JR]] floordiv 32, %[[KH]], %[[KW]], %[[C]], 16] : memref<5x3x3x64x32xf32>
func.func @conv_weights(%W: memref<3x3x64x128xf32>, %C: memref<1x128xf32>) {
  %alloc = memref.alloc() : memref<3x3x64x144xf32>
  affine.for %kh = 0 to 3 {
    affine.for %kw = 0 to 3 {
      affine.for %c = 0 to 64 {
        affine.for %f = 0 to 128 step 16 {
          %v = affine.vector_load %W[%kh, %kw, %c, %f] : memref<3x3x64x128xf32>, vector<16xf32>
          affine.vector_store %v, %alloc[%kh, %kw, %c, %f] : memref<3x3x64x144xf32>, vector<16xf32>
        }
      }
    }
  } {pbc.copy}
  %z = arith.constant dense<0.0> : vector<16xf32>
  affine.for %jr = 0 to 128 step 32 {
    %r:2 = affine.for %kh = 0 to 3 iter_args(%a0 = %z, %b0 = %z) -> (vector<16xf32>, vector<16xf32>) {
      %s:2 = affine.for %kw = 0 to 3 iter_args(%a1 = %a0, %b1 = %b0) -> (vector<16xf32>, vector<16xf32>) {
        %t:2 = affine.for %c = 0 to 64 iter_args(%a = %a1, %b = %b1) -> (vector<16xf32>, vector<16xf32>) {
          %x = affine.vector_load %alloc[%kh, %kw, %c, %jr] : memref<3x3x64x144xf32>, vector<16xf32>
          %y = affine.vector_load %alloc[%kh, %kw, %c, %jr + 16] : memref<3x3x64x144xf32>, vector<16xf32>
          %u = arith.addf %a, %x : vector<16xf32>
          %w = arith.addf %b, %y : vector<16xf32>
          affine.yield %u, %w : vector<16xf32>, vector<16xf32>
        }
        affine.yield %t#0, %t#1 : vector<16xf32>, vector<16xf32>
      }
      affine.yield %s#0, %s#1 : vector<16xf32>, vector<16xf32>
    }
    affine.vector_store %r#0, %C[0, %jr] : memref<1x128xf32>, vector<16xf32>
    affine.vector_store %r#1, %C[0, %jr + 16] : memref<1x128xf32>, vector<16xf32>
  }
  memref.dealloc %alloc : memref<3x3x64x144xf32>
  return
}
