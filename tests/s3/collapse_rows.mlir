// pbc-collapse-rows: loops over whole rows of contiguous buffers whose rows
// can't fill 16-lane vectors (49 floats) become one loop over the elements,
// through views collapsing the rows; applied again, a 16 x 49 x 49 fill is
// one loop of 38,416 stores. A broadcast operand (b[j, k] read for every i)
// stops the merging at the loop that doesn't walk it; a scalar operand
// stays. Left alone: rows that fill vectors (64 floats), a row that is not
// the buffer's whole dimension, and a per-row operand (m[j]).
// RUN: pbc-opt %s -p 'pbc-collapse-rows{vector-bits=512}' | FileCheck %s
// Then pbc-vectorize sees whole vectors along the collapsed loop.
// RUN: pbc-opt %s -p 'pbc-collapse-rows{vector-bits=512};pbc-vectorize{vector-bits=512}' | FileCheck %s --check-prefix=VEC
// VEC-LABEL: func.func @fill
// VEC: affine.for %{{.*}} = 0 to 38416 step 16 {
// VEC: affine.vector_store %{{.*}} : memref<38416xf32>, vector<16xf32>
// CHECK-LABEL: func.func @fill
// CHECK: %[[R:.*]] = memref.collapse_shape %arg0 {{\[}}[0], [1, 2]] : memref<16x49x49xf32> into memref<16x2401xf32>
// CHECK: %[[A:.*]] = memref.collapse_shape %[[R]] {{\[}}[0, 1]] : memref<16x2401xf32> into memref<38416xf32>
// CHECK: affine.for %[[I:.*]] = 0 to 38416 {
// CHECK-NEXT: affine.store %{{.*}}, %[[A]][%[[I]]] : memref<38416xf32>
// CHECK-NEXT: } {pbc.kind = "pointwise"}
func.func @fill(%a: memref<16x49x49xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 49 {
      affine.for %k = 0 to 49 {
        affine.store %z, %a[%i, %j, %k] : memref<16x49x49xf32>
      }
    }
  } {pbc.kind = "pointwise"}
  return
}
// CHECK-LABEL: func.func @broadcast
// CHECK-DAG: %[[A:.*]] = memref.collapse_shape %arg0 {{\[}}[0], [1, 2]] : memref<4x49x49xf32> into memref<4x2401xf32>
// CHECK-DAG: %[[B:.*]] = memref.collapse_shape %arg1 {{\[}}[0, 1]] : memref<49x49xf32> into memref<2401xf32>
// CHECK-DAG: %[[O:.*]] = memref.collapse_shape %arg3 {{\[}}[0], [1, 2]] : memref<4x49x49xf32> into memref<4x2401xf32>
// CHECK: affine.for %[[I:.*]] = 0 to 4 {
// CHECK-NEXT: affine.for %[[J:.*]] = 0 to 2401 {
// CHECK-NEXT: affine.load %[[A]][%[[I]], %[[J]]]
// CHECK-NEXT: affine.load %[[B]][%[[J]]]
// CHECK-NEXT: affine.load %arg2[]
// CHECK: affine.store %{{.*}}, %[[O]][%[[I]], %[[J]]]
func.func @broadcast(%a: memref<4x49x49xf32>, %b: memref<49x49xf32>, %s: memref<f32>, %o: memref<4x49x49xf32>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 49 {
      affine.for %k = 0 to 49 {
        %x = affine.load %a[%i, %j, %k] : memref<4x49x49xf32>
        %y = affine.load %b[%j, %k] : memref<49x49xf32>
        %z = affine.load %s[] : memref<f32>
        %p = arith.addf %x, %y : f32
        %q = arith.mulf %p, %z : f32
        affine.store %q, %o[%i, %j, %k] : memref<4x49x49xf32>
      }
    }
  } {pbc.kind = "pointwise"}
  return
}
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: collapse_shape
// CHECK: return
func.func @left_alone(%a: memref<8x64xf32>, %b: memref<8x50xf32>, %m: memref<8xf32>, %c: memref<8x49xf32>) {
  %one = arith.constant 1.0 : f32
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 64 {
      affine.store %one, %a[%i, %j] : memref<8x64xf32>
    }
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 49 {
      affine.store %one, %b[%i, %j] : memref<8x50xf32>
    }
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 49 {
      %x = affine.load %m[%i] : memref<8xf32>
      affine.store %x, %c[%i, %j] : memref<8x49xf32>
    }
  } {pbc.kind = "pointwise"}
  return
}
