// pbc-parallelize's min-bytes: a nest below min-work that stores at least
// min-bytes (a fill or a copy of a feature map: one vector op per 64 bytes)
// still forks; below both, it stays serial. The zero fill of a padded
// 114x114x32 map (26,000 vector stores, 1.6 MiB) and the copy of a
// 112x112x32 map into its interior (1.6 MiB) are parallel with
// min-bytes=262144, serial without it; a 16x16x32 fill (32 KiB) stays serial.
// RUN: pbc-opt %s -p 'pbc-parallelize{min-trip=2 min-work=131072 min-bytes=262144}' | FileCheck %s
// RUN: pbc-opt %s -p 'pbc-parallelize{min-trip=2 min-work=131072}' | FileCheck %s --check-prefix=WORK

// CHECK-LABEL: func.func @pad_fill_and_copy
// CHECK: affine.parallel (%{{.*}}) = (0) to (114)
// CHECK: affine.parallel (%{{.*}}) = (0) to (112)
// WORK-LABEL: func.func @pad_fill_and_copy
// WORK-NOT: affine.parallel
func.func @pad_fill_and_copy(%x: memref<1x112x112x32xf32>, %p: memref<1x114x114x32xf32>) {
  %z = arith.constant dense<0.0> : vector<16xf32>
  affine.for %n = 0 to 1 {
    affine.for %h = 0 to 114 {
      affine.for %w = 0 to 114 {
        affine.for %c = 0 to 32 step 16 {
          affine.vector_store %z, %p[%n, %h, %w, %c] : memref<1x114x114x32xf32>, vector<16xf32>
        }
      }
    }
  } {pbc.kind = "pointwise"}
  affine.for %n = 0 to 1 {
    affine.for %h = 0 to 112 {
      affine.for %w = 0 to 112 {
        affine.for %c = 0 to 32 step 16 {
          %v = affine.vector_load %x[%n, %h, %w, %c] : memref<1x112x112x32xf32>, vector<16xf32>
          affine.vector_store %v, %p[%n, %h + 1, %w + 1, %c] : memref<1x114x114x32xf32>, vector<16xf32>
        }
      }
    }
  } {pbc.kind = "pointwise"}
  return
}

// CHECK-LABEL: func.func @small_fill
// CHECK-NOT: affine.parallel
// CHECK: return
func.func @small_fill(%p: memref<1x16x16x32xf32>) {
  %z = arith.constant dense<0.0> : vector<16xf32>
  affine.for %n = 0 to 1 {
    affine.for %h = 0 to 16 {
      affine.for %w = 0 to 16 {
        affine.for %c = 0 to 32 step 16 {
          affine.vector_store %z, %p[%n, %h, %w, %c] : memref<1x16x16x32xf32>, vector<16xf32>
        }
      }
    }
  } {pbc.kind = "pointwise"}
  return
}
