// pbc-promote-accumulators turns a load/store pair of one element, invariant
// in the loop, into an iter_arg (loaded before, stored after), climbing out
// of nested reduction loops; it must not when another access may touch the
// same element.
// A constant global (a convolution's filter) aliases no argument: the
// accumulator read beside it is promoted too.
// RUN: pbc-opt %s -p 'pbc-promote-accumulators' | FileCheck %s
// CHECK-LABEL: func.func @dot2
// CHECK: %[[INIT:.*]] = affine.load %arg2[0] : memref<4xf32>
// CHECK-NEXT: %[[R:.*]] = affine.for %{{.*}} = 0 to 8 iter_args(%[[A:.*]] = %[[INIT]]) -> (f32) {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 16 iter_args(%{{.*}} = %[[A]]) -> (f32) {
// CHECK-NOT: affine.store
// CHECK: affine.store %[[R]], %arg2[0] : memref<4xf32>
func.func @dot2(%x: memref<8x16xf32>, %y: memref<8x16xf32>, %o: memref<4xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 16 {
      %a = affine.load %x[%i, %j] : memref<8x16xf32>
      %b = affine.load %y[%i, %j] : memref<8x16xf32>
      %c = affine.load %o[0] : memref<4xf32>
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      affine.store %s, %o[0] : memref<4xf32>
    }
  }
  return
}
// o[0] is also read through o[%i] (may be the same element): no promotion.
// CHECK-LABEL: func.func @may_alias
// CHECK-NOT: iter_args
func.func @may_alias(%x: memref<4xf32>, %o: memref<4xf32>) {
  affine.for %i = 0 to 4 {
    %c = affine.load %o[0] : memref<4xf32>
    %d = affine.load %o[%i] : memref<4xf32>
    %s = arith.addf %c, %d : f32
    affine.store %s, %o[0] : memref<4xf32>
  }
  return
}
// Views of distinct buffers (a collapse_shape of a local buffer, as a
// reshape between two matmuls leaves it): the accumulator is promoted.
// CHECK-LABEL: func.func @through_view
// CHECK: affine.for %{{.*}} = 0 to 8 iter_args(
func.func @through_view(%o: memref<4xf32>) {
  %buf = memref.alloc() : memref<2x4xf32>
  %v = memref.collapse_shape %buf [[0, 1]] : memref<2x4xf32> into memref<8xf32>
  affine.for %i = 0 to 8 {
    %a = affine.load %v[%i] : memref<8xf32>
    %c = affine.load %o[0] : memref<4xf32>
    %s = arith.addf %c, %a : f32
    affine.store %s, %o[0] : memref<4xf32>
  }
  return
}
// Must not: the accumulator's buffer is also read through a view of itself.
// CHECK-LABEL: func.func @view_of_accumulator
// CHECK-NOT: iter_args
func.func @view_of_accumulator() {
  %buf = memref.alloc() : memref<2x4xf32>
  %v = memref.collapse_shape %buf [[0, 1]] : memref<2x4xf32> into memref<8xf32>
  affine.for %i = 0 to 8 {
    %a = affine.load %v[%i] : memref<8xf32>
    %c = affine.load %buf[0, 0] : memref<2x4xf32>
    %s = arith.addf %c, %a : f32
    affine.store %s, %buf[0, 0] : memref<2x4xf32>
  }
  return
}
memref.global "private" constant @taps : memref<5xf32> = dense<[1.0, 4.0, 6.0, 4.0, 1.0]>
// CHECK-LABEL: func.func @filter_global
// CHECK: %[[INIT:.*]] = affine.load %arg1[%{{.*}}] : memref<64xf32>
// CHECK-NEXT: %[[R:.*]] = affine.for %{{.*}} = 0 to 5 iter_args(%{{.*}} = %[[INIT]]) -> (f32) {
// CHECK-NOT: affine.store
// CHECK: affine.store %[[R]], %arg1[%{{.*}}] : memref<64xf32>
func.func @filter_global(%x: memref<68xf32>, %y: memref<64xf32>) {
  %t = memref.get_global @taps : memref<5xf32>
  affine.for %i = 0 to 64 {
    affine.for %k = 0 to 5 {
      %a = affine.load %x[%i + %k] : memref<68xf32>
      %w = affine.load %t[%k] : memref<5xf32>
      %o = affine.load %y[%i] : memref<64xf32>
      %p = arith.mulf %a, %w : f32
      %s = arith.addf %o, %p : f32
      affine.store %s, %y[%i] : memref<64xf32>
    }
  }
  return
}
