// pbc-pack-once: the tiles pbc-pack copies from an argument marked
// pbc.invariant (B here, a weight) live in a global with a slot per
// iteration of the loop the copy depends on (kc: 4 tiles of 64 rows), the
// buffer a subview of it; the copy runs under scf.if when B's address
// differs from the one recorded after the nest (the first call, or another
// B). A (not marked) is still copied on every call, into a fresh buffer.
// Without the mark (@unmarked) nothing changes.
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=65536 l3-bytes=33554432};pbc-pack{cache-line-bytes=64};pbc-pack-once' | FileCheck %s
// The globals' names clash with no symbol the program has (@pbc_packed_0
// is the program's own constant here).
// CHECK-DAG: memref.global "private" constant @pbc_packed_0 : memref<1xf32> = dense<1.000000e+00>
// CHECK-DAG: memref.global "private" @pbc_packed_source{{[_0-9]*}} : memref<1xi64> = dense<0>
// CHECK-DAG: memref.global "private" @[[SLOTS:pbc_packed(_[0-9]+)?]] : memref<4x64x80xf32> = uninitialized
// The globals are read first in the function, outside the nest (which
// pbc-outline-nests then gives them as arguments: nests that differ only in
// whose tiles they keep share one function).
// CHECK-LABEL: func.func @matmul
// CHECK-NEXT: %[[S:.*]] = memref.get_global @[[SRC:pbc_packed_source[_0-9]*]] : memref<1xi64>
// CHECK-NEXT: %[[SG:.*]] = memref.get_global @[[SRC]] : memref<1xi64>
// CHECK-NEXT: %[[G:.*]] = memref.get_global @[[SLOTS]]
// CHECK: affine.for %[[KC:.*]] = 0 to 256 step 64 {
// CHECK-NOT: memref.get_global
// CHECK: %[[I:.*]] = affine.apply #{{.*}}(%[[KC]])
// CHECK: %[[B:.*]] = memref.subview %[[G]][%[[I]], 0, 0] [1, 64, 80] [1, 1, 1]
// CHECK: %[[R:.*]] = memref.load %[[SG]]
// CHECK: %[[P:.*]] = memref.extract_aligned_pointer_as_index %arg1
// CHECK: %[[PI:.*]] = arith.index_cast %[[P]]
// CHECK: %[[NE:.*]] = arith.cmpi ne, %[[PI]], %[[R]]
// CHECK: scf.if %[[NE]] {
// CHECK: affine.load %arg1
// CHECK-NEXT: affine.store %{{.*}}, %[[B]]
// CHECK: } {pbc.copy}
// CHECK-NEXT: }
// CHECK: %[[A:.*]] = memref.alloc() : memref<32x80xf32>
// CHECK: affine.load %arg0
// CHECK-NEXT: affine.store %{{.*}}, %[[A]]
// CHECK: } {pbc.copy}
// CHECK: affine.load %[[A]]
// CHECK-NEXT: affine.load %[[B]]
// CHECK: memref.dealloc %[[A]]
// CHECK-NOT: memref.dealloc
// CHECK: } {pbc.kind = "matmul"
// CHECK-NEXT: %[[P2:.*]] = memref.extract_aligned_pointer_as_index %arg1
// CHECK-NEXT: %[[PI2:.*]] = arith.index_cast %[[P2]]
// CHECK: memref.store %[[PI2]], %[[S]][
// CHECK-LABEL: func.func @unmarked
// CHECK-NOT: memref.get_global
// CHECK-NOT: scf.if
// CHECK: memref.alloc() : memref<64x80xf32>
memref.global "private" constant @pbc_packed_0 : memref<1xf32> = dense<1.0>

func.func @matmul(%a: memref<64x256xf32>, %b: memref<256x64xf32> {pbc.invariant}, %c: memref<64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      affine.for %k = 0 to 256 {
        %x = affine.load %a[%i, %k] : memref<64x256xf32>
        %y = affine.load %b[%k, %j] : memref<256x64xf32>
        %z = affine.load %c[%i, %j] : memref<64x64xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<64x64xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}

func.func @unmarked(%a: memref<64x256xf32>, %b: memref<256x64xf32>, %c: memref<64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      affine.for %k = 0 to 256 {
        %x = affine.load %a[%i, %k] : memref<64x256xf32>
        %y = affine.load %b[%k, %j] : memref<256x64xf32>
        %z = affine.load %c[%i, %j] : memref<64x64xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<64x64xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}

// A nest versioned under scf.if (pbc-streaming-stores' alignment test): the
// address is recorded in the branch that packed, after its loop, so the
// other version's slots are not taken for filled.
// CHECK-LABEL: func.func @versioned
// CHECK: scf.if %arg2 {
// CHECK: affine.for
// CHECK: memref.subview
// CHECK: scf.if
// CHECK: } {pbc.copy}
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<1xi64>
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @versioned(%b: memref<256x64xf32> {pbc.invariant}, %c: memref<4x64x64xf32>, %flag: i1) {
  scf.if %flag {
    affine.for %kc = 0 to 256 step 64 {
      %buf = memref.alloc() : memref<64x64xf32>
      affine.for %k = 0 to 64 {
        affine.for %j = 0 to 64 {
          %v = affine.load %b[%kc + %k, %j] : memref<256x64xf32>
          affine.store %v, %buf[%k, %j] : memref<64x64xf32>
        }
      } {pbc.copy}
      affine.for %k = 0 to 64 {
        affine.for %j = 0 to 64 {
          %v = affine.load %buf[%k, %j] : memref<64x64xf32>
          affine.store %v, %c[%kc floordiv 64, %k, %j] : memref<4x64x64xf32>
        }
      }
      memref.dealloc %buf : memref<64x64xf32>
    }
  }
  return
}

// Loops above the scf.if that holds the nest: a record after the inner loop
// would come before other iterations of the outer one had packed their
// slots; left alone.
// CHECK-LABEL: func.func @loop_above_branch
// CHECK-NOT: memref.get_global
// CHECK: memref.alloc() : memref<64x64xf32>
func.func @loop_above_branch(%b: memref<256x64xf32> {pbc.invariant}, %c: memref<2x4x64x64xf32>, %flag: i1) {
  affine.for %r = 0 to 2 {
    scf.if %flag {
      affine.for %kc = 0 to 256 step 64 {
        %buf = memref.alloc() : memref<64x64xf32>
        affine.for %k = 0 to 64 {
          affine.for %j = 0 to 64 {
            %v = affine.load %b[%kc + %k, %j] : memref<256x64xf32>
            affine.store %v, %buf[%k, %j] : memref<64x64xf32>
          }
        } {pbc.copy}
        affine.for %k = 0 to 64 {
          affine.for %j = 0 to 64 {
            %v = affine.load %buf[%k, %j] : memref<64x64xf32>
            affine.store %v, %c[%r, %kc floordiv 64, %k, %j] : memref<2x4x64x64xf32>
          }
        }
        memref.dealloc %buf : memref<64x64xf32>
      }
    }
  }
  return
}
