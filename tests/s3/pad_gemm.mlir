// pbc-pad-gemm: a GEMM whose N is not a multiple of the vector lanes (16 at
// 512 bits) or whose M has no divisor in 4..16 runs on padded buffers: C's
// fill fills C' (40 x 64) whole, B' and A' are copies with zeros in the
// padding (B's 11 columns past 53, A's 3 rows past 37), the band runs over
// 40 x 64 x 29, and C' is copied back. A GEMM whose tiles divide, and a
// nest whose subscripts are not plain loop indices, are left alone.
// RUN: pbc-opt %s -p 'pbc-pad-gemm{vector-bits=512}' | FileCheck %s
// CHECK-LABEL: func.func @odd
// CHECK: %[[C:.*]] = memref.alloc() {{.*}} : memref<40x64xf32>
// CHECK-NEXT: affine.for %{{.*}} = 0 to 40 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 64 {
// CHECK-NEXT: affine.store %cst, %[[C]]
// CHECK: %[[B:.*]] = memref.alloc() {{.*}} : memref<29x64xf32>
// CHECK: affine.for %{{.*}} = 0 to 29 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 53 {
// CHECK-NEXT: affine.load %arg1
// CHECK-NEXT: affine.store %{{.*}}, %[[B]]
// CHECK: affine.for %{{.*}} = 0 to 29 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 11 {
// CHECK: arith.constant 0.0
// CHECK-NEXT: affine.store %{{.*}}, %[[B]]
// CHECK: %[[A:.*]] = memref.alloc() {{.*}} : memref<40x29xf32>
// CHECK: affine.for %{{.*}} = 0 to 37 {
// CHECK: affine.for %{{.*}} = 0 to 3 {
// CHECK: affine.store %{{.*}}, %[[A]]
// CHECK: affine.for %{{.*}} = 0 to 40 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 64 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 29 {
// CHECK-NEXT: affine.load %[[A]]
// CHECK-NEXT: affine.load %[[B]]
// CHECK-NEXT: affine.load %[[C]]
// CHECK: affine.store %{{.*}}, %[[C]]
// CHECK: } {pbc.kind = "matmul"}
// CHECK-NEXT: affine.for %{{.*}} = 0 to 37 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 53 {
// CHECK-NEXT: affine.load %[[C]]
// CHECK-NEXT: affine.store %{{.*}}, %arg2
// CHECK: memref.dealloc %[[C]]
// CHECK-LABEL: func.func @divides
// CHECK-NOT: memref.alloc
// CHECK-LABEL: func.func @not_plain
// CHECK-NOT: memref.alloc
// CHECK: return
// A buffer read as C[j, i] and written as C[i, j]: no one padded shape.
// CHECK-LABEL: func.func @transposed_use
// CHECK-NOT: memref.alloc
// CHECK: return
func.func @odd(%a: memref<37x29xf32>, %b: memref<29x53xf32>, %c: memref<37x53xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 37 {
    affine.for %j = 0 to 53 {
      affine.store %zero, %c[%i, %j] : memref<37x53xf32>
    }
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 37 {
    affine.for %j = 0 to 53 {
      affine.for %k = 0 to 29 {
        %x = affine.load %a[%i, %k] : memref<37x29xf32>
        %y = affine.load %b[%k, %j] : memref<29x53xf32>
        %z = affine.load %c[%i, %j] : memref<37x53xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<37x53xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @divides(%a: memref<40x29xf32>, %b: memref<29x64xf32>, %c: memref<40x64xf32>) {
  affine.for %i = 0 to 40 {
    affine.for %j = 0 to 64 {
      affine.for %k = 0 to 29 {
        %x = affine.load %a[%i, %k] : memref<40x29xf32>
        %y = affine.load %b[%k, %j] : memref<29x64xf32>
        %z = affine.load %c[%i, %j] : memref<40x64xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<40x64xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @not_plain(%a: memref<37x58xf32>, %b: memref<29x53xf32>, %c: memref<37x53xf32>) {
  affine.for %i = 0 to 37 {
    affine.for %j = 0 to 53 {
      affine.for %k = 0 to 29 {
        %x = affine.load %a[%i, %k + %k] : memref<37x58xf32>
        %y = affine.load %b[%k, %j] : memref<29x53xf32>
        %z = affine.load %c[%i, %j] : memref<37x53xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<37x53xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}

func.func @transposed_use(%a: memref<37x29xf32>, %b: memref<29x37xf32>, %c: memref<37x37xf32>) {
  affine.for %i = 0 to 37 {
    affine.for %j = 0 to 37 {
      affine.for %k = 0 to 29 {
        %x = affine.load %a[%i, %k] : memref<37x29xf32>
        %y = affine.load %b[%k, %j] : memref<29x37xf32>
        %z = affine.load %c[%j, %i] : memref<37x37xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<37x37xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// No fill before the GEMM (C += A.B on the caller's C): C' starts as a copy
// of C, and is copied back.
// CHECK-LABEL: func.func @accumulate
// CHECK: %[[C:.*]] = memref.alloc() {{.*}} : memref<40x64xf32>
// CHECK-NEXT: affine.for %{{.*}} = 0 to 37 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 53 {
// CHECK-NEXT: affine.load %arg2
// CHECK-NEXT: affine.store %{{.*}}, %[[C]]
// CHECK: affine.load %[[C]]
// CHECK: affine.store %{{.*}}, %[[C]]
// CHECK: } {pbc.kind = "matmul"}
// CHECK-NEXT: affine.for %{{.*}} = 0 to 37 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 53 {
// CHECK-NEXT: affine.load %[[C]]
// CHECK-NEXT: affine.store %{{.*}}, %arg2
func.func @accumulate(%a: memref<37x29xf32>, %b: memref<29x53xf32>, %c: memref<37x53xf32>) {
  affine.for %i = 0 to 37 {
    affine.for %j = 0 to 53 {
      affine.for %k = 0 to 29 {
        %x = affine.load %a[%i, %k] : memref<37x29xf32>
        %y = affine.load %b[%k, %j] : memref<29x53xf32>
        %z = affine.load %c[%i, %j] : memref<37x53xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<37x53xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}

// Skinny GEMMs (M <= 8: pbc-tile reads B in place) keep their rows (3,
// no divisor in 4..16) and pad no copy of B. Their whole vectors of
// columns run in place; 40 = 32 + 8: the last 8 columns run in place too,
// as a second nest over [32, 40) (8-lane vectors); 37 = 32 + 5: the last 5
// on copies padded to one vector: C's 5 columns (and zeros) into a 3 x 16
// C', B's into a 29 x 16 B' with zeros, copied back after. B read along K
// (dot products; K = 32 a multiple of the lanes) needs no whole vectors of
// columns: left alone.
// CHECK-LABEL: func.func @skinny_in_place
// CHECK-NOT: memref.alloc
// CHECK: %[[C32:.*]] = arith.constant 32 : index
// CHECK-NEXT: affine.for %{{.*}} = 0 to 3 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 32 {
// CHECK: } {pbc.kind = "matmul"}
// CHECK-NEXT: affine.for %{{.*}} = 0 to 3 {
// CHECK-NEXT: affine.for %[[J:.*]] = 0 to 8 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 29 {
// CHECK-NEXT: affine.apply #{{.*}}(%[[C32]], %[[J]])
// CHECK: } {pbc.kind = "matmul"}
// CHECK-NEXT: return
// CHECK-LABEL: func.func @skinny_padded
// CHECK: %[[CP:.*]] = memref.alloc() {{.*}} : memref<3x16xf32>
// CHECK-NEXT: affine.for %{{.*}} = 0 to 3 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 5 {
// CHECK: affine.load %arg2
// CHECK-NEXT: affine.store %{{.*}}, %[[CP]]
// CHECK: %[[BP:.*]] = memref.alloc() {{.*}} : memref<29x16xf32>
// CHECK-NEXT: affine.for %{{.*}} = 0 to 29 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 5 {
// CHECK: affine.load %arg1
// CHECK-NEXT: affine.store %{{.*}}, %[[BP]]
// CHECK: affine.for %{{.*}} = 0 to 29 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 11 {
// CHECK: arith.constant 0.0
// CHECK-NEXT: affine.store %{{.*}}, %[[BP]]
// CHECK: affine.for %{{.*}} = 0 to 3 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 32 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 29 {
// CHECK-NEXT: affine.load %arg0
// CHECK-NEXT: affine.load %arg1
// CHECK: } {pbc.kind = "matmul"}
// CHECK-NEXT: affine.for %{{.*}} = 0 to 3 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 16 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 29 {
// CHECK-NEXT: affine.load %arg0
// CHECK-NEXT: affine.load %[[BP]]
// CHECK-NEXT: affine.load %[[CP]]
// CHECK: } {pbc.kind = "matmul"}
// CHECK-NEXT: affine.for %{{.*}} = 0 to 3 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 5 {
// CHECK: affine.load %[[CP]]
// CHECK-NEXT: affine.store %{{.*}}, %arg2
// CHECK-LABEL: func.func @skinny_dot
// CHECK-NOT: memref.alloc
// CHECK: affine.for %{{.*}} = 0 to 37 {
// CHECK-NOT: memref.alloc
// CHECK: return
func.func @skinny_in_place(%a: memref<3x29xf32>, %b: memref<29x40xf32>, %c: memref<3x40xf32>) {
  affine.for %i = 0 to 3 {
    affine.for %j = 0 to 40 {
      affine.for %k = 0 to 29 {
        %x = affine.load %a[%i, %k] : memref<3x29xf32>
        %y = affine.load %b[%k, %j] : memref<29x40xf32>
        %z = affine.load %c[%i, %j] : memref<3x40xf32>
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %z, %m : f32
        affine.store %s, %c[%i, %j] : memref<3x40xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @skinny_padded(%a: memref<3x29xf32>, %b: memref<29x37xf32>, %c: memref<3x37xf32>) {
  affine.for %i = 0 to 3 {
    affine.for %j = 0 to 37 {
      affine.for %k = 0 to 29 {
        %x = affine.load %a[%i, %k] : memref<3x29xf32>
        %y = affine.load %b[%k, %j] : memref<29x37xf32>
        %z = affine.load %c[%i, %j] : memref<3x37xf32>
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %z, %m : f32
        affine.store %s, %c[%i, %j] : memref<3x37xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @skinny_dot(%a: memref<3x32xf32>, %b: memref<37x32xf32>, %c: memref<3x37xf32>) {
  affine.for %i = 0 to 3 {
    affine.for %j = 0 to 37 {
      affine.for %k = 0 to 32 {
        %x = affine.load %a[%i, %k] : memref<3x32xf32>
        %y = affine.load %b[%j, %k] : memref<37x32xf32>
        %z = affine.load %c[%i, %j] : memref<3x37xf32>
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %z, %m : f32
        affine.store %s, %c[%i, %j] : memref<3x37xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// 16 rows are skinny too (pbcSkinnyKnRowTile): only the last partial vector
// of columns is padded (C' 16 x 16, not C padded to 16 x 48).
// CHECK-LABEL: func.func @skinny_rows16_padded
// CHECK: memref.alloc() {{.*}} : memref<16x16xf32>
// CHECK-NOT: memref<16x48xf32>
// CHECK: return
func.func @skinny_rows16_padded(%a: memref<16x29xf32>, %b: memref<29x37xf32>, %c: memref<16x37xf32>) {
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 37 {
      affine.for %k = 0 to 29 {
        %x = affine.load %a[%i, %k] : memref<16x29xf32>
        %y = affine.load %b[%k, %j] : memref<29x37xf32>
        %z = affine.load %c[%i, %j] : memref<16x37xf32>
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %z, %m : f32
        affine.store %s, %c[%i, %j] : memref<16x37xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}

// A batch of GEMMs (batch_matmul: attention's scores Q.K^T at 197 keys)
// pads the same way with the batch loop kept: C' 3 x 40 x 64 (filled
// whole), B' and A' with zeros below and right of the copies, the band over
// 3 x 40 x 64 x 29, and C' copied back. A batch loop that is not every
// buffer's first dimension is left alone.
// CHECK-LABEL: func.func @batched
// CHECK: %[[C:.*]] = memref.alloc() {{.*}} : memref<3x40x64xf32>
// CHECK-NEXT: affine.for %{{.*}} = 0 to 3 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 40 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 64 {
// CHECK-NEXT: affine.store %cst, %[[C]]
// CHECK: %[[B:.*]] = memref.alloc() {{.*}} : memref<3x29x64xf32>
// CHECK: affine.for %{{.*}} = 0 to 3 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 29 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 53 {
// CHECK-NEXT: affine.load %arg1
// CHECK-NEXT: affine.store %{{.*}}, %[[B]]
// CHECK: affine.for %{{.*}} = 0 to 3 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 29 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 11 {
// CHECK: arith.constant 0.0
// CHECK-NEXT: affine.store %{{.*}}, %[[B]]
// CHECK: %[[A:.*]] = memref.alloc() {{.*}} : memref<3x40x29xf32>
// CHECK: affine.for %{{.*}} = 0 to 3 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 37 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 29 {
// CHECK-NEXT: affine.load %arg0
// CHECK: affine.for %{{.*}} = 0 to 3 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 3 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 29 {
// CHECK: affine.store %{{.*}}, %[[A]]
// CHECK: affine.for %{{.*}} = 0 to 3 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 40 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 64 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 29 {
// CHECK-NEXT: affine.load %[[A]]
// CHECK-NEXT: affine.load %[[B]]
// CHECK-NEXT: affine.load %[[C]]
// CHECK: affine.store %{{.*}}, %[[C]]
// CHECK: } {pbc.kind = "matmul"}
// CHECK-NEXT: affine.for %{{.*}} = 0 to 3 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 37 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 53 {
// CHECK-NEXT: affine.load %[[C]]
// CHECK-NEXT: affine.store %{{.*}}, %arg2
// CHECK: memref.dealloc %[[C]]
// CHECK-LABEL: func.func @batch_not_first
// CHECK-NOT: memref.alloc
// CHECK: return
func.func @batched(%a: memref<3x37x29xf32>, %b: memref<3x29x53xf32>, %c: memref<3x37x53xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %n = 0 to 3 {
    affine.for %i = 0 to 37 {
      affine.for %j = 0 to 53 {
        affine.store %zero, %c[%n, %i, %j] : memref<3x37x53xf32>
      }
    }
  } {pbc.kind = "pointwise"}
  affine.for %n = 0 to 3 {
    affine.for %i = 0 to 37 {
      affine.for %j = 0 to 53 {
        affine.for %k = 0 to 29 {
          %x = affine.load %a[%n, %i, %k] : memref<3x37x29xf32>
          %y = affine.load %b[%n, %k, %j] : memref<3x29x53xf32>
          %z = affine.load %c[%n, %i, %j] : memref<3x37x53xf32>
          %p = arith.mulf %x, %y : f32
          %s = arith.addf %z, %p : f32
          affine.store %s, %c[%n, %i, %j] : memref<3x37x53xf32>
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @batch_not_first(%a: memref<37x3x29xf32>, %b: memref<3x29x53xf32>, %c: memref<3x37x53xf32>) {
  affine.for %n = 0 to 3 {
    affine.for %i = 0 to 37 {
      affine.for %j = 0 to 53 {
        affine.for %k = 0 to 29 {
          %x = affine.load %a[%i, %n, %k] : memref<37x3x29xf32>
          %y = affine.load %b[%n, %k, %j] : memref<3x29x53xf32>
          %z = affine.load %c[%n, %i, %j] : memref<3x37x53xf32>
          %p = arith.mulf %x, %y : f32
          %s = arith.addf %z, %p : f32
          affine.store %s, %c[%n, %i, %j] : memref<3x37x53xf32>
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}
