// pbc-fold-constant-loads: reads at constant subscripts of a constant global,
// directly or through a pbc.copy replica of it (pbc-interleave's R[.., g] =
// G[.., g mod 3]), become constants; a replica nobody reads any more goes
// with its copy nest. Left alone: a global that is not constant, a replica
// with a second writer, a read before the copy, a read at a loop-varying
// subscript (which keeps the replica), an element the copy never wrote.
// RUN: pbc-opt %s -p 'pbc-fold-constant-loads' | FileCheck %s

memref.global "private" constant @taps : memref<2x3xf32> = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]>
memref.global "private" @mutable : memref<2x3xf32> = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]>

// CHECK-LABEL: func.func @direct
// CHECK-NOT: affine.load
// CHECK: %[[C:.*]] = arith.constant 6.000000e+00 : f32
// CHECK: arith.addf %[[C]], %[[C]]
func.func @direct() -> f32 {
  %g = memref.get_global @taps : memref<2x3xf32>
  %v = affine.load %g[1, 2] : memref<2x3xf32>
  %s = arith.addf %v, %v : f32
  return %s : f32
}

// The replica of row 1 repeated: lanes 14..17 of [1, 14] are 6 4 5 6.
// CHECK-LABEL: func.func @replica
// CHECK-NOT: memref.alloc
// CHECK-NOT: affine.for
// CHECK: arith.constant dense<[6.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00]> : vector<4xf32>
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @replica() -> vector<4xf32> {
  %g = memref.get_global @taps : memref<2x3xf32>
  %r = memref.alloc() : memref<2x48xf32>
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 48 {
      %m = affine.apply affine_map<(d0) -> (d0 mod 3)>(%j)
      %v = affine.load %g[%i, %m] : memref<2x3xf32>
      affine.store %v, %r[%i, %j] : memref<2x48xf32>
    }
  } {pbc.copy}
  %w = affine.vector_load %r[1, 14] : memref<2x48xf32>, vector<4xf32>
  memref.dealloc %r : memref<2x48xf32>
  return %w : vector<4xf32>
}

// CHECK-LABEL: func.func @not_constant_global
// CHECK: affine.load
func.func @not_constant_global() -> f32 {
  %g = memref.get_global @mutable : memref<2x3xf32>
  %v = affine.load %g[1, 2] : memref<2x3xf32>
  return %v : f32
}

// CHECK-LABEL: func.func @second_writer
// CHECK: affine.vector_load
func.func @second_writer(%f: f32) -> vector<4xf32> {
  %g = memref.get_global @taps : memref<2x3xf32>
  %r = memref.alloc() : memref<2x48xf32>
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 48 {
      %m = affine.apply affine_map<(d0) -> (d0 mod 3)>(%j)
      %v = affine.load %g[%i, %m] : memref<2x3xf32>
      affine.store %v, %r[%i, %j] : memref<2x48xf32>
    }
  } {pbc.copy}
  affine.store %f, %r[1, 15] : memref<2x48xf32>
  %w = affine.vector_load %r[1, 14] : memref<2x48xf32>, vector<4xf32>
  memref.dealloc %r : memref<2x48xf32>
  return %w : vector<4xf32>
}

// CHECK-LABEL: func.func @read_before_copy
// CHECK: affine.vector_load
func.func @read_before_copy() -> vector<4xf32> {
  %g = memref.get_global @taps : memref<2x3xf32>
  %r = memref.alloc() : memref<2x48xf32>
  %w = affine.vector_load %r[1, 14] : memref<2x48xf32>, vector<4xf32>
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 48 {
      %m = affine.apply affine_map<(d0) -> (d0 mod 3)>(%j)
      %v = affine.load %g[%i, %m] : memref<2x3xf32>
      affine.store %v, %r[%i, %j] : memref<2x48xf32>
    }
  } {pbc.copy}
  memref.dealloc %r : memref<2x48xf32>
  return %w : vector<4xf32>
}

// The constant read folds; the loop's read keeps the replica and its copy.
// CHECK-LABEL: func.func @varying_read
// CHECK: memref.alloc
// CHECK: affine.for
// CHECK: } {pbc.copy}
// CHECK: arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 1.000000e+00]> : vector<4xf32>
// CHECK: affine.for
// CHECK: affine.vector_load %{{.*}}[0, %{{.*}}]
func.func @varying_read(%out: memref<48xf32>) -> vector<4xf32> {
  %g = memref.get_global @taps : memref<2x3xf32>
  %r = memref.alloc() : memref<2x48xf32>
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 48 {
      %m = affine.apply affine_map<(d0) -> (d0 mod 3)>(%j)
      %v = affine.load %g[%i, %m] : memref<2x3xf32>
      affine.store %v, %r[%i, %j] : memref<2x48xf32>
    }
  } {pbc.copy}
  %w = affine.vector_load %r[0, 0] : memref<2x48xf32>, vector<4xf32>
  affine.for %k = 0 to 48 step 4 {
    %x = affine.vector_load %r[0, %k] : memref<2x48xf32>, vector<4xf32>
    affine.vector_store %x, %out[%k] : memref<48xf32>, vector<4xf32>
  }
  memref.dealloc %r : memref<2x48xf32>
  return %w : vector<4xf32>
}

// The copy writes only the diagonal: [1, 1] is 5, [0, 1] never written.
// CHECK-LABEL: func.func @diagonal
// CHECK: arith.constant 5.000000e+00 : f32
// CHECK: affine.load %{{.*}}[0, 1]
func.func @diagonal() -> (f32, f32) {
  %g = memref.get_global @taps : memref<2x3xf32>
  %r = memref.alloc() : memref<2x3xf32>
  affine.for %i = 0 to 2 {
    %v = affine.load %g[%i, %i] : memref<2x3xf32>
    affine.store %v, %r[%i, %i] : memref<2x3xf32>
  } {pbc.copy}
  %a = affine.load %r[1, 1] : memref<2x3xf32>
  %b = affine.load %r[0, 1] : memref<2x3xf32>
  memref.dealloc %r : memref<2x3xf32>
  return %a, %b : f32, f32
}
