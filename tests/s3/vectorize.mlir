// pbc-vectorize widens innermost loops by vector-bits / element bits:
// contiguous accesses become affine.vector_load/store, elementwise ops get
// vector types, loop-invariant scalars are broadcast, the step is the lanes.
// RUN: pbc-opt %s -p 'pbc-vectorize{vector-bits=256}' | FileCheck %s
// CHECK-LABEL: func.func @axpy
// CHECK: affine.for %[[I:.*]] = 0 to 64 step 8 {
// CHECK-NEXT: %[[X:.*]] = affine.vector_load %arg0[%[[I]]] : memref<64xf32>, vector<8xf32>
// CHECK-NEXT: %[[S:.*]] = vector.broadcast %arg2 : f32 to vector<8xf32>
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[X]], %[[S]] : vector<8xf32>
// CHECK-NEXT: %[[E:.*]] = math.exp %[[M]] : vector<8xf32>
// CHECK-NEXT: affine.vector_store %[[E]], %arg1[%[[I]]] : memref<64xf32>, vector<8xf32>
func.func @axpy(%x: memref<64xf32>, %y: memref<64xf32>, %s: f32) {
  affine.for %i = 0 to 64 {
    %a = affine.load %x[%i] : memref<64xf32>
    %m = arith.mulf %a, %s : f32
    %e = math.exp %m : f32
    affine.store %e, %y[%i] : memref<64xf32>
  }
  return
}
// Must not: a loop-carried dependence (x[i+1] = x[i]), a strided access,
// a trip count that isn't a multiple of the lanes, a reduction into one
// element (invariant store).
// CHECK-LABEL: func.func @carried
// CHECK-NOT: vector
func.func @carried(%x: memref<65xf32>) {
  affine.for %i = 0 to 64 {
    %a = affine.load %x[%i] : memref<65xf32>
    affine.store %a, %x[%i + 1] : memref<65xf32>
  }
  return
}
// CHECK-LABEL: func.func @strided
// CHECK-NOT: vector
func.func @strided(%x: memref<128xf32>, %y: memref<64xf32>) {
  affine.for %i = 0 to 64 {
    %a = affine.load %x[%i * 2] : memref<128xf32>
    affine.store %a, %y[%i] : memref<64xf32>
  }
  return
}
// A trip the lanes don't divide: vectors up to its last multiple, the
// tail (7, which no lanes divide) scalar in a copy of the loop from 56.
// CHECK-LABEL: func.func @odd_trip
// CHECK: affine.for %{{.*}} = 0 to 56 step 8 {
// CHECK: affine.vector_load %arg0[%{{.*}}] : memref<63xf32>, vector<8xf32>
// CHECK: affine.for %[[T:.*]] = 0 to 7 {
// CHECK-NEXT: %[[A:.*]] = affine.apply #{{.*}}(%c56, %[[T]])
// CHECK-NEXT: affine.load %arg0[%[[A]]] : memref<63xf32>
// CHECK-NOT: vector
// CHECK: return
func.func @odd_trip(%x: memref<63xf32>) {
  affine.for %i = 0 to 63 {
    %a = affine.load %x[%i] : memref<63xf32>
    %b = arith.addf %a, %a : f32
    affine.store %b, %x[%i] : memref<63xf32>
  }
  return
}
// CHECK-LABEL: func.func @sum
// CHECK-NOT: vector
func.func @sum(%x: memref<64xf32>, %o: memref<f32>) {
  affine.for %i = 0 to 64 {
    %a = affine.load %x[%i] : memref<64xf32>
    %b = affine.load %o[] : memref<f32>
    %c = arith.addf %a, %b : f32
    affine.store %c, %o[] : memref<f32>
  }
  return
}
// The same carried dependence through a view of the written buffer
// (v[i] is x[i+1]): the memrefs differ but alias, so no vectorization.
// CHECK-LABEL: func.func @carried_view
// CHECK-NOT: vector
func.func @carried_view(%x: memref<65xf32>) {
  %v = memref.subview %x[1] [64] [1] : memref<65xf32> to memref<64xf32, strided<[1], offset: 1>>
  affine.for %i = 0 to 64 {
    %a = affine.load %x[%i] : memref<65xf32>
    affine.store %a, %v[%i] : memref<64xf32, strided<[1], offset: 1>>
  }
  return
}
// A copy into a view of another buffer is fine.
// CHECK-LABEL: func.func @copy_into_view
// CHECK: affine.vector_store
func.func @copy_into_view(%x: memref<64xf32>, %y: memref<80xf32>) {
  %v = memref.subview %y[8] [64] [1] : memref<80xf32> to memref<64xf32, strided<[1], offset: 8>>
  affine.for %i = 0 to 64 {
    %a = affine.load %x[%i] : memref<64xf32>
    affine.store %a, %v[%i] : memref<64xf32, strided<[1], offset: 8>>
  }
  return
}

// Index arithmetic that only linear subscripts use (a split nest's origin
// + iv) stays scalar, like the iv: the loop is vectorized. An index that is
// no linear form of the iv (mod) makes its access a gather: not vectorized
// (a scalar load of it would wrongly be broadcast).
// CHECK-LABEL: func.func @offset_index
// CHECK: affine.for %[[I:.*]] = 0 to 32 step 8 {
// CHECK-NEXT: %[[A:.*]] = affine.apply #{{.*}}(%[[I]])
// CHECK-NEXT: affine.vector_load %arg0[%[[A]]] : memref<64xf32>, vector<8xf32>
// CHECK: affine.vector_store %{{.*}}, %arg1[%[[A]]] : memref<64xf32>, vector<8xf32>
func.func @offset_index(%x: memref<64xf32>, %y: memref<64xf32>) {
  affine.for %i = 0 to 32 {
    %a = affine.apply affine_map<(d0) -> (d0 + 32)>(%i)
    %v = affine.load %x[%a] : memref<64xf32>
    %w = arith.addf %v, %v : f32
    affine.store %w, %y[%a] : memref<64xf32>
  }
  return
}

// CHECK-LABEL: func.func @modulo_index
// CHECK: affine.for %{{.*}} = 0 to 48 {
// CHECK-NOT: vector
// CHECK: return
func.func @modulo_index(%x: memref<3xf32>, %y: memref<48xf32>) {
  affine.for %i = 0 to 48 {
    %a = affine.apply affine_map<(d0) -> (d0 mod 3)>(%i)
    %v = affine.load %x[%a] : memref<3xf32>
    affine.store %v, %y[%i] : memref<48xf32>
  }
  return
}

// Where the innermost loop can't be widened (a pooling window: kh, kw move
// along rows), the nearest enclosing loop that can is: 8 channels per vector,
// the window loops kept inside.
// CHECK-LABEL: func.func @pool_window
// CHECK: affine.for %[[C:.*]] = 0 to 16 step 8 {
// CHECK: affine.for
// CHECK-NEXT: affine.for
// CHECK-NEXT: affine.vector_load %arg1[%{{.*}}, %[[C]]] : memref<4x16xf32>, vector<8xf32>
// CHECK-NEXT: affine.vector_load %arg0[%{{.*}}, %{{.*}}, %[[C]]] : memref<5x5x16xf32>, vector<8xf32>
// CHECK-NEXT: arith.maximumf %{{.*}} : vector<8xf32>
// CHECK-NEXT: affine.vector_store %{{.*}}, %arg1[%{{.*}}, %[[C]]] : memref<4x16xf32>, vector<8xf32>
func.func @pool_window(%x: memref<5x5x16xf32>, %y: memref<4x16xf32>) {
  affine.for %o = 0 to 4 {
    affine.for %c = 0 to 16 {
      affine.for %kh = 0 to 2 {
        affine.for %kw = 0 to 2 {
          %a = affine.load %y[%o, %c] : memref<4x16xf32>
          %b = affine.load %x[%o + %kh, %o + %kw, %c] : memref<5x5x16xf32>
          %m = arith.maximumf %a, %b : f32
          affine.store %m, %y[%o, %c] : memref<4x16xf32>
        }
      }
    }
  }
  return
}

// Must not: an enclosing loop along which the reads stride (a matrix-vector
// product's rows: y[i] += A[i][k] x[k]).
// CHECK-LABEL: func.func @matvec_rows
// CHECK-NOT: vector
// CHECK: return
func.func @matvec_rows(%a: memref<16x16xf32>, %x: memref<16xf32>, %y: memref<16xf32>) {
  affine.for %i = 0 to 16 {
    affine.for %k = 0 to 16 {
      %s = affine.load %y[%i] : memref<16xf32>
      %v = affine.load %a[%i, %k] : memref<16x16xf32>
      %w = affine.load %x[%k] : memref<16xf32>
      %p = arith.mulf %v, %w : f32
      %q = arith.addf %s, %p : f32
      affine.store %q, %y[%i] : memref<16xf32>
    }
  }
  return
}
