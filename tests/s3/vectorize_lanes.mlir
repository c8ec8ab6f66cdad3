// pbc-vectorize runs an innermost loop the full lanes don't divide in full
// vectors up to the last multiple, and its tail in a copy of the loop, in
// the widest lanes that divide it: 24 floats on 512-bit vectors are one
// vector of 16 and one of 8; 1000 are 62 of 16 and one of 8.
// RUN: pbc-opt %s -p 'pbc-vectorize{vector-bits=512}' | FileCheck %s
// CHECK-LABEL: func.func @trip24
// CHECK: affine.for %{{.*}} = 0 to 16 step 16 {
// CHECK: affine.vector_load %arg0[%{{.*}}] : memref<24xf32>, vector<16xf32>
// CHECK: affine.for %[[T:.*]] = 0 to 8 step 8 {
// CHECK-NEXT: %[[A:.*]] = affine.apply #{{.*}}(%c16, %[[T]])
// CHECK-NEXT: affine.vector_load %arg0[%[[A]]] : memref<24xf32>, vector<8xf32>
func.func @trip24(%x: memref<24xf32>, %y: memref<24xf32>) {
  affine.for %i = 0 to 24 {
    %a = affine.load %x[%i] : memref<24xf32>
    %m = arith.mulf %a, %a : f32
    affine.store %m, %y[%i] : memref<24xf32>
  }
  return
}
// CHECK-LABEL: func.func @trip1000
// CHECK: affine.for %{{.*}} = 0 to 992 step 16 {
// CHECK: affine.for %{{.*}} = 0 to 8 step 8 {
// CHECK: vector<8xf32>
func.func @trip1000(%x: memref<1000xf32>, %y: memref<1000xf32>) {
  affine.for %i = 0 to 1000 {
    %a = affine.load %x[%i] : memref<1000xf32>
    affine.store %a, %y[%i] : memref<1000xf32>
  }
  return
}
// The full width when it divides.
// CHECK-LABEL: func.func @trip64
// CHECK: affine.for %{{.*}} = 0 to 64 step 16 {
func.func @trip64(%x: memref<64xf32>, %y: memref<64xf32>) {
  affine.for %i = 0 to 64 {
    %a = affine.load %x[%i] : memref<64xf32>
    affine.store %a, %y[%i] : memref<64xf32>
  }
  return
}
