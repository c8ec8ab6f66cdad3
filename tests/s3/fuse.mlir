// pbc-fuse fuses a producer into its consumer when both have the same band
// and the consumer reads exactly what the producer wrote in the same
// iteration: one nest, the produced value forwarded (no load), the local
// intermediate buffer gone. It must not fuse a stencil consumer (reads a
// neighbour), nor into a matmul-kind nest.
// RUN: pbc-opt %s -p 'pbc-fuse' | FileCheck %s
// CHECK-LABEL: func.func @chain
// CHECK-NOT: memref.alloc
// CHECK: affine.for %[[I:.*]] = 0 to 64 {
// CHECK-NEXT: %[[X:.*]] = affine.load %arg0[%[[I]]]
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[X]], %[[X]]
// CHECK-NEXT: %[[X2:.*]] = affine.load %arg0[%[[I]]]
// CHECK-NEXT: %[[A:.*]] = arith.addf %[[M]], %[[X2]]
// CHECK-NEXT: affine.store %[[A]], %arg1[%[[I]]]
// CHECK-NEXT: }
// CHECK-NOT: affine.for
func.func @chain(%x: memref<64xf32>, %y: memref<64xf32>) {
  %t = memref.alloc() : memref<64xf32>
  affine.for %i = 0 to 64 {
    %a = affine.load %x[%i] : memref<64xf32>
    %m = arith.mulf %a, %a : f32
    affine.store %m, %t[%i] : memref<64xf32>
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 64 {
    %b = affine.load %t[%i] : memref<64xf32>
    %c = affine.load %x[%i] : memref<64xf32>
    %s = arith.addf %b, %c : f32
    affine.store %s, %y[%i] : memref<64xf32>
  } {pbc.kind = "pointwise"}
  memref.dealloc %t : memref<64xf32>
  return
}
// CHECK-LABEL: func.func @stencil
// CHECK: affine.for
// CHECK: affine.for
func.func @stencil(%x: memref<66xf32>, %y: memref<64xf32>) {
  %t = memref.alloc() : memref<66xf32>
  affine.for %i = 0 to 64 {
    %a = affine.load %x[%i] : memref<66xf32>
    affine.store %a, %t[%i] : memref<66xf32>
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 64 {
    %b = affine.load %t[%i + 1] : memref<66xf32>
    affine.store %b, %y[%i] : memref<64xf32>
  } {pbc.kind = "pointwise"}
  memref.dealloc %t : memref<66xf32>
  return
}
// The consumer reads the produced element, and also its neighbour through a
// shifted view of the same buffer (a stencil in disguise): not fused.
// CHECK-LABEL: func.func @through_view
// CHECK: affine.for
// CHECK: affine.for
func.func @through_view(%x: memref<65xf32>, %y: memref<64xf32>) {
  %t = memref.alloc() : memref<65xf32>
  %v = memref.subview %t[1] [64] [1] : memref<65xf32> to memref<64xf32, strided<[1], offset: 1>>
  affine.for %i = 0 to 64 {
    %a = affine.load %x[%i] : memref<65xf32>
    affine.store %a, %t[%i] : memref<65xf32>
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 64 {
    %b = affine.load %v[%i] : memref<64xf32, strided<[1], offset: 1>>
    %c = affine.load %t[%i] : memref<65xf32>
    %s = arith.addf %b, %c : f32
    affine.store %s, %y[%i] : memref<64xf32>
  } {pbc.kind = "pointwise"}
  memref.dealloc %t : memref<65xf32>
  return
}
