// pbc-interleave: a 3-channel innermost loop can't fill vectors, but the
// (w, c) pairs are contiguous: w steps by 16, c runs over 48 = 16 pixels x 3
// channels, the image and the output are read through collapsed views at
// 3*w + c, the per-channel filter from a copy repeating its 3 values 16 times,
// and c is marked for pbc-vectorize, which then makes it one vector loop with
// the taps inside. Loops that don't fit (a last dimension other than the
// channel count, a width not a multiple of 16) are left alone.
// RUN: pbc-opt %s -p 'pbc-interleave{vector-bits=512}' | FileCheck %s
// The copy's index: g mod 3.
// CHECK: #{{.*}} = affine_map<(d0) -> (d0 mod 3)>
// RUN: pbc-opt %s -p 'pbc-interleave{vector-bits=512};pbc-vectorize{vector-bits=512}' | FileCheck %s --check-prefix=VEC
// The filter's copy (240 elements) is too small to fork for: it stays serial.
// RUN: pbc-opt %s -p 'pbc-interleave{vector-bits=512};pbc-parallelize{min-trip=2}' | FileCheck %s --check-prefix=PAR
// PAR-LABEL: func.func @taps
// PAR: memref.alloc() {{.*}} : memref<5x48xf32>
// PAR-NEXT: affine.for
// PAR: } {pbc.copy, pbc.kind = "pointwise"}
// PAR: affine.parallel
// CHECK-LABEL: func.func @taps
// CHECK: %[[X:.*]] = memref.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] : memref<1x4x36x3xf32> into memref<1x4x108xf32>
// CHECK: %[[F:.*]] = memref.alloc() {{.*}} : memref<5x48xf32>
// CHECK: affine.apply #{{.*}}(%[[G:.*]])
// CHECK: affine.load %arg1
// CHECK: } {pbc.copy, pbc.kind = "pointwise"}
// CHECK: %[[Y:.*]] = memref.collapse_shape %arg2 {{\[}}[0], [1], [2, 3]] : memref<1x4x32x3xf32> into memref<1x4x96xf32>
// CHECK: affine.for %[[W:.*]] = 0 to 32 step 16 {
// CHECK-NEXT: affine.for %[[C:.*]] = 0 to 48 {
// CHECK: affine.load %[[X]][%{{.*}}, %{{.*}}, (%[[W]] + %{{.*}}) * 3 + %[[C]]]
// CHECK: affine.load %[[F]][%{{.*}}, %[[C]]]
// CHECK: affine.store %{{.*}}, %[[Y]][%{{.*}}, %{{.*}}, %[[W]] * 3 + %[[C]]]
// CHECK: } {pbc.vectorize}
// CHECK: memref.dealloc %[[F]]
// VEC-LABEL: func.func @taps
// VEC: affine.for %{{.*}} = 0 to 48 step 16 {
// VEC: affine.vector_load %{{.*}} : memref<1x4x108xf32>, vector<16xf32>
// VEC: affine.vector_load %{{.*}} : memref<5x48xf32>, vector<16xf32>
// VEC: affine.vector_store %{{.*}} : memref<1x4x96xf32>, vector<16xf32>
func.func @taps(%x: memref<1x4x36x3xf32>, %f: memref<5x3xf32>, %y: memref<1x4x32x3xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %h = 0 to 4 {
      affine.for %w = 0 to 32 {
        affine.for %c = 0 to 3 {
          affine.for %k = 0 to 5 {
            %a = affine.load %x[%n, %h, %w + %k, %c] : memref<1x4x36x3xf32>
            %b = affine.load %f[%k, %c] : memref<5x3xf32>
            %s = affine.load %y[%n, %h, %w, %c] : memref<1x4x32x3xf32>
            %p = arith.mulf %a, %b : f32
            %t = arith.addf %s, %p : f32
            affine.store %t, %y[%n, %h, %w, %c] : memref<1x4x32x3xf32>
          }
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}

// CHECK-LABEL: func.func @not_channels
// CHECK-NOT: collapse_shape
// CHECK: affine.for %{{.*}} = 0 to 32 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 3 {
// CHECK-LABEL: func.func @odd_width
// CHECK-NOT: collapse_shape
// CHECK: affine.for %{{.*}} = 0 to 30 {
func.func @not_channels(%x: memref<32x4xf32>, %y: memref<32x3xf32>) {
  affine.for %w = 0 to 32 {
    affine.for %c = 0 to 3 {
      %a = affine.load %x[%w, %c] : memref<32x4xf32>
      affine.store %a, %y[%w, %c] : memref<32x3xf32>
    }
  }
  return
}
func.func @odd_width(%x: memref<30x3xf32>, %y: memref<30x3xf32>) {
  affine.for %w = 0 to 30 {
    affine.for %c = 0 to 3 {
      %a = affine.load %x[%w, %c] : memref<30x3xf32>
      affine.store %a, %y[%w, %c] : memref<30x3xf32>
    }
  }
  return
}
func.func @mixed_roles(%x: memref<32x3xf32>, %y: memref<32x3xf32>) {
  affine.for %w = 0 to 32 {
    affine.for %c = 0 to 3 {
      %a = affine.load %x[%w, %c] : memref<32x3xf32>
      %b = affine.load %x[0, %c] : memref<32x3xf32>
      %s = arith.addf %a, %b : f32
      affine.store %s, %y[%w, %c] : memref<32x3xf32>
    }
  }
  return
}
func.func @written_in_outer_loop(%x: memref<4x32x3xf32>, %s: memref<4x3xf32>, %y: memref<4x32x3xf32>) {
  affine.for %h = 0 to 4 {
    affine.for %c = 0 to 3 {
      %v = affine.load %x[%h, 0, %c] : memref<4x32x3xf32>
      affine.store %v, %s[%h, %c] : memref<4x3xf32>
    }
    affine.for %w = 0 to 32 {
      affine.for %c = 0 to 3 {
        %a = affine.load %x[%h, %w, %c] : memref<4x32x3xf32>
        %b = affine.load %s[%h, %c] : memref<4x3xf32>
        %m = arith.mulf %a, %b : f32
        affine.store %m, %y[%h, %w, %c] : memref<4x32x3xf32>
      }
    }
  }
  return
}

// A memref read in both roles gets a view and a copy; a copy of an input the
// enclosing loop writes stays inside that loop, after the write.
// CHECK-LABEL: func.func @mixed_roles
// CHECK: %[[V:.*]] = memref.collapse_shape %arg0 {{\[}}[0, 1]] : memref<32x3xf32> into memref<96xf32>
// CHECK: %[[R:.*]] = memref.alloc() {{.*}} : memref<32x48xf32>
// CHECK: affine.load %[[V]][
// CHECK: affine.load %[[R]][0, %{{.*}}] : memref<32x48xf32>
// CHECK-LABEL: func.func @written_in_outer_loop
// CHECK: affine.for %[[H:.*]] = 0 to 4 {
// CHECK: affine.store %{{.*}}, %arg1[%[[H]], %{{.*}}]
// CHECK: memref.alloc() {{.*}} : memref<4x48xf32>
// CHECK: affine.load %arg1[

// One channel (a grayscale image: the channel loop runs once) is the same
// rewrite: the 16 iterations of c are 16 pixels of w; the filter's copy
// repeats its one value per tap 16 times. Without it, c (1 iteration) and
// the taps are the only inner loops and nothing is vectorized.
// CHECK-LABEL: func.func @one_channel
// CHECK: %[[X1:.*]] = memref.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] : memref<1x4x36x1xf32> into memref<1x4x36xf32>
// CHECK: %[[F1:.*]] = memref.alloc() {{.*}} : memref<5x16xf32>
// CHECK: } {pbc.copy, pbc.kind = "pointwise"}
// CHECK: %[[Y1:.*]] = memref.collapse_shape %arg2 {{\[}}[0], [1], [2, 3]] : memref<1x4x32x1xf32> into memref<1x4x32xf32>
// CHECK: affine.for %[[W1:.*]] = 0 to 32 step 16 {
// CHECK-NEXT: affine.for %[[C1:.*]] = 0 to 16 {
// CHECK: affine.load %[[X1]][%{{.*}}, %{{.*}}, %[[W1]] + %{{.*}} + %[[C1]]]
// CHECK: affine.load %[[F1]][%{{.*}}, %[[C1]]]
// CHECK: affine.store %{{.*}}, %[[Y1]][%{{.*}}, %{{.*}}, %[[W1]] + %[[C1]]]
// CHECK: } {pbc.vectorize}
// VEC-LABEL: func.func @one_channel
// VEC: affine.vector_load %{{.*}} : memref<1x4x36xf32>, vector<16xf32>
// VEC: affine.vector_store %{{.*}} : memref<1x4x32xf32>, vector<16xf32>
func.func @one_channel(%x: memref<1x4x36x1xf32>, %f: memref<5x1xf32>, %y: memref<1x4x32x1xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %h = 0 to 4 {
      affine.for %w = 0 to 32 {
        affine.for %c = 0 to 1 {
          affine.for %k = 0 to 5 {
            %a = affine.load %x[%n, %h, %w + %k, %c] : memref<1x4x36x1xf32>
            %b = affine.load %f[%k, %c] : memref<5x1xf32>
            %s = affine.load %y[%n, %h, %w, %c] : memref<1x4x32x1xf32>
            %p = arith.mulf %a, %b : f32
            %t = arith.addf %s, %p : f32
            affine.store %t, %y[%n, %h, %w, %c] : memref<1x4x32x1xf32>
          }
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}
