// pbcLoopIsParallel's fast path (no integer program): a loop is parallel
// when every access that may alias a write is the write's own element and
// the write moves to a new element each iteration. A case that breaks one
// condition is left to MLIR's dependence test: a read one element ahead of
// the write is serial; so is i, where the write's subscript mixes it with
// an inner loop (i + k), while k alone is parallel.
// RUN: pbc-opt %s -p 'pbc-parallelize{min-trip=2}' | FileCheck %s
// CHECK-LABEL: func.func @in_place
// CHECK: affine.parallel (%{{.*}}) = (0) to (64)
func.func @in_place(%a: memref<64x32xf32>, %b: memref<32xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 32 {
      %x = affine.load %a[%i, %j] : memref<64x32xf32>
      %y = affine.load %b[%j] : memref<32xf32>
      %s = arith.addf %x, %y : f32
      affine.store %s, %a[%i, %j] : memref<64x32xf32>
    }
  } {pbc.kind = "pointwise"}
  return
}
// CHECK-LABEL: func.func @read_ahead
// CHECK-NOT: affine.parallel
// CHECK: return
func.func @read_ahead(%a: memref<65xf32>) {
  affine.for %i = 0 to 64 {
    %x = affine.load %a[%i + 1] : memref<65xf32>
    affine.store %x, %a[%i] : memref<65xf32>
  } {pbc.kind = "pointwise"}
  return
}
// CHECK-LABEL: func.func @mixed_subscript
// CHECK: affine.for
// CHECK-NEXT: affine.parallel (%{{.*}}) = (0) to (8)
func.func @mixed_subscript(%a: memref<72xf32>) {
  %one = arith.constant 1.0 : f32
  affine.for %i = 0 to 64 {
    affine.for %k = 0 to 8 {
      %x = affine.load %a[%i + %k] : memref<72xf32>
      %s = arith.addf %x, %one : f32
      affine.store %s, %a[%i + %k] : memref<72xf32>
    }
  } {pbc.kind = "pointwise"}
  return
}
