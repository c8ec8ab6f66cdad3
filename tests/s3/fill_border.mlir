// pbc-fill-border: a padded buffer (a fill of all of P, then a copy into its
// interior S) is filled only outside S, after the copy; with pbc-fuse after
// it, the input's producer and the copy become one nest writing S.
// RUN: pbc-opt %s -p 'pbc-fill-border' | FileCheck %s
// RUN: pbc-opt %s -p 'pbc-fill-border' | pbc-opt - -p 'pbc-fuse' | FileCheck %s --check-prefix=FUSE

// The copy first, then the border as four boxes: rows 0 and 5 (all 6
// columns), then columns 0 and 5 of rows 1-4; no nest stores into all of P.
// CHECK-LABEL: func.func @pad
// CHECK-NOT: affine.store %cst,
// CHECK: affine.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<4x4x8xf32, strided
// CHECK: affine.for %{{.*}} = 0 to 1 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 6 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 8 {
// CHECK: affine.for %{{.*}} = 0 to 1 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 6 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 8 {
// CHECK: affine.for %{{.*}} = 0 to 4 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 1 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 8 {
// CHECK: affine.for %{{.*}} = 0 to 4 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 1 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 8 {
// CHECK: arith.addf
// CHECK: return

// The producer (x + 1) writes S directly; its buffer goes.
// FUSE-LABEL: func.func @pad
// FUSE-NOT: memref.alloc() : memref<4x4x8xf32>
// FUSE: arith.addf
// FUSE-NEXT: affine.store %{{.*}}, %{{.*}} : memref<4x4x8xf32, strided
func.func @pad(%x: memref<4x4x8xf32>, %y: memref<4x4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %t = memref.alloc() : memref<4x4x8xf32>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 4 {
      affine.for %c = 0 to 8 {
        %v = affine.load %x[%i, %j, %c] : memref<4x4x8xf32>
        %w = arith.addf %v, %one : f32
        affine.store %w, %t[%i, %j, %c] : memref<4x4x8xf32>
      }
    }
  } {pbc.kind = "pointwise"}
  %p = memref.alloc() : memref<6x6x8xf32>
  affine.for %i = 0 to 6 {
    affine.for %j = 0 to 6 {
      affine.for %c = 0 to 8 {
        affine.store %zero, %p[%i, %j, %c] : memref<6x6x8xf32>
      }
    }
  } {pbc.kind = "pointwise"}
  %s = memref.subview %p[1, 1, 0] [4, 4, 8] [1, 1, 1] : memref<6x6x8xf32> to memref<4x4x8xf32, strided<[48, 8, 1], offset: 56>>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 4 {
      affine.for %c = 0 to 8 {
        %v = affine.load %t[%i, %j, %c] : memref<4x4x8xf32>
        affine.store %v, %s[%i, %j, %c] : memref<4x4x8xf32, strided<[48, 8, 1], offset: 56>>
      }
    }
  } {pbc.kind = "pointwise"}
  memref.dealloc %t : memref<4x4x8xf32>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 4 {
      affine.for %c = 0 to 8 {
        %a = affine.load %p[%i, %j, %c] : memref<6x6x8xf32>
        %b = affine.load %p[%i + 2, %j + 2, %c] : memref<6x6x8xf32>
        %d = arith.addf %a, %b : f32
        affine.store %d, %y[%i, %j, %c] : memref<4x4x8xf32>
      }
    }
  } {pbc.kind = "pointwise"}
  memref.dealloc %p : memref<6x6x8xf32>
  return
}

// The copy covers only half of S's rows: the whole fill stays, first.
// CHECK-LABEL: func.func @partial_copy
// CHECK: affine.for %{{.*}} = 0 to 6 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 6 {
// CHECK: affine.store %{{.*}}, %{{.*}} : memref<4x4x8xf32, strided
func.func @partial_copy(%x: memref<4x4x8xf32>) -> memref<6x6x8xf32> {
  %zero = arith.constant 0.0 : f32
  %p = memref.alloc() : memref<6x6x8xf32>
  affine.for %i = 0 to 6 {
    affine.for %j = 0 to 6 {
      affine.for %c = 0 to 8 {
        affine.store %zero, %p[%i, %j, %c] : memref<6x6x8xf32>
      }
    }
  } {pbc.kind = "pointwise"}
  %s = memref.subview %p[1, 1, 0] [4, 4, 8] [1, 1, 1] : memref<6x6x8xf32> to memref<4x4x8xf32, strided<[48, 8, 1], offset: 56>>
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 4 {
      affine.for %c = 0 to 8 {
        %v = affine.load %x[%i, %j, %c] : memref<4x4x8xf32>
        affine.store %v, %s[%i, %j, %c] : memref<4x4x8xf32, strided<[48, 8, 1], offset: 56>>
      }
    }
  } {pbc.kind = "pointwise"}
  return %p : memref<6x6x8xf32>
}

// P is read between the fill and the copy: nothing changes.
// CHECK-LABEL: func.func @read_between
// CHECK: affine.for %{{.*}} = 0 to 6 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 6 {
// CHECK: affine.load %{{.*}}[0, 0, 0] : memref<6x6x8xf32>
func.func @read_between(%x: memref<4x4x8xf32>, %o: memref<f32>) -> memref<6x6x8xf32> {
  %zero = arith.constant 0.0 : f32
  %p = memref.alloc() : memref<6x6x8xf32>
  affine.for %i = 0 to 6 {
    affine.for %j = 0 to 6 {
      affine.for %c = 0 to 8 {
        affine.store %zero, %p[%i, %j, %c] : memref<6x6x8xf32>
      }
    }
  } {pbc.kind = "pointwise"}
  %r = affine.load %p[0, 0, 0] : memref<6x6x8xf32>
  affine.store %r, %o[] : memref<f32>
  %s = memref.subview %p[1, 1, 0] [4, 4, 8] [1, 1, 1] : memref<6x6x8xf32> to memref<4x4x8xf32, strided<[48, 8, 1], offset: 56>>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 4 {
      affine.for %c = 0 to 8 {
        %v = affine.load %x[%i, %j, %c] : memref<4x4x8xf32>
        affine.store %v, %s[%i, %j, %c] : memref<4x4x8xf32, strided<[48, 8, 1], offset: 56>>
      }
    }
  } {pbc.kind = "pointwise"}
  return %p : memref<6x6x8xf32>
}
