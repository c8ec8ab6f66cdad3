// pbc-parallelize makes the outermost parallel loop of each nest an
// affine.parallel, keeps the nest's pbc.kind on it, descends past a
// non-parallel (reduction) outer loop, and skips loops below min-trip.
// RUN: pbc-opt %s -p 'pbc-parallelize{min-trip=4}' | FileCheck %s
// With min-work, a nest executing fewer ops (each op of a loop body, its
// terminator included, once per iteration) stays serial: @matmul executes
// 16 x (32 x (8 x 7 + 1) + 1) = 29200.
// RUN: pbc-opt %s -p 'pbc-parallelize{min-trip=4 min-work=29201}' | FileCheck %s --check-prefix=SMALL
// RUN: pbc-opt %s -p 'pbc-parallelize{min-trip=4 min-work=29200}' | FileCheck %s --check-prefix=BIG
// SMALL-LABEL: func.func @matmul
// SMALL-NOT: affine.parallel
// SMALL: } {pbc.kind = "matmul"}
// BIG-LABEL: func.func @matmul
// BIG: affine.parallel (%{{.*}}) = (0) to (16)
// CHECK-LABEL: func.func @matmul
// CHECK: affine.parallel (%{{.*}}) = (0) to (16)
// CHECK: affine.for
// CHECK: affine.for
// CHECK: } {pbc.kind = "matmul"}
func.func @matmul(%a: memref<16x8xf32>, %b: memref<8x32xf32>, %c: memref<16x32xf32>) {
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 32 {
      affine.for %k = 0 to 8 {
        %x = affine.load %a[%i, %k] : memref<16x8xf32>
        %y = affine.load %b[%k, %j] : memref<8x32xf32>
        %z = affine.load %c[%i, %j] : memref<16x32xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<16x32xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// The outer loop carries a dependence (column sums): the inner one is parallel.
// CHECK-LABEL: func.func @colsum
// CHECK: affine.for %{{.*}} = 0 to 16 {
// CHECK-NEXT: affine.parallel (%{{.*}}) = (0) to (32)
// CHECK: } {pbc.kind = "reduction"}
func.func @colsum(%a: memref<16x32xf32>, %o: memref<32xf32>) {
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 32 {
      %x = affine.load %a[%i, %j] : memref<16x32xf32>
      %s = affine.load %o[%j] : memref<32xf32>
      %t = arith.addf %s, %x : f32
      affine.store %t, %o[%j] : memref<32xf32>
    }
  } {pbc.kind = "reduction"}
  return
}
// A sequential loop holding two nests (pbc-absorb-fill peels a GEMM's first
// kc block: jc { kc = first; kc = rest }): each nest is descended alone.
// CHECK-LABEL: func.func @siblings
// CHECK: affine.for %{{.*}} = 0 to 2 {
// CHECK-NEXT: affine.parallel (%{{.*}}) = (0) to (16) {
// CHECK: affine.for %{{.*}} = 0 to 3 {
// CHECK-NEXT: affine.parallel (%{{.*}}) = (0) to (16) {
// CHECK: } {pbc.kind = "pointwise"}
func.func @siblings(%a: memref<16x32xf32>, %c: memref<16x32xf32>) {
  affine.for %t = 0 to 2 {
    affine.for %i = 0 to 16 {
      affine.for %j = 0 to 32 {
        %x = affine.load %a[%i, %j] : memref<16x32xf32>
        %s = affine.load %c[%i, %j] : memref<16x32xf32>
        %r = arith.addf %s, %x : f32
        affine.store %r, %c[%i, %j] : memref<16x32xf32>
      }
    }
    affine.for %u = 0 to 3 {
      affine.for %i = 0 to 16 {
        affine.for %j = 0 to 32 {
          %s = affine.load %c[%i, %j] : memref<16x32xf32>
          %r = arith.mulf %s, %s : f32
          affine.store %r, %c[%i, %j] : memref<16x32xf32>
        }
      }
    }
  } {pbc.kind = "pointwise"}
  return
}
// Nine such nests: every one is parallelized (the count is not capped).
// CHECK-LABEL: func.func @nine_siblings
// CHECK: affine.for %{{.*}} = 0 to 2 {
// CHECK-COUNT-9: affine.parallel (%{{.*}}) = (0) to (16) {
// CHECK-NOT: affine.for %{{.*}} = 0 to 16
// CHECK: } {pbc.kind = "pointwise"}
func.func @nine_siblings(%c: memref<16x32xf32>) {
  affine.for %t = 0 to 2 {
    affine.for %i0 = 0 to 16 {
      affine.for %j0 = 0 to 32 {
        %s0 = affine.load %c[%i0, %j0] : memref<16x32xf32>
        %r0 = arith.mulf %s0, %s0 : f32
        affine.store %r0, %c[%i0, %j0] : memref<16x32xf32>
      }
    }
    affine.for %i1 = 0 to 16 {
      affine.for %j1 = 0 to 32 {
        %s1 = affine.load %c[%i1, %j1] : memref<16x32xf32>
        %r1 = arith.mulf %s1, %s1 : f32
        affine.store %r1, %c[%i1, %j1] : memref<16x32xf32>
      }
    }
    affine.for %i2 = 0 to 16 {
      affine.for %j2 = 0 to 32 {
        %s2 = affine.load %c[%i2, %j2] : memref<16x32xf32>
        %r2 = arith.mulf %s2, %s2 : f32
        affine.store %r2, %c[%i2, %j2] : memref<16x32xf32>
      }
    }
    affine.for %i3 = 0 to 16 {
      affine.for %j3 = 0 to 32 {
        %s3 = affine.load %c[%i3, %j3] : memref<16x32xf32>
        %r3 = arith.mulf %s3, %s3 : f32
        affine.store %r3, %c[%i3, %j3] : memref<16x32xf32>
      }
    }
    affine.for %i4 = 0 to 16 {
      affine.for %j4 = 0 to 32 {
        %s4 = affine.load %c[%i4, %j4] : memref<16x32xf32>
        %r4 = arith.mulf %s4, %s4 : f32
        affine.store %r4, %c[%i4, %j4] : memref<16x32xf32>
      }
    }
    affine.for %i5 = 0 to 16 {
      affine.for %j5 = 0 to 32 {
        %s5 = affine.load %c[%i5, %j5] : memref<16x32xf32>
        %r5 = arith.mulf %s5, %s5 : f32
        affine.store %r5, %c[%i5, %j5] : memref<16x32xf32>
      }
    }
    affine.for %i6 = 0 to 16 {
      affine.for %j6 = 0 to 32 {
        %s6 = affine.load %c[%i6, %j6] : memref<16x32xf32>
        %r6 = arith.mulf %s6, %s6 : f32
        affine.store %r6, %c[%i6, %j6] : memref<16x32xf32>
      }
    }
    affine.for %i7 = 0 to 16 {
      affine.for %j7 = 0 to 32 {
        %s7 = affine.load %c[%i7, %j7] : memref<16x32xf32>
        %r7 = arith.mulf %s7, %s7 : f32
        affine.store %r7, %c[%i7, %j7] : memref<16x32xf32>
      }
    }
    affine.for %i8 = 0 to 16 {
      affine.for %j8 = 0 to 32 {
        %s8 = affine.load %c[%i8, %j8] : memref<16x32xf32>
        %r8 = arith.mulf %s8, %s8 : f32
        affine.store %r8, %c[%i8, %j8] : memref<16x32xf32>
      }
    }
  } {pbc.kind = "pointwise"}
  return
}
// Too few iterations to be worth a parallel region.
// CHECK-LABEL: func.func @tiny
// CHECK-NOT: affine.parallel
// CHECK: return
func.func @tiny(%a: memref<2xf32>) {
  affine.for %i = 0 to 2 {
    %x = affine.load %a[%i] : memref<2xf32>
    %y = arith.addf %x, %x : f32
    affine.store %y, %a[%i] : memref<2xf32>
  } {pbc.kind = "pointwise"}
  return
}
// A copy nest outside every parallel loop (pbc-pack's B block, inside the
// sequential kc loop) is spread over the cores when it copies >= 16K elements
// (192 x 48 vectors of 16 here); a small one (16 x 4 x 16 elements) stays
// serial.
// CHECK-LABEL: func.func @serial_copies
// CHECK: affine.for %{{.*}} = 0 to 2 {
// CHECK-NEXT: affine.parallel (%{{.*}}) = (0) to (192) {
// CHECK: } {pbc.copy}
// CHECK-NEXT: affine.for %{{.*}} = 0 to 16 {
// CHECK: } {pbc.copy}
func.func @serial_copies(%b: memref<192x768xf32>, %p: memref<192x768xf32>, %s: memref<16x64xf32>, %q: memref<16x64xf32>) {
  affine.for %kc = 0 to 2 {
    affine.for %k = 0 to 192 {
      affine.for %j = 0 to 768 step 16 {
        %v = affine.vector_load %b[%k, %j] : memref<192x768xf32>, vector<16xf32>
        affine.vector_store %v, %p[%k, %j] : memref<192x768xf32>, vector<16xf32>
      }
    } {pbc.copy}
    affine.for %k = 0 to 16 {
      affine.for %j = 0 to 64 step 16 {
        %v = affine.vector_load %s[%k, %j] : memref<16x64xf32>, vector<16xf32>
        affine.vector_store %v, %q[%k, %j] : memref<16x64xf32>, vector<16xf32>
      }
    } {pbc.copy}
  }
  return
}
// A copy nest whose stores MLIR's dependence test can't separate (a B block
// stored panel by panel, its row in floordiv and mod) is still parallel:
// a copy nest writes each element of its buffer in one iteration, and reads
// only other memrefs. 48 x 24 vectors of 16 elements.
// CHECK-LABEL: func.func @panel_copy
// CHECK: affine.for %{{.*}} = 0 to 2 {
// CHECK-NEXT: affine.parallel (%{{.*}}) = (0) to (768) step (16) {
// CHECK: } {pbc.copy}
func.func @panel_copy(%b: memref<768x384xf32>, %p: memref<16x384x48xf32>) {
  affine.for %kc = 0 to 2 {
    affine.for %j = 0 to 768 step 16 {
      affine.for %k = 0 to 384 step 16 {
        %v = affine.vector_load %b[%j, %k] : memref<768x384xf32>, vector<16xf32>
        affine.vector_store %v, %p[%j floordiv 48, %k, %j mod 48] : memref<16x384x48xf32>, vector<16xf32>
      }
    } {pbc.copy}
  }
  return
}
// A convolution's weight block is copied as kh, kw, c, f (once per output
// channel block, the outer loop here): an outer loop of 3 iterations would
// leave one core twice the other's share (1 iteration, a 1x1 kernel: the
// copy ran on one core). The first loop of the copy's band that the cores
// split evenly (c: 128) moves outermost and runs in parallel.
// CHECK-LABEL: func.func @conv_weight_copy
// CHECK: affine.for %{{.*}} = 0 to 2 {
// CHECK-NEXT: affine.parallel (%[[C:.*]]) = (0) to (128) {
// CHECK-NEXT: affine.for %[[KH:.*]] = 0 to 3 {
// CHECK-NEXT: affine.for %[[KW:.*]] = 0 to 3 {
// CHECK-NEXT: affine.for %[[F:.*]] = 0 to 64 step 16 {
// CHECK-NEXT: affine.vector_load %arg0[%[[KH]], %[[KW]], %[[C]], %[[F]]]
// CHECK: } {pbc.copy}
func.func @conv_weight_copy(%w: memref<3x3x128x64xf32>, %p: memref<2x3x3x128x32xf32>) {
  affine.for %t = 0 to 2 {
    affine.for %kh = 0 to 3 {
      affine.for %kw = 0 to 3 {
        affine.for %c = 0 to 128 {
          affine.for %f = 0 to 64 step 16 {
            %v = affine.vector_load %w[%kh, %kw, %c, %f] : memref<3x3x128x64xf32>, vector<16xf32>
            affine.vector_store %v, %p[%f floordiv 32, %kh, %kw, %c, %f mod 32] : memref<2x3x3x128x32xf32>, vector<16xf32>
          }
        }
      }
    } {pbc.copy}
  }
  return
}
// A root copy nest (pbc-interleave's replicas) whose outer loop has one
// iteration, too little work for the nests' rule but enough for copies':
// its next loop moves outermost and runs in parallel, and the nest's kind
// moves with it to the new root (the S3 contract: every root nest keeps its
// kind).
// RUN: pbc-opt %s -p 'pbc-parallelize{min-trip=2 min-work=131072 min-bytes=262144}' | FileCheck %s --check-prefix=COPY
// COPY-LABEL: func.func @root_copy_one_outer_iteration
// COPY: affine.parallel (%{{.*}}) = (0) to (32) {
// COPY-NEXT: affine.for %{{.*}} = 0 to 1 {
// COPY: } {pbc.copy}
// COPY-NEXT: } {pbc.copy, pbc.kind = "pointwise"}
func.func @root_copy_one_outer_iteration(%x: memref<1x32x100xf32>, %p: memref<1x32x800xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %c = 0 to 32 {
      affine.for %e = 0 to 800 {
        %v = affine.load %x[%n, %c, %e mod 100] : memref<1x32x100xf32>
        affine.store %v, %p[%n, %c, %e] : memref<1x32x800xf32>
      }
    }
  } {pbc.copy, pbc.kind = "pointwise"}
  return
}
