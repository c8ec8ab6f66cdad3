// pbc-overlapping-loads: five taps 3 lanes apart along a row (offsets 0..12
// of a 16-lane vector) become two loads (at 0 and 12) and three shuffles;
// taps spanning three vectors (0..44) become loads at 0, 16, 32 and 44. Not
// rewritten: a store to the row's buffer between the taps, taps a whole
// vector apart (nothing to share), taps of different rows, and a lone tap.
// RUN: pbc-opt %s -p 'pbc-overlapping-loads' | FileCheck %s

// CHECK-LABEL: func.func @five_taps
// CHECK: affine.for %[[I:.*]] = 0 to 1024 step 16 {
// CHECK-NEXT: %[[A:.*]] = affine.vector_load %arg0[%[[I]]] :
// CHECK-NEXT: %[[B:.*]] = affine.vector_load %arg0[%[[I]] + 12] :
// CHECK-NOT: affine.vector_load
// CHECK: vector.shuffle %[[A]], %[[B]] [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22]
// CHECK: vector.shuffle %[[A]], %[[B]] [6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23, 24, 25]
// CHECK: vector.shuffle %[[A]], %[[B]] [9, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23, 24, 25, 26, 27, 28]
func.func @five_taps(%x: memref<1040xf32>, %y: memref<1024xf32>) {
  affine.for %i = 0 to 1024 step 16 {
    %a = affine.vector_load %x[%i] : memref<1040xf32>, vector<16xf32>
    %b = affine.vector_load %x[%i + 3] : memref<1040xf32>, vector<16xf32>
    %c = affine.vector_load %x[%i + 6] : memref<1040xf32>, vector<16xf32>
    %d = affine.vector_load %x[%i + 9] : memref<1040xf32>, vector<16xf32>
    %e = affine.vector_load %x[%i + 12] : memref<1040xf32>, vector<16xf32>
    %s1 = arith.addf %a, %b : vector<16xf32>
    %s2 = arith.addf %s1, %c : vector<16xf32>
    %s3 = arith.addf %s2, %d : vector<16xf32>
    %s4 = arith.addf %s3, %e : vector<16xf32>
    affine.vector_store %s4, %y[%i] : memref<1024xf32>, vector<16xf32>
  }
  return
}

// Taps less than a vector apart across three output vectors (offsets 0 to
// 44): covers at 0, 16, 32 and the last tap's own 44; the tap at 35 takes 13
// lanes of the cover at 32 and 3 of the one at 44 (its lanes 4 to 6: 20 to
// 22 in the shuffle's numbering).
// CHECK-LABEL: func.func @three_vectors
// CHECK: %[[L0:.*]] = affine.vector_load %arg0[%{{.*}}] :
// CHECK-NEXT: %[[L1:.*]] = affine.vector_load %arg0[%{{.*}} + 16] :
// CHECK-NEXT: %[[L2:.*]] = affine.vector_load %arg0[%{{.*}} + 32] :
// CHECK-NEXT: %[[L3:.*]] = affine.vector_load %arg0[%{{.*}} + 44] :
// CHECK-NOT: affine.vector_load
// CHECK: vector.shuffle %[[L0]], %[[L1]] [3,
// CHECK: vector.shuffle %[[L1]], %[[L2]] [13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28]
// CHECK: vector.shuffle %[[L2]], %[[L3]] [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22]
// CHECK: arith.addf %[[L1]], %[[L3]]
func.func @three_vectors(%x: memref<3120xf32>, %y: memref<3072xf32>) {
  affine.for %i = 0 to 3072 step 48 {
    %a = affine.vector_load %x[%i] : memref<3120xf32>, vector<16xf32>
    %b = affine.vector_load %x[%i + 3] : memref<3120xf32>, vector<16xf32>
    %c = affine.vector_load %x[%i + 16] : memref<3120xf32>, vector<16xf32>
    %f = affine.vector_load %x[%i + 29] : memref<3120xf32>, vector<16xf32>
    %d = affine.vector_load %x[%i + 35] : memref<3120xf32>, vector<16xf32>
    %e = affine.vector_load %x[%i + 44] : memref<3120xf32>, vector<16xf32>
    %s0 = arith.addf %a, %b : vector<16xf32>
    %s1 = arith.addf %s0, %f : vector<16xf32>
    %s2 = arith.addf %c, %e : vector<16xf32>
    affine.vector_store %s1, %y[%i] : memref<3072xf32>, vector<16xf32>
    affine.vector_store %s2, %y[%i + 16] : memref<3072xf32>, vector<16xf32>
    affine.vector_store %d, %y[%i + 32] : memref<3072xf32>, vector<16xf32>
  }
  return
}

// CHECK-LABEL: func.func @written_between
// CHECK-COUNT-2: affine.vector_load %arg0[
// CHECK-NOT: vector.shuffle
func.func @written_between(%x: memref<1040xf32>) {
  affine.for %i = 0 to 1024 step 16 {
    %a = affine.vector_load %x[%i] : memref<1040xf32>, vector<16xf32>
    affine.vector_store %a, %x[%i + 1] : memref<1040xf32>, vector<16xf32>
    %b = affine.vector_load %x[%i + 3] : memref<1040xf32>, vector<16xf32>
    %s = arith.addf %a, %b : vector<16xf32>
    affine.vector_store %s, %x[%i + 2] : memref<1040xf32>, vector<16xf32>
  }
  return
}

// Whole vectors apart, different rows, a lone tap: loads stay as they are.
// CHECK-LABEL: func.func @nothing_shared
// CHECK-COUNT-5: affine.vector_load %arg0[
// CHECK-NOT: vector.shuffle
func.func @nothing_shared(%x: memref<4x1040xf32>, %y: memref<4x1024xf32>) {
  affine.for %i = 0 to 1024 step 32 {
    %a = affine.vector_load %x[0, %i] : memref<4x1040xf32>, vector<16xf32>
    %b = affine.vector_load %x[0, %i + 16] : memref<4x1040xf32>, vector<16xf32>
    %c = affine.vector_load %x[1, %i + 3] : memref<4x1040xf32>, vector<16xf32>
    %d = affine.vector_load %x[2, %i] : memref<4x1040xf32>, vector<16xf32>
    %e = affine.vector_load %x[3, %i + 5] : memref<4x1040xf32>, vector<16xf32>
    %s1 = arith.addf %a, %c : vector<16xf32>
    %s2 = arith.addf %d, %e : vector<16xf32>
    affine.vector_store %s1, %y[0, %i] : memref<4x1024xf32>, vector<16xf32>
    affine.vector_store %s2, %y[1, %i] : memref<4x1024xf32>, vector<16xf32>
    affine.vector_store %b, %y[2, %i] : memref<4x1024xf32>, vector<16xf32>
  }
  return
}
