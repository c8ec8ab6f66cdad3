// pbc-fuse-rows fuses adjacent pointwise, broadcast and reduction nests at
// the depth of the outer loops they share, where each iteration of those
// touches only its own rows of what the others write: softmax's six nests
// become one loop over rows (marked pbc.parallel) with the four row passes
// inside. It fuses only where that pays: the group's work reaches min-work
// that a member's alone does not, or the memrefs the members share exceed
// L2. It must not fuse short rows that gain neither (@short_rows), rows
// read in another order (@reversed_rows), fewer than 4 rows per core
// (@few_rows), a matmul's epilogue (@epilogue: pbc-fuse-epilogue's), nor
// nests of one band with flat bodies (@same_band: pbc-fuse's).
// RUN: pbc-opt %s -p 'pbc-fuse-rows{cores=2 min-work=131072 vector-bits=512 l2-bytes=1048576}' | FileCheck %s
// CHECK-LABEL: func.func @softmax
// CHECK: affine.for %[[I:.*]] = 0 to 64 {
// CHECK: affine.for %{{.*}} = 0 to 1000 {
// CHECK: affine.for %{{.*}} = 0 to 1000 {
// CHECK: affine.for %{{.*}} = 0 to 1000 {
// CHECK: affine.for %{{.*}} = 0 to 1000 {
// CHECK: } {pbc.kind = "reduction", pbc.parallel}
// CHECK-NOT: affine.for
// CHECK: return
func.func @softmax(%x: memref<64x1000xf32>, %y: memref<64x1000xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFFC00000 : f32
  %m = memref.alloc() : memref<64xf32>
  affine.for %i = 0 to 64 {
    affine.store %ninf, %m[%i] : memref<64xf32>
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 1000 {
      %a = affine.load %x[%i, %j] : memref<64x1000xf32>
      %b = affine.load %m[%i] : memref<64xf32>
      %c = arith.maxnumf %a, %b : f32
      affine.store %c, %m[%i] : memref<64xf32>
    }
  } {pbc.kind = "reduction"}
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 1000 {
      %a = affine.load %x[%i, %j] : memref<64x1000xf32>
      %b = affine.load %m[%i] : memref<64xf32>
      %c = arith.subf %a, %b : f32
      %e = math.exp %c : f32
      affine.store %e, %y[%i, %j] : memref<64x1000xf32>
    }
  } {pbc.kind = "broadcast"}
  affine.for %i = 0 to 64 {
    affine.store %zero, %m[%i] : memref<64xf32>
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 1000 {
      %a = affine.load %y[%i, %j] : memref<64x1000xf32>
      %b = affine.load %m[%i] : memref<64xf32>
      %c = arith.addf %a, %b : f32
      affine.store %c, %m[%i] : memref<64xf32>
    }
  } {pbc.kind = "reduction"}
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 1000 {
      %a = affine.load %y[%i, %j] : memref<64x1000xf32>
      %b = affine.load %m[%i] : memref<64xf32>
      %c = arith.divf %a, %b : f32
      affine.store %c, %y[%i, %j] : memref<64x1000xf32>
    }
  } {pbc.kind = "broadcast"}
  memref.dealloc %m : memref<64xf32>
  return
}

// CHECK-LABEL: func.func @short_rows
// CHECK-COUNT-6: } {pbc.kind = "{{pointwise|broadcast|reduction}}"}
// CHECK-NOT: pbc.parallel
// CHECK: return
func.func @short_rows(%x: memref<64x128xf32>, %y: memref<64x128xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFFC00000 : f32
  %m = memref.alloc() : memref<64xf32>
  affine.for %i = 0 to 64 {
    affine.store %ninf, %m[%i] : memref<64xf32>
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 128 {
      %a = affine.load %x[%i, %j] : memref<64x128xf32>
      %b = affine.load %m[%i] : memref<64xf32>
      %c = arith.maxnumf %a, %b : f32
      affine.store %c, %m[%i] : memref<64xf32>
    }
  } {pbc.kind = "reduction"}
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 128 {
      %a = affine.load %x[%i, %j] : memref<64x128xf32>
      %b = affine.load %m[%i] : memref<64xf32>
      %c = arith.subf %a, %b : f32
      %e = math.exp %c : f32
      affine.store %e, %y[%i, %j] : memref<64x128xf32>
    }
  } {pbc.kind = "broadcast"}
  affine.for %i = 0 to 64 {
    affine.store %zero, %m[%i] : memref<64xf32>
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 128 {
      %a = affine.load %y[%i, %j] : memref<64x128xf32>
      %b = affine.load %m[%i] : memref<64xf32>
      %c = arith.addf %a, %b : f32
      affine.store %c, %m[%i] : memref<64xf32>
    }
  } {pbc.kind = "reduction"}
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 128 {
      %a = affine.load %y[%i, %j] : memref<64x128xf32>
      %b = affine.load %m[%i] : memref<64xf32>
      %c = arith.divf %a, %b : f32
      affine.store %c, %y[%i, %j] : memref<64x128xf32>
    }
  } {pbc.kind = "broadcast"}
  memref.dealloc %m : memref<64xf32>
  return
}

// Each nest alone is under min-work, together over it: fused, the rows on all cores.
// CHECK-LABEL: func.func @big_rows
// CHECK: affine.for %[[I:.*]] = 0 to 256 {
// CHECK: affine.for %{{.*}} = 0 to 1024 {
// CHECK: affine.for %{{.*}} = 0 to 1024 {
// CHECK: } {pbc.kind = "reduction", pbc.parallel}
// CHECK-NOT: affine.for
// CHECK: return
func.func @big_rows(%x: memref<256x1024xf32>, %s: memref<256xf32>) {
  %t = memref.alloc() : memref<256x1024xf32>
  affine.for %i = 0 to 256 {
    affine.for %j = 0 to 1024 {
      %a = affine.load %x[%i, %j] : memref<256x1024xf32>
      %e = math.exp %a : f32
      affine.store %e, %t[%i, %j] : memref<256x1024xf32>
    }
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 256 {
    affine.for %j = 0 to 1024 {
      %a = affine.load %t[%i, %j] : memref<256x1024xf32>
      %b = affine.load %s[%i] : memref<256xf32>
      %c = arith.addf %a, %b : f32
      affine.store %c, %s[%i] : memref<256xf32>
    }
  } {pbc.kind = "reduction"}
  memref.dealloc %t : memref<256x1024xf32>
  return
}

// Each nest alone is over min-work: fused for the 8 MiB they share.
// CHECK-LABEL: func.func @beyond_l2
// CHECK: affine.for %[[I:.*]] = 0 to 1024 {
// CHECK: affine.for %{{.*}} = 0 to 2048 {
// CHECK: affine.for %{{.*}} = 0 to 2048 {
// CHECK: } {pbc.kind = "reduction", pbc.parallel}
// CHECK-NOT: affine.for
// CHECK: return
func.func @beyond_l2(%x: memref<1024x2048xf32>, %s: memref<1024xf32>) {
  %t = memref.alloc() : memref<1024x2048xf32>
  affine.for %i = 0 to 1024 {
    affine.for %j = 0 to 2048 {
      %a = affine.load %x[%i, %j] : memref<1024x2048xf32>
      %e = math.exp %a : f32
      affine.store %e, %t[%i, %j] : memref<1024x2048xf32>
    }
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 1024 {
    affine.for %j = 0 to 2048 {
      %a = affine.load %t[%i, %j] : memref<1024x2048xf32>
      %b = affine.load %s[%i] : memref<1024xf32>
      %c = arith.addf %a, %b : f32
      affine.store %c, %s[%i] : memref<1024xf32>
    }
  } {pbc.kind = "reduction"}
  memref.dealloc %t : memref<1024x2048xf32>
  return
}

// CHECK-LABEL: func.func @reversed_rows
// CHECK-COUNT-2: } {pbc.kind = "{{pointwise|broadcast|reduction}}"}
// CHECK-NOT: pbc.parallel
// CHECK: return
func.func @reversed_rows(%x: memref<256x1024xf32>, %s: memref<256xf32>) {
  %t = memref.alloc() : memref<256x1024xf32>
  affine.for %i = 0 to 256 {
    affine.for %j = 0 to 1024 {
      %a = affine.load %x[%i, %j] : memref<256x1024xf32>
      %e = math.exp %a : f32
      affine.store %e, %t[%i, %j] : memref<256x1024xf32>
    }
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 256 {
    affine.for %j = 0 to 1024 {
      %a = affine.load %t[255 - %i, %j] : memref<256x1024xf32>
      %b = affine.load %s[%i] : memref<256xf32>
      %c = arith.addf %a, %b : f32
      affine.store %c, %s[%i] : memref<256xf32>
    }
  } {pbc.kind = "reduction"}
  memref.dealloc %t : memref<256x1024xf32>
  return
}

// CHECK-LABEL: func.func @few_rows
// CHECK-COUNT-2: } {pbc.kind = "{{pointwise|broadcast|reduction}}"}
// CHECK-NOT: pbc.parallel
// CHECK: return
func.func @few_rows(%x: memref<4x50000xf32>, %s: memref<4xf32>) {
  %t = memref.alloc() : memref<4x50000xf32>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 50000 {
      %a = affine.load %x[%i, %j] : memref<4x50000xf32>
      %e = math.exp %a : f32
      affine.store %e, %t[%i, %j] : memref<4x50000xf32>
    }
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 50000 {
      %a = affine.load %t[%i, %j] : memref<4x50000xf32>
      %b = affine.load %s[%i] : memref<4xf32>
      %c = arith.addf %a, %b : f32
      affine.store %c, %s[%i] : memref<4xf32>
    }
  } {pbc.kind = "reduction"}
  memref.dealloc %t : memref<4x50000xf32>
  return
}

// CHECK-LABEL: func.func @epilogue
// CHECK: {pbc.kind = "matmul"}
// CHECK-COUNT-2: } {pbc.kind = "{{pointwise|broadcast|reduction}}"}
// CHECK-NOT: pbc.parallel
// CHECK: return
func.func @epilogue(%a: memref<512x64xf32>, %b: memref<64x1024xf32>, %s: memref<512xf32>) {
  %c = memref.alloc() : memref<512x1024xf32>
  %d = memref.alloc() : memref<512x1024xf32>
  affine.for %i = 0 to 512 {
    affine.for %j = 0 to 1024 {
      affine.for %k = 0 to 64 {
        %x = affine.load %a[%i, %k] : memref<512x64xf32>
        %y = affine.load %b[%k, %j] : memref<64x1024xf32>
        %z = affine.load %c[%i, %j] : memref<512x1024xf32>
        %m = arith.mulf %x, %y : f32
        %n = arith.addf %z, %m : f32
        affine.store %n, %c[%i, %j] : memref<512x1024xf32>
      }
    }
  } {pbc.kind = "matmul"}
  affine.for %i = 0 to 512 {
    affine.for %j = 0 to 1024 {
      %x = affine.load %c[%i, %j] : memref<512x1024xf32>
      %e = math.exp %x : f32
      affine.store %e, %d[%i, %j] : memref<512x1024xf32>
    }
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 512 {
    affine.for %j = 0 to 1024 {
      %x = affine.load %d[%i, %j] : memref<512x1024xf32>
      %y = affine.load %s[%i] : memref<512xf32>
      %z = arith.addf %x, %y : f32
      affine.store %z, %s[%i] : memref<512xf32>
    }
  } {pbc.kind = "reduction"}
  memref.dealloc %c : memref<512x1024xf32>
  memref.dealloc %d : memref<512x1024xf32>
  return
}

// Same band throughout with flat bodies: pbc-fuse's case, left to it (it
// forwards the values too), though the 2 MiB they share would pay.
// CHECK-LABEL: func.func @same_band
// CHECK-COUNT-2: } {pbc.kind = "pointwise"}
// CHECK-NOT: pbc.parallel
// CHECK: return
func.func @same_band(%x: memref<512x1024xf32>, %y: memref<512x1024xf32>) {
  %t = memref.alloc() : memref<512x1024xf32>
  affine.for %i = 0 to 512 {
    affine.for %j = 0 to 1024 {
      %a = affine.load %x[%i, %j] : memref<512x1024xf32>
      %e = math.exp %a : f32
      affine.store %e, %t[%i, %j] : memref<512x1024xf32>
    }
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 512 {
    affine.for %j = 0 to 1024 {
      %a = affine.load %t[%i, %j] : memref<512x1024xf32>
      %m = arith.mulf %a, %a : f32
      affine.store %m, %y[%i, %j] : memref<512x1024xf32>
    }
  } {pbc.kind = "pointwise"}
  memref.dealloc %t : memref<512x1024xf32>
  return
}
