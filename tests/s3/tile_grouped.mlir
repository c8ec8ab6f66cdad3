// pbc-tile chooses as register loop I one that the vector operand (the input
// read along J) does not vary along, so a register tile's rows reuse the
// loaded vectors. The parallel loops between that I and J move to the front
// of the band.
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=1048576 l3-bytes=33554432}' | FileCheck %s

// A grouped convolution in NHWGC form: the group loop g (the filter varies
// with it) moves outermost, w becomes I, and the filter, read across f, is
// copied once with f last.
// CHECK-LABEL: func.func @grouped_nhwgc
// CHECK: %[[T:.*]] = memref.alloc() {{.*}} : memref<4x3x3x8x8xf32>
// CHECK: } {pbc.copy, pbc.kind = "pointwise"}
// CHECK-NEXT: affine.for %[[G:.*]] = 0 to 4 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 1 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 12 {
// CHECK-NEXT: affine.for %[[W:.*]] = 0 to 12 {
// CHECK-NEXT: affine.for %[[F:.*]] = 0 to 8 {
// CHECK: affine.load %[[T]][%[[G]], %{{.*}}, %{{.*}}, %{{.*}}, %[[F]]]
// CHECK: } {pbc.register_tile = 8 : i64, pbc.vectorize}
// CHECK-NEXT: } {pbc.register_tile = 12 : i64}
// CHECK: } {pbc.kind = "matmul", pbc.parallel}
// CHECK: memref.dealloc %[[T]]
func.func @grouped_nhwgc(%x: memref<1x14x14x4x8xf32>, %w: memref<4x8x3x3x8xf32>, %y: memref<1x12x12x4x8xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %h = 0 to 12 {
      affine.for %v = 0 to 12 {
        affine.for %g = 0 to 4 {
          affine.for %f = 0 to 8 {
            affine.for %kh = 0 to 3 {
              affine.for %kw = 0 to 3 {
                affine.for %c = 0 to 8 {
                  %a = affine.load %x[%n, %h + %kh, %v + %kw, %g, %c] : memref<1x14x14x4x8xf32>
                  %b = affine.load %w[%g, %f, %kh, %kw, %c] : memref<4x8x3x3x8xf32>
                  %o = affine.load %y[%n, %h, %v, %g, %f] : memref<1x12x12x4x8xf32>
                  %p = arith.mulf %a, %b : f32
                  %s = arith.addf %o, %p : f32
                  affine.store %s, %y[%n, %h, %v, %g, %f] : memref<1x12x12x4x8xf32>
                }
              }
            }
          }
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}

// An NCHW convolution: the input, read along ow, varies with oh but not
// with f, so f is I (the filter is broadcast) and oh moves outward.
// CHECK-LABEL: func.func @nchw
// CHECK: affine.for %{{.*}} = 0 to 16 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 1 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 16 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 32 {
// CHECK: } {pbc.register_tile = 32 : i64, pbc.vectorize}
// CHECK-NEXT: } {pbc.register_tile = {{[0-9]+}} : i64}
// CHECK: } {pbc.kind = "matmul", pbc.parallel}
func.func @nchw(%x: memref<1x8x18x34xf32>, %w: memref<16x8x3x3xf32>, %y: memref<1x16x16x32xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %f = 0 to 16 {
      affine.for %oh = 0 to 16 {
        affine.for %ow = 0 to 32 {
          affine.for %c = 0 to 8 {
            affine.for %kh = 0 to 3 {
              affine.for %kw = 0 to 3 {
                %a = affine.load %x[%n, %c, %oh + %kh, %ow + %kw] : memref<1x8x18x34xf32>
                %b = affine.load %w[%f, %c, %kh, %kw] : memref<16x8x3x3xf32>
                %o = affine.load %y[%n, %f, %oh, %ow] : memref<1x16x16x32xf32>
                %p = arith.mulf %a, %b : f32
                %s = arith.addf %o, %p : f32
                affine.store %s, %y[%n, %f, %oh, %ow] : memref<1x16x16x32xf32>
              }
            }
          }
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// f = 3 has no vector lanes: the nest is not tiled, and its loops keep
// their order (the group loop is not moved for nothing).
// CHECK-LABEL: func.func @grouped_f3
// CHECK-NEXT: affine.for %{{.*}} = 0 to 1 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 12 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 12 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 4 {
// CHECK-NOT: pbc.register_tile
// CHECK: } {pbc.kind = "matmul"}
func.func @grouped_f3(%x: memref<1x14x14x4x8xf32>, %w: memref<4x3x3x3x8xf32>, %y: memref<1x12x12x4x3xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %h = 0 to 12 {
      affine.for %v = 0 to 12 {
        affine.for %g = 0 to 4 {
          affine.for %f = 0 to 3 {
            affine.for %kh = 0 to 3 {
              affine.for %kw = 0 to 3 {
                affine.for %c = 0 to 8 {
                  %a = affine.load %x[%n, %h + %kh, %v + %kw, %g, %c] : memref<1x14x14x4x8xf32>
                  %b = affine.load %w[%g, %f, %kh, %kw, %c] : memref<4x3x3x3x8xf32>
                  %o = affine.load %y[%n, %h, %v, %g, %f] : memref<1x12x12x4x3xf32>
                  %p = arith.mulf %a, %b : f32
                  %s = arith.addf %o, %p : f32
                  affine.store %s, %y[%n, %h, %v, %g, %f] : memref<1x12x12x4x3xf32>
                }
              }
            }
          }
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// A 29-wide output is split into full register tiles and a remainder nest:
// both read one transposed copy of the filter.
// CHECK-LABEL: func.func @grouped_split
// CHECK: memref.alloc() {{.*}} : memref<4x3x3x8x8xf32>
// CHECK-NOT: memref.alloc
// CHECK: } {pbc.kind = "matmul", pbc.parallel}
// CHECK: } {pbc.kind = "matmul", pbc.parallel}
// CHECK-NEXT: memref.dealloc
func.func @grouped_split(%x: memref<1x3x31x4x8xf32>, %w: memref<4x8x3x3x8xf32>, %y: memref<1x1x29x4x8xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %h = 0 to 1 {
      affine.for %v = 0 to 29 {
        affine.for %g = 0 to 4 {
          affine.for %f = 0 to 8 {
            affine.for %kh = 0 to 3 {
              affine.for %kw = 0 to 3 {
                affine.for %c = 0 to 8 {
                  %a = affine.load %x[%n, %h + %kh, %v + %kw, %g, %c] : memref<1x3x31x4x8xf32>
                  %b = affine.load %w[%g, %f, %kh, %kw, %c] : memref<4x8x3x3x8xf32>
                  %o = affine.load %y[%n, %h, %v, %g, %f] : memref<1x1x29x4x8xf32>
                  %p = arith.mulf %a, %b : f32
                  %s = arith.addf %o, %p : f32
                  affine.store %s, %y[%n, %h, %v, %g, %f] : memref<1x1x29x4x8xf32>
                }
              }
            }
          }
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}
