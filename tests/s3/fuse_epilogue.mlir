// pbc-fuse-epilogue moves an elementwise epilogue into the matmul-kind nest
// that computes its input: per tile of C, right after the tile's stores, over
// exactly that tile, and the epilogue's own nest goes. It must not fuse when
// the matmul re-reads C (a split reduction: a tile is not final when
// written), nor when the epilogue writes a buffer the matmul reads.
// RUN: pbc-opt %s -p 'pbc-fuse-epilogue' | FileCheck %s

// A 2x16 register tile (two rows of one vector): the slice runs inside the
// %j loop over 2 rows x 16 columns from (%i, %j), unrolled; its reads of C
// take the values the tile computed, whose own stores go (overwritten before
// any read). The bias loads between the nests move above the matmul.
// CHECK-LABEL: func.func @register_tile
// CHECK: %[[G:.*]] = affine.vector_load %arg3[0]
// CHECK: affine.for %[[I:.*]] = 0 to 8 step 2 {
// CHECK-NEXT: affine.for %[[J:.*]] = 0 to 32 step 16 {
// CHECK-NOT: affine.vector_load %arg2
// CHECK: %[[Y0:.*]] = arith.mulf
// CHECK-NEXT: %[[Y1:.*]] = arith.mulf
// CHECK-NOT: affine.vector_store
// CHECK: affine.vector_load %arg1
// CHECK-NEXT: %[[S0:.*]] = arith.addf %[[Y0]]
// CHECK-NEXT: arith.mulf %[[S0]], %[[G]]
// CHECK-NEXT: %[[R0:.*]] = arith.maximumf
// CHECK-NEXT: affine.vector_store %[[R0]], %arg2[%{{.*}}, %{{.*}}]
// CHECK-NOT: affine.vector_load %arg2
// CHECK: %[[S1:.*]] = arith.addf %[[Y1]]
// CHECK: %[[R1:.*]] = arith.maximumf
// CHECK-NEXT: affine.vector_store %[[R1]], %arg2
// CHECK-NEXT: }
// CHECK-NEXT: } {pbc.kind = "matmul"}
// CHECK-NOT: pbc.kind = "broadcast"
// CHECK: return
func.func @register_tile(%a: memref<8x32xf32>, %bias: memref<32xf32>, %c: memref<8x32xf32>,
                         %g: memref<16xf32>) {
  %zero = arith.constant dense<0.0> : vector<16xf32>
  affine.for %i = 0 to 8 step 2 {
    affine.for %j = 0 to 32 step 16 {
      %x0 = affine.vector_load %a[%i, %j] : memref<8x32xf32>, vector<16xf32>
      %x1 = affine.vector_load %a[%i + 1, %j] : memref<8x32xf32>, vector<16xf32>
      %y0 = arith.mulf %x0, %x0 : vector<16xf32>
      %y1 = arith.mulf %x1, %x1 : vector<16xf32>
      affine.vector_store %y0, %c[%i, %j] : memref<8x32xf32>, vector<16xf32>
      affine.vector_store %y1, %c[%i + 1, %j] : memref<8x32xf32>, vector<16xf32>
    }
  } {pbc.kind = "matmul"}
  %g0 = affine.vector_load %g[0] : memref<16xf32>, vector<16xf32>
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 32 step 16 {
      %v = affine.vector_load %c[%i, %j] : memref<8x32xf32>, vector<16xf32>
      %b = affine.vector_load %bias[%j] : memref<32xf32>, vector<16xf32>
      %s = arith.addf %v, %b : vector<16xf32>
      %t = arith.mulf %s, %g0 : vector<16xf32>
      %r = arith.maximumf %t, %zero : vector<16xf32>
      affine.vector_store %r, %c[%i, %j] : memref<8x32xf32>, vector<16xf32>
    }
  } {pbc.kind = "broadcast"}
  return
}

// The epilogue has unrolled its columns (offsets 0 and 16): the tile must
// span whole rows, so the slice runs after the %jj loop, per row, into a
// second buffer.
// CHECK-LABEL: func.func @whole_rows
// CHECK: affine.for %[[I:.*]] = 0 to 4 {
// CHECK-NEXT: affine.for %[[JJ:.*]] = 0 to 32 step 16 {
// CHECK: affine.vector_store %{{.*}}, %arg1[%[[I]], %[[JJ]]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[R0:.*]] = affine.apply #{{.*}}(%[[I]])
// CHECK-NEXT: affine.for %[[R:.*]] = 0 to 1 {
// CHECK-NEXT: %[[ROW:.*]] = affine.apply #{{.*}}(%[[R0]], %[[R]])
// CHECK-NEXT: affine.vector_load %arg1[%[[ROW]], 0]
// CHECK: affine.vector_store %{{.*}}, %arg2[%[[ROW]], 16]
// CHECK: } {pbc.kind = "matmul"}
// CHECK-NOT: pbc.kind = "pointwise"
// CHECK: return
func.func @whole_rows(%a: memref<4x32xf32>, %c: memref<4x32xf32>, %y: memref<4x32xf32>) {
  affine.for %i = 0 to 4 {
    affine.for %jj = 0 to 32 step 16 {
      %x = affine.vector_load %a[%i, %jj] : memref<4x32xf32>, vector<16xf32>
      %s = arith.addf %x, %x : vector<16xf32>
      affine.vector_store %s, %c[%i, %jj] : memref<4x32xf32>, vector<16xf32>
    }
  } {pbc.kind = "matmul"}
  affine.for %i = 0 to 4 {
    %v0 = affine.vector_load %c[%i, 0] : memref<4x32xf32>, vector<16xf32>
    %e0 = math.exp %v0 : vector<16xf32>
    affine.vector_store %e0, %y[%i, 0] : memref<4x32xf32>, vector<16xf32>
    %v1 = affine.vector_load %c[%i, 16] : memref<4x32xf32>, vector<16xf32>
    %e1 = math.exp %v1 : vector<16xf32>
    affine.vector_store %e1, %y[%i, 16] : memref<4x32xf32>, vector<16xf32>
  } {pbc.kind = "pointwise"}
  return
}

// A split reduction: C is read back under the %k0 loop (the nest's root),
// so no tile is final when stored, and E writes C in place.
// CHECK-LABEL: func.func @split_reduction
// CHECK: } {pbc.kind = "matmul"}
// CHECK-NEXT: affine.for
// CHECK: } {pbc.kind = "pointwise"}
func.func @split_reduction(%a: memref<4x16xf32>, %c: memref<4x16xf32>) {
  affine.for %k0 = 0 to 2 {
    affine.for %i = 0 to 4 {
      %x = affine.vector_load %a[%i, 0] : memref<4x16xf32>, vector<16xf32>
      %o = affine.vector_load %c[%i, 0] : memref<4x16xf32>, vector<16xf32>
      %s = arith.addf %x, %o : vector<16xf32>
      affine.vector_store %s, %c[%i, 0] : memref<4x16xf32>, vector<16xf32>
    }
  } {pbc.kind = "matmul"}
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 16 step 16 {
      %v = affine.vector_load %c[%i, %j] : memref<4x16xf32>, vector<16xf32>
      %e = math.exp %v : vector<16xf32>
      affine.vector_store %e, %c[%i, %j] : memref<4x16xf32>, vector<16xf32>
    }
  } {pbc.kind = "pointwise"}
  return
}

// A reduction split into blocks inside M (a GEMM's KC loop, its first
// block peeled by pbc-absorb-fill): C is complete in the last block only,
// which is peeled off the loop (0 to 2, then 2 to 3); E follows its tiles.
// CHECK-LABEL: func.func @split_k_last_block
// CHECK: affine.for %{{.*}} = 0 to 2 {
// CHECK-NOT: math.exp
// CHECK: affine.for %{{.*}} = 2 to 3 {
// CHECK: affine.vector_store %{{.*}}, %arg1
// CHECK: math.exp
// CHECK-NEXT: affine.vector_store %{{.*}}, %arg2
// CHECK: } {pbc.kind = "matmul"}
// CHECK-NOT: pbc.kind = "pointwise"
func.func @split_k_last_block(%a: memref<4x16xf32>, %c: memref<4x16xf32>, %y: memref<4x16xf32>) {
  affine.for %r = 0 to 1 {
    affine.for %k0 = 0 to 3 {
      affine.for %i = 0 to 4 {
        %x = affine.vector_load %a[%i, 0] : memref<4x16xf32>, vector<16xf32>
        %o = affine.vector_load %c[%i, 0] : memref<4x16xf32>, vector<16xf32>
        %s = arith.addf %x, %o : vector<16xf32>
        affine.vector_store %s, %c[%i, 0] : memref<4x16xf32>, vector<16xf32>
      }
    }
  } {pbc.kind = "matmul"}
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 16 step 16 {
      %v = affine.vector_load %c[%i, %j] : memref<4x16xf32>, vector<16xf32>
      %e = math.exp %v : vector<16xf32>
      affine.vector_store %e, %y[%i, %j] : memref<4x16xf32>, vector<16xf32>
    }
  } {pbc.kind = "pointwise"}
  return
}

// The epilogue writes the matmul's input: moving it into the matmul would
// change what later tiles read.
// CHECK-LABEL: func.func @writes_input
// CHECK: } {pbc.kind = "matmul"}
// CHECK-NEXT: affine.for
// CHECK: } {pbc.kind = "pointwise"}
func.func @writes_input(%a: memref<4x16xf32>, %c: memref<4x16xf32>) {
  affine.for %i = 0 to 4 {
    %x = affine.vector_load %a[%i, 0] : memref<4x16xf32>, vector<16xf32>
    affine.vector_store %x, %c[%i, 0] : memref<4x16xf32>, vector<16xf32>
  } {pbc.kind = "matmul"}
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 16 step 16 {
      %v = affine.vector_load %c[%i, %j] : memref<4x16xf32>, vector<16xf32>
      affine.vector_store %v, %a[%i, %j] : memref<4x16xf32>, vector<16xf32>
    }
  } {pbc.kind = "pointwise"}
  return
}

// A register tile's slice is unrolled into the tile only up to 64 vector (or
// scalar) iterations of the epilogue: one row of 64 columns unrolls (64
// maximumf in a row, no loop left); one of 65 stays a loop nest after the
// tile's store, reading C back.
// CHECK-LABEL: func.func @unrolled_slice
// CHECK: affine.for %{{.*}} = 0 to 4 {
// CHECK: affine.vector_store %{{.*}}, %arg1[%{{.*}}, 0] : memref<4x64xf32>, vector<64xf32>
// CHECK-NOT: affine.for
// CHECK-COUNT-64: arith.maximumf
// CHECK-NOT: arith.maximumf
// CHECK: } {pbc.kind = "matmul"}
// CHECK-NEXT: return
func.func @unrolled_slice(%a: memref<4x64xf32>, %c: memref<4x64xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 4 {
    %x = affine.vector_load %a[%i, 0] : memref<4x64xf32>, vector<64xf32>
    %y = arith.mulf %x, %x : vector<64xf32>
    affine.vector_store %y, %c[%i, 0] : memref<4x64xf32>, vector<64xf32>
  } {pbc.kind = "matmul"}
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 64 {
      %v = affine.load %c[%i, %j] : memref<4x64xf32>
      %r = arith.maximumf %v, %zero : f32
      affine.store %r, %c[%i, %j] : memref<4x64xf32>
    }
  } {pbc.kind = "pointwise"}
  return
}
// CHECK-LABEL: func.func @looped_slice
// CHECK: affine.for %{{.*}} = 0 to 4 {
// CHECK: affine.vector_store %{{.*}}, %arg1[%{{.*}}, 0] : memref<4x65xf32>, vector<65xf32>
// CHECK: affine.for %{{.*}} = 0 to 1 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 65 {
// CHECK: affine.load %arg1
// CHECK-NEXT: arith.maximumf
// CHECK-NEXT: affine.store
// CHECK: } {pbc.kind = "matmul"}
// CHECK-NEXT: return
func.func @looped_slice(%a: memref<4x65xf32>, %c: memref<4x65xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 4 {
    %x = affine.vector_load %a[%i, 0] : memref<4x65xf32>, vector<65xf32>
    %y = arith.mulf %x, %x : vector<65xf32>
    affine.vector_store %y, %c[%i, 0] : memref<4x65xf32>, vector<65xf32>
  } {pbc.kind = "matmul"}
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 65 {
      %v = affine.load %c[%i, %j] : memref<4x65xf32>
      %r = arith.maximumf %v, %zero : f32
      affine.store %r, %c[%i, %j] : memref<4x65xf32>
    }
  } {pbc.kind = "pointwise"}
  return
}

// A depthwise convolution's padded input is freed between M and E (E cannot
// read it; M does): the free stays after M, E joins M, and C, an allocation
// only E read, goes with its stores.
// CHECK-LABEL: func.func @freed_input
// CHECK-NOT: alloc() : memref<4x16xf32>
// CHECK: affine.for %[[I:.*]] = 0 to 4 {
// CHECK-NEXT: affine.vector_load %[[IN:.*]][%[[I]], 0] : memref<4x17xf32>
// CHECK-NEXT: arith.addf
// CHECK-NOT: memref<4x16xf32>
// CHECK: math.exp
// CHECK-NEXT: affine.vector_store %{{.*}}, %arg1[%{{.*}}, 0]
// CHECK-NEXT: } {pbc.kind = "matmul"}
// CHECK-NEXT: memref.dealloc %[[IN]]
// CHECK-NOT: memref<4x16xf32>
// CHECK: return
func.func @freed_input(%x: memref<4x17xf32>, %y: memref<4x16xf32>) {
  %in = memref.alloc() : memref<4x17xf32>
  memref.copy %x, %in : memref<4x17xf32> to memref<4x17xf32>
  %c = memref.alloc() : memref<4x16xf32>
  affine.for %i = 0 to 4 {
    %v = affine.vector_load %in[%i, 0] : memref<4x17xf32>, vector<16xf32>
    %s = arith.addf %v, %v : vector<16xf32>
    affine.vector_store %s, %c[%i, 0] : memref<4x16xf32>, vector<16xf32>
  } {pbc.kind = "matmul"}
  memref.dealloc %in : memref<4x17xf32>
  affine.for %i = 0 to 4 {
    %v = affine.vector_load %c[%i, 0] : memref<4x16xf32>, vector<16xf32>
    %e = math.exp %v : vector<16xf32>
    affine.vector_store %e, %y[%i, 0] : memref<4x16xf32>, vector<16xf32>
  } {pbc.kind = "pointwise"}
  memref.dealloc %c : memref<4x16xf32>
  return
}

// E writes a padded buffer's interior (a view made between M and E): the
// allocation and the view move above M, E joins M and writes the view, and
// C goes.
// CHECK-LABEL: func.func @into_padded_interior
// CHECK: %[[P:.*]] = memref.alloc() : memref<6x16xf32>
// CHECK-NEXT: %[[S:.*]] = memref.subview %[[P]]
// CHECK-NOT: alloc
// CHECK: affine.for
// CHECK: math.exp
// CHECK-NEXT: affine.vector_store %{{.*}}, %[[S]]
// CHECK-NEXT: } {pbc.kind = "matmul"}
// CHECK-NOT: affine.for
// CHECK: return
func.func @into_padded_interior(%a: memref<4x16xf32>) -> memref<6x16xf32> {
  %c = memref.alloc() : memref<4x16xf32>
  affine.for %i = 0 to 4 {
    %v = affine.vector_load %a[%i, 0] : memref<4x16xf32>, vector<16xf32>
    %s = arith.addf %v, %v : vector<16xf32>
    affine.vector_store %s, %c[%i, 0] : memref<4x16xf32>, vector<16xf32>
  } {pbc.kind = "matmul"}
  %p = memref.alloc() : memref<6x16xf32>
  %in = memref.subview %p[1, 0] [4, 16] [1, 1] : memref<6x16xf32> to memref<4x16xf32, strided<[16, 1], offset: 16>>
  affine.for %i = 0 to 4 {
    %v = affine.vector_load %c[%i, 0] : memref<4x16xf32>, vector<16xf32>
    %e = math.exp %v : vector<16xf32>
    affine.vector_store %e, %in[%i, 0] : memref<4x16xf32, strided<[16, 1], offset: 16>>, vector<16xf32>
  } {pbc.kind = "pointwise"}
  memref.dealloc %c : memref<4x16xf32>
  return %p : memref<6x16xf32>
}
