// pbc-parallelize makes the outermost parallel loop of each nest an
// affine.parallel, keeps the nest's pbc.kind on it, descends past a
// non-parallel (reduction) outer loop, and skips loops below min-trip.
// RUN: pbc-opt %s -p 'pbc-parallelize{min-trip=4}' | FileCheck %s
// CHECK-LABEL: func.func @matmul
// CHECK: affine.parallel (%{{.*}}) = (0) to (16)
// CHECK: affine.for
// CHECK: affine.for
// CHECK: } {pbc.kind = "matmul"}
func.func @matmul(%a: memref<16x8xf32>, %b: memref<8x32xf32>, %c: memref<16x32xf32>) {
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 32 {
      affine.for %k = 0 to 8 {
        %x = affine.load %a[%i, %k] : memref<16x8xf32>
        %y = affine.load %b[%k, %j] : memref<8x32xf32>
        %z = affine.load %c[%i, %j] : memref<16x32xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<16x32xf32>
      }
    }
  } {pbc.kind = "matmul"}
  return
}
// The outer loop carries a dependence (column sums): the inner one is parallel.
// CHECK-LABEL: func.func @colsum
// CHECK: affine.for %{{.*}} = 0 to 16 {
// CHECK-NEXT: affine.parallel (%{{.*}}) = (0) to (32)
// CHECK: } {pbc.kind = "reduction"}
func.func @colsum(%a: memref<16x32xf32>, %o: memref<32xf32>) {
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 32 {
      %x = affine.load %a[%i, %j] : memref<16x32xf32>
      %s = affine.load %o[%j] : memref<32xf32>
      %t = arith.addf %s, %x : f32
      affine.store %t, %o[%j] : memref<32xf32>
    }
  } {pbc.kind = "reduction"}
  return
}
// Too few iterations to be worth a parallel region.
// CHECK-LABEL: func.func @tiny
// CHECK-NOT: affine.parallel
// CHECK: return
func.func @tiny(%a: memref<2xf32>) {
  affine.for %i = 0 to 2 {
    %x = affine.load %a[%i] : memref<2xf32>
    %y = arith.addf %x, %x : f32
    affine.store %y, %a[%i] : memref<2xf32>
  } {pbc.kind = "pointwise"}
  return
}
