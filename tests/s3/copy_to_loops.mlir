// pbc-copy-to-loops: a static memref.copy (here into a strided view) becomes
// an affine nest of loads and stores, which S3 vectorizes and parallelizes.
// RUN: pbc-opt %s -p 'pbc-copy-to-loops' | FileCheck %s
// CHECK-LABEL: func.func @into_view
// CHECK-NOT: memref.copy
// CHECK: affine.for %[[I:.*]] = 0 to 4 {
// CHECK-NEXT: affine.for %[[J:.*]] = 0 to 8 {
// CHECK-NEXT: %[[V:.*]] = affine.load %arg0[%[[I]], %[[J]]] : memref<4x8xf32>
// CHECK-NEXT: affine.store %[[V]], %{{.*}}[%[[I]], %[[J]]] : memref<4x8xf32, strided<[10, 1], offset: 11>>
func.func @into_view(%a: memref<4x8xf32>, %b: memref<6x10xf32>) {
  %v = memref.subview %b[1, 1] [4, 8] [1, 1] : memref<6x10xf32> to memref<4x8xf32, strided<[10, 1], offset: 11>>
  memref.copy %a, %v : memref<4x8xf32> to memref<4x8xf32, strided<[10, 1], offset: 11>>
  return
}
