// pbc-tile and depthwise convolutions (n, h, w, c, kh, kw; the filter read
// per channel). With 16 channels, c fills a vector: register tile 8 pixels
// (I = w; see @many_channels) x 1 vector of c. With 2 channels, c's register tile would be
// 2-lane vectors; the nest is left untiled for pbc-interleave, which
// vectorizes 8 pixels x 2 channels (3x3 on 256^2: 0.050 -> 0.015 ms).
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=1048576 l3-bytes=33554432}' | FileCheck %s
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=1048576 l3-bytes=33554432};pbc-interleave{vector-bits=512}' | FileCheck %s --check-prefix=INTERLEAVE
// CHECK-LABEL: func.func @sixteen_channels
// CHECK: } {pbc.register_tile = 16 : i64, pbc.vectorize}
// CHECK-LABEL: func.func @two_channels
// CHECK-NOT: pbc.register_tile
// CHECK-NOT: pbc.vectorize
// CHECK: } {pbc.kind = "matmul"}
// With 144 channels a wider tile (8 pixels x 3 vectors) would reuse
// nothing more, every FMA loading its input vector, and spilled; the tile
// stays one vector wide and as many pixels tall as the registers hold with
// the 3-wide window's inputs and filter vectors (2m + 5 <= 32: 8 of 56).
// CHECK-LABEL: func.func @many_channels
// CHECK: } {pbc.register_tile = 16 : i64, pbc.vectorize}
// CHECK-NEXT: } {pbc.register_tile = 8 : i64}
// INTERLEAVE-LABEL: func.func @two_channels
// INTERLEAVE: memref.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] : memref<1x10x34x2xf32> into memref<1x10x68xf32>
// INTERLEAVE: affine.for %{{.*}} = 0 to 32 step 8 {
// INTERLEAVE-NEXT: affine.for %{{.*}} = 0 to 16 {
// INTERLEAVE: } {pbc.vectorize}
func.func @sixteen_channels(%x: memref<1x10x34x16xf32>, %f: memref<3x3x16xf32>, %y: memref<1x8x32x16xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %h = 0 to 8 {
      affine.for %w = 0 to 32 {
        affine.for %c = 0 to 16 {
          affine.for %kh = 0 to 3 {
            affine.for %kw = 0 to 3 {
              %a = affine.load %x[%n, %h + %kh, %w + %kw, %c] : memref<1x10x34x16xf32>
              %b = affine.load %f[%kh, %kw, %c] : memref<3x3x16xf32>
              %s = affine.load %y[%n, %h, %w, %c] : memref<1x8x32x16xf32>
              %p = arith.mulf %a, %b : f32
              %t = arith.addf %s, %p : f32
              affine.store %t, %y[%n, %h, %w, %c] : memref<1x8x32x16xf32>
            }
          }
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @two_channels(%x: memref<1x10x34x2xf32>, %f: memref<3x3x2xf32>, %y: memref<1x8x32x2xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %h = 0 to 8 {
      affine.for %w = 0 to 32 {
        affine.for %c = 0 to 2 {
          affine.for %kh = 0 to 3 {
            affine.for %kw = 0 to 3 {
              %a = affine.load %x[%n, %h + %kh, %w + %kw, %c] : memref<1x10x34x2xf32>
              %b = affine.load %f[%kh, %kw, %c] : memref<3x3x2xf32>
              %s = affine.load %y[%n, %h, %w, %c] : memref<1x8x32x2xf32>
              %p = arith.mulf %a, %b : f32
              %t = arith.addf %s, %p : f32
              affine.store %t, %y[%n, %h, %w, %c] : memref<1x8x32x2xf32>
            }
          }
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @many_channels(%x: memref<1x58x58x144xf32>, %f: memref<3x3x144xf32>, %y: memref<1x56x56x144xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %h = 0 to 56 {
      affine.for %w = 0 to 56 {
        affine.for %c = 0 to 144 {
          affine.for %kh = 0 to 3 {
            affine.for %kw = 0 to 3 {
              %a = affine.load %x[%n, %h + %kh, %w + %kw, %c] : memref<1x58x58x144xf32>
              %b = affine.load %f[%kh, %kw, %c] : memref<3x3x144xf32>
              %s = affine.load %y[%n, %h, %w, %c] : memref<1x56x56x144xf32>
              %p = arith.mulf %a, %b : f32
              %t = arith.addf %s, %p : f32
              affine.store %t, %y[%n, %h, %w, %c] : memref<1x56x56x144xf32>
            }
          }
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}
