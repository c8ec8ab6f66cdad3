// pbc-hoist-invariant-loads: a vector loop over a row whose short inner
// loops (3 phases x 3 taps) read the same filter vectors every iteration:
// the short loops are fully unrolled and the 9 filter loads leave the row
// loop and the (only-child) loop around it, but not the loop that also
// holds a second nest. Not hoisted: a filter the loop writes, loads when
// they would not fit half the registers, and a loop that may not run.
// Loads of a constant filter (a pbc.copy replica of a constant global) count
// as their distinct values: 3 phases x 7 taps of a filter equal across
// channels are 4 splats, which fit 8 registers; the same filter with
// channels unequal is 21 vectors, which do not.
// RUN: pbc-opt %s -p 'pbc-hoist-invariant-loads{vector-registers=32}' | FileCheck %s
// RUN: pbc-opt %s -p 'pbc-hoist-invariant-loads{vector-registers=16}' | FileCheck %s --check-prefix=FEW
// CHECK-LABEL: func.func @stencil
// CHECK: affine.for %{{.*}} = 0 to 4 {
// CHECK-COUNT-9: affine.vector_load %arg1[
// CHECK-NEXT: affine.for %{{.*}} = 0 to 16 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 1024 step 16 {
// CHECK-NOT: affine.for
// CHECK-NOT: affine.vector_load %arg1[
// CHECK: affine.vector_store %{{.*}}, %arg2
// CHECK-NOT: affine.for
// CHECK-NOT: affine.vector_load %arg1[
// CHECK: affine.vector_store %{{.*}}, %arg2
// CHECK-NOT: affine.for
// CHECK-NOT: affine.vector_load %arg1[
// CHECK: affine.vector_store %{{.*}}, %arg2
// CHECK: affine.for %{{.*}} = 0 to 16 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 3072 step 16 {
// CHECK-LABEL: func.func @written
// CHECK: affine.for %{{.*}} = 0 to 1024 step 16 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 48 step 16 {
// CHECK-NEXT: affine.vector_load %arg1[0, %{{.*}}]
// FEW-LABEL: func.func @stencil
// FEW: affine.for %{{.*}} = 0 to 1024 step 16 {
// FEW-NEXT: affine.for %{{.*}} = 0 to 48 step 16
func.func @stencil(%x: memref<16x3100xf32>, %f: memref<3x48xf32>, %y: memref<16x3072xf32>, %z: memref<16x3072xf32>) {
  %zero = arith.constant dense<0.0> : vector<16xf32>
  affine.for %t = 0 to 4 {
    affine.for %r = 0 to 16 {
      affine.for %w = 0 to 1024 step 16 {
        affine.for %p = 0 to 48 step 16 {
          %acc = affine.for %k = 0 to 3 iter_args(%a = %zero) -> (vector<16xf32>) {
            %xv = affine.vector_load %x[%r, %w * 3 + %p + %k * 3] : memref<16x3100xf32>, vector<16xf32>
            %fv = affine.vector_load %f[%k, %p] : memref<3x48xf32>, vector<16xf32>
            %m = arith.mulf %xv, %fv : vector<16xf32>
            %s = arith.addf %a, %m : vector<16xf32>
            affine.yield %s : vector<16xf32>
          }
          affine.vector_store %acc, %y[%r, %w * 3 + %p] : memref<16x3072xf32>, vector<16xf32>
        }
      }
    }
    affine.for %r = 0 to 16 {
      affine.for %w = 0 to 3072 step 16 {
        %v = affine.vector_load %y[%r, %w] : memref<16x3072xf32>, vector<16xf32>
        affine.vector_store %v, %z[%r, %w] : memref<16x3072xf32>, vector<16xf32>
      }
    }
  }
  return
}
// The filter is rewritten inside the row loop: its loads stay.
func.func @written(%x: memref<16x3100xf32>, %f: memref<3x48xf32>, %y: memref<16x3072xf32>) {
  %zero = arith.constant dense<0.0> : vector<16xf32>
  affine.for %w = 0 to 1024 step 16 {
    affine.for %p = 0 to 48 step 16 {
      %fv = affine.vector_load %f[0, %p] : memref<3x48xf32>, vector<16xf32>
      %xv = affine.vector_load %x[0, %w * 3 + %p] : memref<16x3100xf32>, vector<16xf32>
      %m = arith.mulf %xv, %fv : vector<16xf32>
      affine.vector_store %m, %y[0, %w * 3 + %p] : memref<16x3072xf32>, vector<16xf32>
      affine.vector_store %m, %f[1, %p] : memref<3x48xf32>, vector<16xf32>
    }
  }
  return
}

memref.global "private" constant @taps_equal : memref<7x3xf32> = dense<[[1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [3.0, 3.0, 3.0], [4.0, 4.0, 4.0], [3.0, 3.0, 3.0], [2.0, 2.0, 2.0], [1.0, 1.0, 1.0]]>
memref.global "private" constant @taps_unequal : memref<7x3xf32> = dense<[[1.0, 2.0, 3.0], [2.0, 3.0, 4.0], [3.0, 4.0, 5.0], [4.0, 5.0, 6.0], [5.0, 6.0, 7.0], [6.0, 7.0, 8.0], [7.0, 8.0, 9.0]]>

// FEW-LABEL: func.func @constant_taps
// FEW: } {pbc.copy}
// FEW-COUNT-21: affine.vector_load %alloc[
// FEW-NEXT: affine.for %{{.*}} = 0 to 1024 step 16 {
// FEW-NOT: affine.for
// FEW: return
func.func @constant_taps(%x: memref<3100xf32>, %y: memref<3072xf32>) {
  %zero = arith.constant dense<0.0> : vector<16xf32>
  %g = memref.get_global @taps_equal : memref<7x3xf32>
  %f = memref.alloc() : memref<7x48xf32>
  affine.for %i = 0 to 7 {
    affine.for %j = 0 to 48 {
      %m = affine.apply affine_map<(d0) -> (d0 mod 3)>(%j)
      %v = affine.load %g[%i, %m] : memref<7x3xf32>
      affine.store %v, %f[%i, %j] : memref<7x48xf32>
    }
  } {pbc.copy}
  affine.for %w = 0 to 1024 step 16 {
    affine.for %p = 0 to 48 step 16 {
      %acc = affine.for %k = 0 to 7 iter_args(%a = %zero) -> (vector<16xf32>) {
        %xv = affine.vector_load %x[%w * 3 + %p + %k * 3] : memref<3100xf32>, vector<16xf32>
        %fv = affine.vector_load %f[%k, %p] : memref<7x48xf32>, vector<16xf32>
        %m = arith.mulf %xv, %fv : vector<16xf32>
        %s = arith.addf %a, %m : vector<16xf32>
        affine.yield %s : vector<16xf32>
      }
      affine.vector_store %acc, %y[%w * 3 + %p] : memref<3072xf32>, vector<16xf32>
    }
  }
  memref.dealloc %f : memref<7x48xf32>
  return
}

// FEW-LABEL: func.func @unequal_channels
// FEW: affine.for %{{.*}} = 0 to 1024 step 16 {
// FEW-NEXT: affine.for %{{.*}} = 0 to 48 step 16 {
// FEW-NEXT: affine.for %{{.*}} = 0 to 7
func.func @unequal_channels(%x: memref<3100xf32>, %y: memref<3072xf32>) {
  %zero = arith.constant dense<0.0> : vector<16xf32>
  %g = memref.get_global @taps_unequal : memref<7x3xf32>
  %f = memref.alloc() : memref<7x48xf32>
  affine.for %i = 0 to 7 {
    affine.for %j = 0 to 48 {
      %m = affine.apply affine_map<(d0) -> (d0 mod 3)>(%j)
      %v = affine.load %g[%i, %m] : memref<7x3xf32>
      affine.store %v, %f[%i, %j] : memref<7x48xf32>
    }
  } {pbc.copy}
  affine.for %w = 0 to 1024 step 16 {
    affine.for %p = 0 to 48 step 16 {
      %acc = affine.for %k = 0 to 7 iter_args(%a = %zero) -> (vector<16xf32>) {
        %xv = affine.vector_load %x[%w * 3 + %p + %k * 3] : memref<3100xf32>, vector<16xf32>
        %fv = affine.vector_load %f[%k, %p] : memref<7x48xf32>, vector<16xf32>
        %m = arith.mulf %xv, %fv : vector<16xf32>
        %s = arith.addf %a, %m : vector<16xf32>
        affine.yield %s : vector<16xf32>
      }
      affine.vector_store %acc, %y[%w * 3 + %p] : memref<3072xf32>, vector<16xf32>
    }
  }
  memref.dealloc %f : memref<7x48xf32>
  return
}
