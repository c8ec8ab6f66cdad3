// pbc-free-after-last-use: a top-level buffer is freed right after the last
// top-level op that uses it or a view of it (a loop using it counts as one
// op), with both ends marked for manual deallocation; a buffer that is
// returned or passed to a call is left to the ownership pipeline.
// RUN: pbc-opt %s -p 'pbc-free-after-last-use' | FileCheck %s
// CHECK-LABEL: func.func @chain
// CHECK: %[[A:.*]] = memref.alloc() {bufferization.manual_deallocation} : memref<8xf32>
// CHECK: %[[B:.*]] = memref.alloc() {bufferization.manual_deallocation} : memref<8xf32>
// CHECK-NEXT: memref.copy %[[A]], %[[B]]
// CHECK-NEXT: memref.dealloc %[[A]] {bufferization.manual_deallocation}
// CHECK-NEXT: %[[V:.*]] = memref.subview %[[B]]
// CHECK: scf.for
// CHECK: memref.store {{.*}} %[[V]]
// CHECK: }
// CHECK-NEXT: memref.dealloc %[[B]] {bufferization.manual_deallocation}
// CHECK-NEXT: memref.copy %arg0, %arg1
// CHECK-NEXT: return
func.func @chain(%x: memref<8xf32>, %o: memref<8xf32>) {
  %a = memref.alloc() : memref<8xf32>
  memref.copy %x, %a : memref<8xf32> to memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  memref.copy %a, %b : memref<8xf32> to memref<8xf32>
  %v = memref.subview %b[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %one, %v[%i] : memref<4xf32, strided<[1]>>
  }
  memref.copy %x, %o : memref<8xf32> to memref<8xf32>
  return
}
// CHECK-LABEL: func.func @escapes
// CHECK: memref.alloc() : memref<8xf32>
// CHECK-NOT: manual_deallocation
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @escapes(%x: memref<8xf32>) -> memref<8xf32> {
  %a = memref.alloc() : memref<8xf32>
  memref.copy %x, %a : memref<8xf32> to memref<8xf32>
  return %a : memref<8xf32>
}
// CHECK-LABEL: func.func @unused
// CHECK: %[[U:.*]] = memref.alloc() {bufferization.manual_deallocation}
// CHECK-NEXT: memref.dealloc %[[U]]
func.func @unused(%x: memref<8xf32>) {
  %a = memref.alloc() : memref<8xf32>
  return
}
