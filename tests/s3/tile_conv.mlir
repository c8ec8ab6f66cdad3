// pbc-tile on a convolution-shaped nest (reductions kh, kw, c after the
// output-channel loop f): the weight block of one f tile (3*3*256 x NC f32)
// must fit half of L2 (512 KiB), so f is tiled by NC = 32, the tile loop runs
// outermost (each block read once, reused by every pixel from L2), parallel
// and a pack site (the block is copied into a contiguous buffer); the point
// loops keep their register tile (14 pixels x 32 channels).
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=1048576 l3-bytes=33554432}' | FileCheck %s
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=1048576 l3-bytes=33554432};pbc-pack' | FileCheck %s --check-prefix=PACK
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=1048576 l3-bytes=33554432};pbc-pack{l2-bytes=1048576}' | FileCheck %s --check-prefix=INPLACE
// CHECK-LABEL: func.func @conv
// CHECK: affine.for %[[FT:.*]] = 0 to 256 step 32 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 1 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 14 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 14 {
// CHECK-NEXT: affine.for %{{.*}} = #{{.*}}(%[[FT]]) to #{{.*}}(%[[FT]]) {
// CHECK: } {pbc.register_tile = 32 : i64, pbc.vectorize}
// CHECK-NEXT: } {pbc.register_tile = 14 : i64}
// CHECK: } {pbc.kind = "matmul", pbc.pack_site, pbc.parallel}
// PACK-LABEL: func.func @conv
// PACK: affine.for %{{.*}} = 0 to 256 step 32 {
// PACK: memref.alloc() : memref<3x3x256x32xf32>
// PACK: } {pbc.copy}
// PACK-NOT: memref.alloc
// PACK-LABEL: func.func @small_conv
// A small weight block (3*3*64 x 64 = 144 KiB) is not tiled.
// CHECK-LABEL: func.func @small_conv
// CHECK-NOT: pbc.pack_site
// CHECK: } {pbc.kind = "matmul"
// A small block whose rows alias in L1 (1x1, 64 -> 256: 1 KiB rows, the
// micro kernel reads 256 bytes of each) is copied anyway: one f tile.
// CHECK-LABEL: func.func @aliasing_rows
// CHECK: affine.for %{{.*}} = 0 to 256 step 256 {
// CHECK: } {pbc.kind = "matmul", pbc.pack_site, pbc.parallel}
// PACK-LABEL: func.func @aliasing_rows
// PACK: memref.alloc() : memref<1x1x64x272xf32>
// PACK: } {pbc.copy}
func.func @conv(%x: memref<1x16x16x256xf32>, %w: memref<3x3x256x256xf32>, %y: memref<1x14x14x256xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %oh = 0 to 14 {
      affine.for %ow = 0 to 14 {
        affine.for %f = 0 to 256 {
          affine.for %kh = 0 to 3 {
            affine.for %kw = 0 to 3 {
              affine.for %c = 0 to 256 {
                %a = affine.load %x[%n, %oh + %kh, %ow + %kw, %c] : memref<1x16x16x256xf32>
                %b = affine.load %w[%kh, %kw, %c, %f] : memref<3x3x256x256xf32>
                %o = affine.load %y[%n, %oh, %ow, %f] : memref<1x14x14x256xf32>
                %p = arith.mulf %a, %b : f32
                %s = arith.addf %o, %p : f32
                affine.store %s, %y[%n, %oh, %ow, %f] : memref<1x14x14x256xf32>
              }
            }
          }
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @small_conv(%x: memref<1x16x16x64xf32>, %w: memref<3x3x64x64xf32>, %y: memref<1x14x14x64xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %oh = 0 to 14 {
      affine.for %ow = 0 to 14 {
        affine.for %f = 0 to 64 {
          affine.for %kh = 0 to 3 {
            affine.for %kw = 0 to 3 {
              affine.for %c = 0 to 64 {
                %a = affine.load %x[%n, %oh + %kh, %ow + %kw, %c] : memref<1x16x16x64xf32>
                %b = affine.load %w[%kh, %kw, %c, %f] : memref<3x3x64x64xf32>
                %o = affine.load %y[%n, %oh, %ow, %f] : memref<1x14x14x64xf32>
                %p = arith.mulf %a, %b : f32
                %s = arith.addf %o, %p : f32
                affine.store %s, %y[%n, %oh, %ow, %f] : memref<1x14x14x64xf32>
              }
            }
          }
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @aliasing_rows(%x: memref<1x14x14x64xf32>, %w: memref<1x1x64x256xf32>, %y: memref<1x14x14x256xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %oh = 0 to 14 {
      affine.for %ow = 0 to 14 {
        affine.for %f = 0 to 256 {
          affine.for %kh = 0 to 1 {
            affine.for %kw = 0 to 1 {
              affine.for %c = 0 to 64 {
                %a = affine.load %x[%n, %oh + %kh, %ow + %kw, %c] : memref<1x14x14x64xf32>
                %b = affine.load %w[%kh, %kw, %c, %f] : memref<1x1x64x256xf32>
                %o = affine.load %y[%n, %oh, %ow, %f] : memref<1x14x14x256xf32>
                %p = arith.mulf %a, %b : f32
                %s = arith.addf %o, %p : f32
                affine.store %s, %y[%n, %oh, %ow, %f] : memref<1x14x14x256xf32>
              }
            }
          }
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// A 29-wide output (29 has no divisor from 4 to 16) is split along ow: 16
// columns in full 16-high tiles, then a copy of the nest over the other 13
// (indexing 16 + ow), in one 13-high tile. Without the split the tile was
// one column high.
// CHECK-LABEL: func.func @odd_width
// CHECK: %[[SPLIT:.*]] = arith.constant 16 : index
// CHECK: affine.for %{{.*}} = 0 to 16 {
// CHECK: } {pbc.register_tile = 16 : i64, pbc.vectorize}
// CHECK-NEXT: } {pbc.register_tile = 16 : i64}
// CHECK: } {pbc.kind = "matmul"
// CHECK: affine.for %[[OW:.*]] = 0 to 13 {
// CHECK: %[[COL:.*]] = affine.apply #{{.*}}(%[[SPLIT]], %[[OW]])
// CHECK: affine.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %[[COL]], %{{.*}}]
// CHECK: } {pbc.register_tile = 16 : i64, pbc.vectorize}
// CHECK-NEXT: } {pbc.register_tile = 13 : i64}
// CHECK: } {pbc.kind = "matmul"
// CHECK-NOT: pbc.kind
func.func @odd_width(%x: memref<1x30x30x128xf32>, %w: memref<2x2x128x16xf32>, %y: memref<1x29x29x16xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %oh = 0 to 29 {
      affine.for %ow = 0 to 29 {
        affine.for %f = 0 to 16 {
          affine.for %kh = 0 to 2 {
            affine.for %kw = 0 to 2 {
              affine.for %c = 0 to 128 {
                %a = affine.load %x[%n, %oh + %kh, %ow + %kw, %c] : memref<1x30x30x128xf32>
                %b = affine.load %w[%kh, %kw, %c, %f] : memref<2x2x128x16xf32>
                %o = affine.load %y[%n, %oh, %ow, %f] : memref<1x29x29x16xf32>
                %p = arith.mulf %a, %b : f32
                %s = arith.addf %o, %p : f32
                affine.store %s, %y[%n, %oh, %ow, %f] : memref<1x29x29x16xf32>
              }
            }
          }
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}

// The split restricts the width loop from 0: a loop from 1 stays one nest.
// CHECK-LABEL: func.func @odd_width_from_one
// CHECK: affine.for %{{.*}} = 1 to 30 {
// CHECK: } {pbc.kind = "matmul"
// CHECK-NOT: pbc.kind
// CHECK: return
func.func @odd_width_from_one(%x: memref<1x30x30x128xf32>, %w: memref<2x2x128x16xf32>, %y: memref<1x29x29x16xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %oh = 0 to 29 {
      affine.for %ow = 1 to 30 {
        affine.for %f = 0 to 16 {
          affine.for %kh = 0 to 2 {
            affine.for %kw = 0 to 2 {
              affine.for %c = 0 to 128 {
                %a = affine.load %x[%n, %oh + %kh, %ow + %kw - 1, %c] : memref<1x30x30x128xf32>
                %b = affine.load %w[%kh, %kw, %c, %f] : memref<2x2x128x16xf32>
                %o = affine.load %y[%n, %oh, %ow - 1, %f] : memref<1x29x29x16xf32>
                %p = arith.mulf %a, %b : f32
                %s = arith.addf %o, %p : f32
                affine.store %s, %y[%n, %oh, %ow - 1, %f] : memref<1x29x29x16xf32>
              }
            }
          }
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// A 1x1 convolution over 1024 channels: its 14-pixel register tile reads 14
// input rows 4 KiB apart, all in one L1 set group (more than L1's ways), so
// the row loop around the pixels becomes a pack site too, and pbc-pack copies
// each output row's input pixels there into a buffer with padded rows, read
// by every output-channel panel. 512 channels (2 KiB apart: 7 rows per set
// group) are read in place.
// CHECK-LABEL: func.func @crowded_input_rows
// CHECK: } {pbc.register_tile = 14 : i64}
// CHECK-NEXT: } {pbc.pack_site, pbc.parallel}
// PACK-LABEL: func.func @crowded_input_rows
// PACK: affine.for %{{[a-z0-9]+}} = 0 to 14 {
// PACK: memref.alloc() : memref<1x1x14x1040xf32>
// PACK: } {pbc.copy}
// CHECK-LABEL: func.func @spread_input_rows
// CHECK: } {pbc.register_tile = 14 : i64}
// CHECK-NEXT: } {pbc.parallel}
func.func @crowded_input_rows(%x: memref<1x14x14x1024xf32>, %w: memref<1x1x1024x256xf32>, %y: memref<1x14x14x256xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %oh = 0 to 14 {
      affine.for %ow = 0 to 14 {
        affine.for %f = 0 to 256 {
          affine.for %kh = 0 to 1 {
            affine.for %kw = 0 to 1 {
              affine.for %c = 0 to 1024 {
                %a = affine.load %x[%n, %oh + %kh, %ow + %kw, %c] : memref<1x14x14x1024xf32>
                %b = affine.load %w[%kh, %kw, %c, %f] : memref<1x1x1024x256xf32>
                %o = affine.load %y[%n, %oh, %ow, %f] : memref<1x14x14x256xf32>
                %p = arith.mulf %a, %b : f32
                %s = arith.addf %o, %p : f32
                affine.store %s, %y[%n, %oh, %ow, %f] : memref<1x14x14x256xf32>
              }
            }
          }
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @spread_input_rows(%x: memref<1x14x14x512xf32>, %w: memref<1x1x512x256xf32>, %y: memref<1x14x14x256xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %oh = 0 to 14 {
      affine.for %ow = 0 to 14 {
        affine.for %f = 0 to 256 {
          affine.for %kh = 0 to 1 {
            affine.for %kw = 0 to 1 {
              affine.for %c = 0 to 512 {
                %a = affine.load %x[%n, %oh + %kh, %ow + %kw, %c] : memref<1x14x14x512xf32>
                %b = affine.load %w[%kh, %kw, %c, %f] : memref<1x1x512x256xf32>
                %o = affine.load %y[%n, %oh, %ow, %f] : memref<1x14x14x256xf32>
                %p = arith.mulf %a, %b : f32
                %s = arith.addf %o, %p : f32
                affine.store %s, %y[%n, %oh, %ow, %f] : memref<1x14x14x256xf32>
              }
            }
          }
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// Output channels tiled for L2 (960 x NC f32 in half of it: NC <= 136) are
// the cores' work: 10 blocks of 32, five per core, rather than 5 blocks of
// 64, three of them on one core.
// CHECK-LABEL: func.func @balanced_channel_blocks
// CHECK: affine.for %{{.*}} = 0 to 320 step 32 {
// CHECK: } {pbc.kind = "matmul", pbc.pack_site, pbc.parallel}
func.func @balanced_channel_blocks(%x: memref<1x7x7x960xf32>, %w: memref<1x1x960x320xf32>, %y: memref<1x7x7x320xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %oh = 0 to 7 {
      affine.for %ow = 0 to 7 {
        affine.for %f = 0 to 320 {
          affine.for %kh = 0 to 1 {
            affine.for %kw = 0 to 1 {
              affine.for %c = 0 to 960 {
                %a = affine.load %x[%n, %oh + %kh, %ow + %kw, %c] : memref<1x7x7x960xf32>
                %b = affine.load %w[%kh, %kw, %c, %f] : memref<1x1x960x320xf32>
                %o = affine.load %y[%n, %oh, %ow, %f] : memref<1x7x7x320xf32>
                %p = arith.mulf %a, %b : f32
                %s = arith.addf %o, %p : f32
                affine.store %s, %y[%n, %oh, %ow, %f] : memref<1x7x7x320xf32>
              }
            }
          }
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// Stride 2 over 512 channels: 2 KiB rows, but the tile's pixels are 4 KiB
// apart; copied like @crowded_input_rows (27 pixels of the row: the stride
// leaves gaps the copy keeps), though the input is larger than L2 and an
// input of whole rows that size is otherwise read in place (pbc-pack's
// l2-bytes).
// INPLACE-LABEL: func.func @crowded_by_stride
// INPLACE: memref.alloc() : memref<1x1x27x528xf32>
// INPLACE: } {pbc.copy}
func.func @crowded_by_stride(%x: memref<1x28x28x512xf32>, %w: memref<1x1x512x256xf32>, %y: memref<1x14x14x256xf32>) {
  affine.for %n = 0 to 1 {
    affine.for %oh = 0 to 14 {
      affine.for %ow = 0 to 14 {
        affine.for %f = 0 to 256 {
          affine.for %kh = 0 to 1 {
            affine.for %kw = 0 to 1 {
              affine.for %c = 0 to 512 {
                %a = affine.load %x[%n, %oh * 2 + %kh, %ow * 2 + %kw, %c] : memref<1x28x28x512xf32>
                %b = affine.load %w[%kh, %kw, %c, %f] : memref<1x1x512x256xf32>
                %o = affine.load %y[%n, %oh, %ow, %f] : memref<1x14x14x256xf32>
                %p = arith.mulf %a, %b : f32
                %s = arith.addf %o, %p : f32
                affine.store %s, %y[%n, %oh, %ow, %f] : memref<1x14x14x256xf32>
              }
            }
          }
        }
      }
    }
  } {pbc.kind = "matmul"}
  return
}
