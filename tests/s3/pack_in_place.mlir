// On a CPU (fast-memory-space 0), pbc-pack reads a tile of whole rows of an
// input larger than L2 in place: the copy would cost a pass over L3 or memory
// per call and only spread rows that already spread over several L1 set
// groups (3 KiB rows). Rows 4 KiB apart share one set group and are still
// copied; so is every input that fits in L2 (the second run), unless few rows
// reuse the copy (@few_rows: 16 rows per core read B's 2 KiB rows in place
// although B fits in L2) or the rows are read one by one along the innermost
// loop (A's rows, along k: in place in every case but @a_rows_4k). Rows of a
// page or more read across (@rows_6k: B's, along k) are copied, except
// where at most 128 rows of A use them (@seq128, @seq128_rows_12k). A weight
// marked pbc.invariant is copied in every case (@seq128_invariant: its tiles
// are packed once, by pbc-pack-once).
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=1048576 l3-bytes=33554432};pbc-pack{cache-line-bytes=64 l2-bytes=1048576}' | FileCheck %s
// RUN: pbc-opt %s -p 'pbc-tile{vector-bits=512 vector-registers=32 cores=2 l1d-bytes=49152 l2-bytes=1048576 l3-bytes=33554432};pbc-pack{cache-line-bytes=64 l2-bytes=4194304}' | FileCheck %s --check-prefix=FITS
// CHECK-LABEL: func.func @rows_3k
// CHECK-NOT: memref.alloc
// CHECK: affine.load %arg0[
// CHECK: affine.load %arg1[
// CHECK-LABEL: func.func @rows_4k
// CHECK: memref.alloc() : memref<768x1040xf32>
// CHECK-NOT: memref.alloc
// CHECK: affine.load %arg0[
// CHECK-LABEL: func.func @few_rows
// CHECK-NOT: memref.alloc
// CHECK: affine.load %arg1[
// CHECK-LABEL: func.func @a_rows_4k
// CHECK: %[[A:.*]] = memref.alloc() : memref<{{[0-9]+}}x1040xf32>
// CHECK: affine.load %arg0[
// CHECK: } {pbc.copy}
// CHECK-NOT: affine.load %arg0[
// CHECK: affine.load %[[A]][
// CHECK-NOT: affine.load %arg0[
// CHECK: return
// FITS-LABEL: func.func @rows_3k
// FITS: memref.alloc() : memref<768x784xf32>
// FITS-NOT: memref.alloc
// FITS: affine.load %arg0[
func.func @rows_3k(%a: memref<768x768xf32>, %b: memref<768x768xf32>, %c: memref<768x768xf32>) {
  affine.for %i = 0 to 768 {
    affine.for %j = 0 to 768 {
      affine.for %k = 0 to 768 {
        %x = affine.load %a[%i, %k] : memref<768x768xf32>
        %y = affine.load %b[%k, %j] : memref<768x768xf32>
        %z = affine.load %c[%i, %j] : memref<768x768xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<768x768xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @rows_4k(%a: memref<1024x768xf32>, %b: memref<768x1024xf32>, %c: memref<1024x1024xf32>) {
  affine.for %i = 0 to 1024 {
    affine.for %j = 0 to 1024 {
      affine.for %k = 0 to 768 {
        %x = affine.load %a[%i, %k] : memref<1024x768xf32>
        %y = affine.load %b[%k, %j] : memref<768x1024xf32>
        %z = affine.load %c[%i, %j] : memref<1024x1024xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<1024x1024xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @few_rows(%a: memref<32x256xf32>, %b: memref<256x512xf32>, %c: memref<32x512xf32>) {
  affine.for %i = 0 to 32 {
    affine.for %j = 0 to 512 {
      affine.for %k = 0 to 256 {
        %x = affine.load %a[%i, %k] : memref<32x256xf32>
        %y = affine.load %b[%k, %j] : memref<256x512xf32>
        %z = affine.load %c[%i, %j] : memref<32x512xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<32x512xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// A's rows 4 KiB apart: copied (MR rows in one set group would crowd it).
func.func @a_rows_4k(%a: memref<64x1024xf32>, %b: memref<1024x64xf32>, %c: memref<64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      affine.for %k = 0 to 1024 {
        %x = affine.load %a[%i, %k] : memref<64x1024xf32>
        %y = affine.load %b[%k, %j] : memref<1024x64xf32>
        %z = affine.load %c[%i, %j] : memref<64x64xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<64x64xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// B's rows are 6 KiB: not a set-group multiple, but read in place each step
// of k would land on a new page (the prefetchers stop there): copied. A's
// 3 KiB rows, read along k, stay in place.
// CHECK-LABEL: func.func @rows_6k
// CHECK: memref.alloc() : memref<768x1552xf32>
// CHECK-NOT: memref.alloc
// CHECK: affine.load %arg0[
func.func @rows_6k(%a: memref<1536x768xf32>, %b: memref<768x1536xf32>, %c: memref<1536x1536xf32>) {
  affine.for %i = 0 to 1536 {
    affine.for %j = 0 to 1536 {
      affine.for %k = 0 to 768 {
        %x = affine.load %a[%i, %k] : memref<1536x768xf32>
        %y = affine.load %b[%k, %j] : memref<768x1536xf32>
        %z = affine.load %c[%i, %j] : memref<1536x1536xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<1536x1536xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// A transformer's linear layers at sequence length 128: B (larger than L2)
// serves only the 128 rows of A, so it is read in place whatever its pitch,
// 3 KiB (@seq128) or 12 KiB (@seq128_rows_12k: page-per-step rows, 4 KiB
// multiples); A, which fits in L2, is still copied.
// CHECK-LABEL: func.func @seq128
// CHECK: %[[A:.*]] = memref.alloc() : memref<128x{{[0-9]+}}xf32>
// CHECK-NOT: memref.alloc
// CHECK: affine.load %arg0[
// CHECK: } {pbc.copy}
// CHECK: affine.load %[[A]][
// CHECK-NEXT: affine.load %arg1[
// CHECK-LABEL: func.func @seq128_rows_12k
// CHECK: %[[A:.*]] = memref.alloc() : memref<128x{{[0-9]+}}xf32>
// CHECK-NOT: memref.alloc
// CHECK: affine.load %arg0[
// CHECK: } {pbc.copy}
// CHECK: affine.load %[[A]][
// CHECK-NEXT: affine.load %arg1[
// CHECK-LABEL: func.func @seq128_invariant
// CHECK: %[[B:.*]] = memref.alloc() : memref<{{[0-9]+}}x{{[0-9]+}}xf32>
// CHECK: affine.load %arg1[
// CHECK: } {pbc.copy}
// CHECK-NOT: affine.load %arg1[
// CHECK: affine.load %[[B]][
// CHECK-NOT: affine.load %arg1[
// CHECK: return
func.func @seq128(%a: memref<128x768xf32>, %b: memref<768x768xf32>, %c: memref<128x768xf32>) {
  affine.for %i = 0 to 128 {
    affine.for %j = 0 to 768 {
      affine.for %k = 0 to 768 {
        %x = affine.load %a[%i, %k] : memref<128x768xf32>
        %y = affine.load %b[%k, %j] : memref<768x768xf32>
        %z = affine.load %c[%i, %j] : memref<128x768xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<128x768xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
func.func @seq128_rows_12k(%a: memref<128x768xf32>, %b: memref<768x3072xf32>, %c: memref<128x3072xf32>) {
  affine.for %i = 0 to 128 {
    affine.for %j = 0 to 3072 {
      affine.for %k = 0 to 768 {
        %x = affine.load %a[%i, %k] : memref<128x768xf32>
        %y = affine.load %b[%k, %j] : memref<768x3072xf32>
        %z = affine.load %c[%i, %j] : memref<128x3072xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<128x3072xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}

func.func @seq128_invariant(%a: memref<128x768xf32>, %b: memref<768x768xf32> {pbc.invariant}, %c: memref<128x768xf32>) {
  affine.for %i = 0 to 128 {
    affine.for %j = 0 to 768 {
      affine.for %k = 0 to 768 {
        %x = affine.load %a[%i, %k] : memref<128x768xf32>
        %y = affine.load %b[%k, %j] : memref<768x768xf32>
        %z = affine.load %c[%i, %j] : memref<128x768xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<128x768xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
