// pbc-dot-i8 on AVX-512 VNNI: an i8 register tile (acc += ext(bcast(A)) *
// ext(B panel)) steps k by 4 with one vpdpbusd per accumulator; the panel
// is laid out again with four rows of k interleaved (P4[.., k/4, 4j + k%4]),
// A's four bytes go in as one broadcast i32 with their top bits flipped
// (u8 = a + 128), and 128 * sum_k B comes off after the loop: the panel's
// column sums, made while it is laid out again, where the k loop covers
// all its rows; else summed in the loop (one more vpdpbusd per panel
// vector, of 0x80 bytes). A's bytes that are u8 already (extui) go in as
// they are.
// RUN: pbc-opt %s -p 'pbc-dot-i8{int8-dot=avx512-vnni}' | FileCheck %s
// Without the instruction nothing changes.
// RUN: pbc-opt %s -p 'pbc-dot-i8{int8-dot=none}' | FileCheck %s --check-prefix=NONE
// RUN: not pbc-opt %s -p 'pbc-dot-i8{int8-dot=amx}' 2>&1 | FileCheck %s --check-prefix=BAD
// The whole pipeline, on a chip that says it has VNNI: the i8 GEMM's
// micro-kernel has no vpmulld left.
// RUN: pbc --emit=s3 --chip=x86-64-v4 --chip-set=int8-dot=avx512-vnni --chip-set=llvm-features=+avx512vnni %S/inputs/matmul_i8.mlir | FileCheck %s --check-prefix=PIPE
// A chip that claims VNNI while its LLVM target lacks it is an error (LLVM
// would stop on the instruction), located at the pipeline entry.
// RUN: not pbc --emit=lib -o %t.so --chip=x86-64-v4 --chip-set=int8-dot=avx512-vnni %S/inputs/matmul_i8.mlir 2>&1 | FileCheck %s --check-prefix=NOVNNI
// RUN: pbc --emit=s3 --chip=x86-64-v4 %S/inputs/matmul_i8.mlir | FileCheck %s --check-prefix=PIPENONE

// NONE-NOT: vpdpbusd
// BAD: int8-dot: 'avx512-vnni' or 'none', not 'amx'
// NOVNNI: s3-before-parallelize:1: error: pass 'pbc-dot-i8': int8-dot=avx512-vnni needs +avx512vnni in llvm-features for llvm-cpu=x86-64-v4

// PIPE-LABEL: func.func @matmul_i8
// PIPE: memref.alloc() {alignment = 64 : i64} : memref<64x768xi8>
// PIPE: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// PIPE-NOT: arith.muli
// PIPENONE-NOT: vpdpbusd
// PIPENONE: arith.muli

// The globals @constant_blocks's constant B becomes (below), first in the
// module: B with four rows interleaved (bytes 0 1 2 3 of rows 0-3, then
// 4 5 6 7), and each block's column sums.
// CHECK-DAG: memref.global "private" constant @w_column_sums : memref<2x16xi32> = dense<{{\[}}[768, 768, 768, 768, 768, 768, 768, 768, 768, 768, 768, 768, 768, 768, 768, 768], [2816, 2816,
// CHECK-DAG: memref.global "private" constant @w_quads : memref<2x64xi8> = dense<"0x0001020300010203{{.*}}0405060704050607
// (B itself, no longer read, is gone.)
// CHECK-NOT: memref.global "private" constant @w :

// Two rows x two vectors of a packed panel P (2 panels x 64 rows x 32).
// CHECK-LABEL: func.func @panel
// CHECK: %[[P:.*]] = memref.alloc() : memref<2x64x32xi8>
// CHECK: } {pbc.copy}
// CHECK: %[[P4:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x16x128xi8>
// CHECK: %[[S:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x1x32xi32>
// CHECK: affine.for %[[I:.*]] = 0 to 2 {
// CHECK: affine.for %[[C:.*]] = 0 to 2 {
// CHECK: affine.vector_store %{{.*}}, %[[S]][%[[I]], %{{.*}}, %[[C]] * 16] : memref<2x1x32xi32>, vector<16xi32>
// CHECK: affine.for %[[Q:.*]] = 0 to 16 {
// CHECK: %[[R0:.*]] = affine.vector_load %[[P]][%[[I]], %[[Q]] * 4, %[[C]] * 16] : memref<2x64x32xi8>, vector<16xi8>
// CHECK: affine.vector_load %[[P]][%[[I]], %[[Q]] * 4 + 1, %[[C]] * 16]
// CHECK: affine.vector_load %[[P]][%[[I]], %[[Q]] * 4 + 2, %[[C]] * 16]
// CHECK: affine.vector_load %[[P]][%[[I]], %[[Q]] * 4 + 3, %[[C]] * 16]
// CHECK: %[[V:.*]] = vector.shuffle {{.*}} [0, 16, 32, 48, 1, 17, 33, 49,
// CHECK: affine.vector_store %[[V]], %[[P4]][%[[I]], %[[Q]], %[[C]] * 64] : memref<2x16x128xi8>, vector<64xi8>
// CHECK: %[[OLD:.*]] = affine.vector_load %[[S]][%[[I]], %{{.*}}, %[[C]] * 16]
// CHECK: %[[NEW:.*]] = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%[[OLD]], %{{.*}}, %[[V]])
// CHECK: affine.vector_store %[[NEW]], %[[S]][%[[I]], %{{.*}}, %[[C]] * 16]
// CHECK: } {pbc.copy}
// CHECK: %[[FLIP:.*]] = arith.constant dense<-2139062144> : vector<16xi32>
// The sums of the loop's rows (all 64: block 0), read before it.
// CHECK: %[[S0:.*]] = affine.vector_load %[[S]][%{{.*}}, %{{.*}} floordiv 64, 0] : memref<2x1x32xi32>, vector<16xi32>
// CHECK: %[[S1:.*]] = affine.vector_load %[[S]][%{{.*}}, %{{.*}} floordiv 64, 16] : memref<2x1x32xi32>, vector<16xi32>
// CHECK: %[[L:.*]]:4 = affine.for %[[K:.*]] = 0 to 64 step 4 iter_args
// CHECK-DAG: %[[B0:.*]] = affine.vector_load %[[P4]][%{{.*}}, %[[K]] floordiv 4, 0] : memref<2x16x128xi8>, vector<64xi8>
// CHECK-DAG: %[[B1:.*]] = affine.vector_load %[[P4]][%{{.*}}, %[[K]] floordiv 4, 64] : memref<2x16x128xi8>, vector<64xi8>
// CHECK-DAG: %[[A0:.*]] = affine.vector_load %arg0[%{{.*}}, %[[K]]] : memref<8x64xi8>, vector<4xi8>
// CHECK: vector.bitcast %[[A0]] : vector<4xi8> to vector<1xi32>
// CHECK: vector.broadcast {{.*}} : i32 to vector<16xi32>
// CHECK: arith.xori {{.*}}, %[[FLIP]]
// CHECK-COUNT-4: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK-NOT: arith.muli
// CHECK: affine.yield
// CHECK: %[[D0:.*]] = arith.subi %[[L]]#0, %[[S0]] : vector<16xi32>
// CHECK: arith.subi %[[L]]#1, %[[S1]] : vector<16xi32>
// CHECK: arith.subi %[[L]]#2, %[[S0]] : vector<16xi32>
// CHECK: arith.subi %[[L]]#3, %[[S1]] : vector<16xi32>
// CHECK: affine.vector_store %[[D0]], %arg2
// CHECK: memref.dealloc %[[P4]]
// CHECK: memref.dealloc %[[S]]
func.func @panel(%a: memref<8x64xi8>, %b: memref<64x64xi8>, %c: memref<8x64xi32>) {
  %zero = arith.constant dense<0> : vector<16xi32>
  affine.for %n = 0 to 64 step 64 {
    %p = memref.alloc() : memref<2x64x32xi8>
    affine.for %k = 0 to 64 {
      affine.for %j = 0 to 64 step 16 {
        %v = affine.vector_load %b[%k, %j] : memref<64x64xi8>, vector<16xi8>
        affine.vector_store %v, %p[%j floordiv 32, %k, %j mod 32] : memref<2x64x32xi8>, vector<16xi8>
      }
    } {pbc.copy}
    affine.for %jp = 0 to 2 {
      affine.for %i = 0 to 8 step 2 {
        %r:4 = affine.for %k = 0 to 64 iter_args(%c0 = %zero, %c1 = %zero, %c2 = %zero, %c3 = %zero) -> (vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>) {
          %a0 = affine.load %a[%i, %k] : memref<8x64xi8>
          %a0e = arith.extsi %a0 : i8 to i32
          %a0b = vector.broadcast %a0e : i32 to vector<16xi32>
          %b0 = affine.vector_load %p[%jp, %k, 0] : memref<2x64x32xi8>, vector<16xi8>
          %b0e = arith.extsi %b0 : vector<16xi8> to vector<16xi32>
          %m0 = arith.muli %a0b, %b0e : vector<16xi32>
          %s0 = arith.addi %c0, %m0 : vector<16xi32>
          %b1 = affine.vector_load %p[%jp, %k, 16] : memref<2x64x32xi8>, vector<16xi8>
          %b1e = arith.extsi %b1 : vector<16xi8> to vector<16xi32>
          %m1 = arith.muli %a0b, %b1e : vector<16xi32>
          %s1 = arith.addi %c1, %m1 : vector<16xi32>
          %a1 = affine.load %a[%i + 1, %k] : memref<8x64xi8>
          %a1e = arith.extsi %a1 : i8 to i32
          %a1b = vector.broadcast %a1e : i32 to vector<16xi32>
          // A repeated load of B's first vector (S3's cleanup merges them
          // later): one panel vector, one compensation.
          %b2 = affine.vector_load %p[%jp, %k, 0] : memref<2x64x32xi8>, vector<16xi8>
          %b2e = arith.extsi %b2 : vector<16xi8> to vector<16xi32>
          %m2 = arith.muli %b2e, %a1b : vector<16xi32>
          %s2 = arith.addi %m2, %c2 : vector<16xi32>
          %m3 = arith.muli %a1b, %b1e : vector<16xi32>
          %s3 = arith.addi %c3, %m3 : vector<16xi32>
          affine.yield %s0, %s1, %s2, %s3 : vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>
        }
        affine.vector_store %r#0, %c[%i, %jp * 32] : memref<8x64xi32>, vector<16xi32>
        affine.vector_store %r#1, %c[%i, %jp * 32 + 16] : memref<8x64xi32>, vector<16xi32>
        affine.vector_store %r#2, %c[%i + 1, %jp * 32] : memref<8x64xi32>, vector<16xi32>
        affine.vector_store %r#3, %c[%i + 1, %jp * 32 + 16] : memref<8x64xi32>, vector<16xi32>
      }
    }
    memref.dealloc %p : memref<2x64x32xi8>
  }
  return
}

// B read where it is (an argument nothing writes), 8 lanes: B is laid out
// again once, before the nest (a root nest of kind copy), in steps of 8
// columns; the ymm form of the instruction.
// CHECK-LABEL: func.func @unpacked_ymm
// CHECK: %[[B4:.*]] = memref.alloc() {alignment = 64 : i64} : memref<16x96xi8>
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<1x24xi32>
// CHECK: affine.for
// CHECK: vector.shuffle {{.*}} : vector<16xi8>, vector<16xi8>
// CHECK: } {pbc.copy, pbc.kind = "copy"}
// CHECK: affine.for
// CHECK: affine.for %[[K:.*]] = 0 to 64 step 4 iter_args
// CHECK: affine.vector_load %[[B4]][%[[K]] floordiv 4, %{{.*}} * 4] : memref<16x96xi8>, vector<32xi8>
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"
// CHECK: } {pbc.kind = "matmul"}
// CHECK: memref.dealloc %[[B4]]
func.func @unpacked_ymm(%a: memref<4x64xi8>, %b: memref<64x24xi8>, %c: memref<4x24xi32>) {
  %zero = arith.constant dense<0> : vector<8xi32>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 24 step 8 {
      %r = affine.for %k = 0 to 64 iter_args(%acc = %zero) -> (vector<8xi32>) {
        %a0 = affine.load %a[%i, %k] : memref<4x64xi8>
        %a0e = arith.extsi %a0 : i8 to i32
        %a0b = vector.broadcast %a0e : i32 to vector<8xi32>
        %b0 = affine.vector_load %b[%k, %j] : memref<64x24xi8>, vector<8xi8>
        %b0e = arith.extsi %b0 : vector<8xi8> to vector<8xi32>
        %m0 = arith.muli %a0b, %b0e : vector<8xi32>
        %s0 = arith.addi %acc, %m0 : vector<8xi32>
        affine.yield %s0 : vector<8xi32>
      }
      affine.vector_store %r, %c[%i, %j] : memref<4x24xi32>, vector<8xi32>
    }
  } {pbc.kind = "matmul"}
  return
}

// A k loop over half of the panel's rows (a K block): 128 * sum_k B is
// summed in the loop, one more vpdpbusd of 0x80 bytes per panel vector.
// CHECK-LABEL: func.func @half_panel
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<16x64xi8>
// CHECK-NOT: memref.alloc
// CHECK: %[[BIAS:.*]] = arith.constant dense<-128> : vector<64xi8>
// CHECK: %[[L:.*]]:2 = affine.for %{{.*}} = 32 to 64 step 4 iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}})
// CHECK: %[[B:.*]] = affine.vector_load
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%{{.*}}, %[[BIAS]], %[[B]])
// CHECK: arith.subi %[[L]]#0, %[[L]]#1
func.func @half_panel(%a: memref<4x64xi8>, %b: memref<64x16xi8>, %c: memref<4x16xi32>) {
  %zero = arith.constant dense<0> : vector<16xi32>
  affine.for %i = 0 to 4 {
    %r = affine.for %k = 32 to 64 iter_args(%acc = %zero) -> (vector<16xi32>) {
      %a0 = affine.load %a[%i, %k] : memref<4x64xi8>
      %a0e = arith.extsi %a0 : i8 to i32
      %a0b = vector.broadcast %a0e : i32 to vector<16xi32>
      %b0 = affine.vector_load %b[%k, 0] : memref<64x16xi8>, vector<16xi8>
      %b0e = arith.extsi %b0 : vector<16xi8> to vector<16xi32>
      %m0 = arith.muli %a0b, %b0e : vector<16xi32>
      %s0 = arith.addi %acc, %m0 : vector<16xi32>
      affine.yield %s0 : vector<16xi32>
    }
    affine.vector_store %r, %c[%i, 0] : memref<4x16xi32>, vector<16xi32>
  } {pbc.kind = "matmul"}
  return
}

// A constant B (a model's weight) read where it is, by a k loop over blocks
// of 4 of its 8 rows: laid out at compile time into a constant global, with
// the column sums of each block (128 * (0+1+2+3), 128 * (4+5+6+7)), both
// checked at the top; the kernel reads its block's sums before the loop,
// and no relayout nest runs.
// CHECK-LABEL: func.func @constant_blocks
// CHECK-DAG: %[[S:.*]] = memref.get_global @w_column_sums
// CHECK-DAG: %[[W4:.*]] = memref.get_global @w_quads
// CHECK-NOT: } {pbc.copy
// CHECK: affine.for %[[KB:.*]] = 0 to 8 step 4 {
// CHECK: %[[B:.*]] = affine.vector_load %[[S]][%{{.*}} floordiv 4, 0] : memref<2x16xi32>, vector<16xi32>
// CHECK: %[[L:.*]] = affine.for %{{.*}} = #map{{.*}}(%[[KB]]) to #map{{.*}}(%[[KB]]) step 4
// CHECK: affine.vector_load %[[W4]]
// CHECK: arith.subi %[[L]], %[[B]]
memref.global "private" constant @w : memref<8x16xi8> = dense<[[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2], [3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3], [4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5], [6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6], [7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7]]>
func.func @constant_blocks(%a: memref<4x8xi8>, %c: memref<4x16xi32>) {
  %zero = arith.constant dense<0> : vector<16xi32>
  %b = memref.get_global @w : memref<8x16xi8>
  affine.for %i = 0 to 4 {
    affine.vector_store %zero, %c[%i, 0] : memref<4x16xi32>, vector<16xi32>
    affine.for %kb = 0 to 8 step 4 {
      %c0 = affine.vector_load %c[%i, 0] : memref<4x16xi32>, vector<16xi32>
      %r = affine.for %k = affine_map<(d0) -> (d0)>(%kb) to affine_map<(d0) -> (d0 + 4)>(%kb) iter_args(%acc = %c0) -> (vector<16xi32>) {
        %a0 = affine.load %a[%i, %k] : memref<4x8xi8>
        %a0e = arith.extsi %a0 : i8 to i32
        %a0b = vector.broadcast %a0e : i32 to vector<16xi32>
        %b0 = affine.vector_load %b[%k, 0] : memref<8x16xi8>, vector<16xi8>
        %b0e = arith.extsi %b0 : vector<16xi8> to vector<16xi32>
        %m0 = arith.muli %a0b, %b0e : vector<16xi32>
        %s0 = arith.addi %acc, %m0 : vector<16xi32>
        affine.yield %s0 : vector<16xi32>
      }
      affine.vector_store %r, %c[%i, 0] : memref<4x16xi32>, vector<16xi32>
    }
  } {pbc.kind = "matmul"}
  return
}

// A's bytes widened unsigned (u8: asymmetric activations): vpdpbusd takes
// them as they are, no flip and nothing to take off after the loop.
// CHECK-LABEL: func.func @unsigned_a
// CHECK-NOT: arith.xori
// CHECK: %[[L:.*]] = affine.for %{{.*}} = 0 to 64 step 4 iter_args(%{{.*}} = %{{.*}}) -> (vector<16xi32>)
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK-NOT: arith.subi
// CHECK: affine.vector_store %[[L]]
func.func @unsigned_a(%a: memref<4x64xi8>, %b: memref<64x16xi8>, %c: memref<4x16xi32>) {
  %zero = arith.constant dense<0> : vector<16xi32>
  affine.for %i = 0 to 4 {
    %r = affine.for %k = 0 to 64 iter_args(%acc = %zero) -> (vector<16xi32>) {
      %a0 = affine.load %a[%i, %k] : memref<4x64xi8>
      %a0e = arith.extui %a0 : i8 to i32
      %a0b = vector.broadcast %a0e : i32 to vector<16xi32>
      %b0 = affine.vector_load %b[%k, 0] : memref<64x16xi8>, vector<16xi8>
      %b0e = arith.extsi %b0 : vector<16xi8> to vector<16xi32>
      %m0 = arith.muli %a0b, %b0e : vector<16xi32>
      %s0 = arith.addi %acc, %m0 : vector<16xi32>
      affine.yield %s0 : vector<16xi32>
    }
    affine.vector_store %r, %c[%i, 0] : memref<4x16xi32>, vector<16xi32>
  } {pbc.kind = "matmul"}
  return
}

// Not taken: a trip of k that four does not divide; a panel row that is
// not a multiple of 4 at the quad starts (k + 1); a body with anything
// else in it.
// CHECK-LABEL: func.func @not_taken
// CHECK-NOT: vpdpbusd
// CHECK: return
func.func @not_taken(%a: memref<4x64xi8>, %b: memref<64x16xi8>, %c: memref<4x16xi32>, %s: i32) {
  %zero = arith.constant dense<0> : vector<16xi32>
  affine.for %i = 0 to 4 {
    %r = affine.for %k = 0 to 62 iter_args(%acc = %zero) -> (vector<16xi32>) {
      %a0 = affine.load %a[%i, %k] : memref<4x64xi8>
      %a0e = arith.extsi %a0 : i8 to i32
      %a0b = vector.broadcast %a0e : i32 to vector<16xi32>
      %b0 = affine.vector_load %b[%k, 0] : memref<64x16xi8>, vector<16xi8>
      %b0e = arith.extsi %b0 : vector<16xi8> to vector<16xi32>
      %m0 = arith.muli %a0b, %b0e : vector<16xi32>
      %s0 = arith.addi %acc, %m0 : vector<16xi32>
      affine.yield %s0 : vector<16xi32>
    }
    affine.vector_store %r, %c[%i, 0] : memref<4x16xi32>, vector<16xi32>
    %r1 = affine.for %k = 0 to 60 iter_args(%acc = %zero) -> (vector<16xi32>) {
      %a0 = affine.load %a[%i, %k] : memref<4x64xi8>
      %a0e = arith.extsi %a0 : i8 to i32
      %a0b = vector.broadcast %a0e : i32 to vector<16xi32>
      %b0 = affine.vector_load %b[%k + 1, 0] : memref<64x16xi8>, vector<16xi8>
      %b0e = arith.extsi %b0 : vector<16xi8> to vector<16xi32>
      %m0 = arith.muli %a0b, %b0e : vector<16xi32>
      %s0 = arith.addi %acc, %m0 : vector<16xi32>
      affine.yield %s0 : vector<16xi32>
    }
    affine.vector_store %r1, %c[%i, 0] : memref<4x16xi32>, vector<16xi32>
    %r2 = affine.for %k = 0 to 64 iter_args(%acc = %zero) -> (vector<16xi32>) {
      %a0 = affine.load %a[%i, %k] : memref<4x64xi8>
      %a0e = arith.extsi %a0 : i8 to i32
      %a0b = vector.broadcast %a0e : i32 to vector<16xi32>
      %b0 = affine.vector_load %b[%k, 0] : memref<64x16xi8>, vector<16xi8>
      %b0e = arith.extsi %b0 : vector<16xi8> to vector<16xi32>
      %m0 = arith.muli %a0b, %b0e : vector<16xi32>
      %sb = vector.broadcast %s : i32 to vector<16xi32>
      %m1 = arith.addi %m0, %sb : vector<16xi32>
      %s0 = arith.addi %acc, %m1 : vector<16xi32>
      affine.yield %s0 : vector<16xi32>
    }
    affine.vector_store %r2, %c[%i, 0] : memref<4x16xi32>, vector<16xi32>
  } {pbc.kind = "matmul"}
  return
}

// Not taken either: B read where it is, but the function writes it.
// CHECK-LABEL: func.func @b_written
// CHECK-NOT: vpdpbusd
// CHECK: return
func.func @b_written(%a: memref<4x64xi8>, %b: memref<64x16xi8>, %c: memref<4x16xi32>) {
  %zero = arith.constant dense<0> : vector<16xi32>
  affine.for %i = 0 to 4 {
    %r = affine.for %k = 0 to 64 iter_args(%acc = %zero) -> (vector<16xi32>) {
      %a0 = affine.load %a[%i, %k] : memref<4x64xi8>
      %a0e = arith.extsi %a0 : i8 to i32
      %a0b = vector.broadcast %a0e : i32 to vector<16xi32>
      %b0 = affine.vector_load %b[%k, 0] : memref<64x16xi8>, vector<16xi8>
      %b0e = arith.extsi %b0 : vector<16xi8> to vector<16xi32>
      %m0 = arith.muli %a0b, %b0e : vector<16xi32>
      %s0 = arith.addi %acc, %m0 : vector<16xi32>
      affine.yield %s0 : vector<16xi32>
    }
    affine.vector_store %r, %c[%i, 0] : memref<4x16xi32>, vector<16xi32>
  } {pbc.kind = "matmul"}
  %v = arith.constant dense<1> : vector<16xi8>
  affine.vector_store %v, %b[0, 0] : memref<64x16xi8>, vector<16xi8>
  return
}
