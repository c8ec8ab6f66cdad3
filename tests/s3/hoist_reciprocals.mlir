// pbc-hoist-reciprocals turns a division by a value the innermost loop does
// not change (a softmax's row sum, read at the row's index, scalar or
// broadcast to a vector) into a multiplication by its reciprocal, computed
// once before the loop; the load of the divisor is cloned there. It must
// keep a division whose divisor varies along the loop, is read from a
// memref the loop writes, or is read in a loop that may not run.
// RUN: pbc-opt %s -p 'pbc-hoist-reciprocals' | FileCheck %s

// CHECK-LABEL: func.func @row_sum
// CHECK: affine.for %[[I:.*]] = 0 to 8 {
// CHECK: %[[S:.*]] = affine.load %arg1[%[[I]]]
// CHECK: %[[R:.*]] = arith.divf %{{.*}}, %[[S]] : f32
// CHECK: affine.for %[[J:.*]] = 0 to 64 {
// CHECK-NOT: arith.divf
// CHECK: %[[X:.*]] = affine.load %arg0[%[[I]], %[[J]]]
// CHECK: arith.mulf %[[X]], %[[R]] : f32
// CHECK: return
func.func @row_sum(%x: memref<8x64xf32>, %s: memref<8xf32>, %y: memref<8x64xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 64 {
      %a = affine.load %x[%i, %j] : memref<8x64xf32>
      %b = affine.load %s[%i] : memref<8xf32>
      %c = arith.divf %a, %b : f32
      affine.store %c, %y[%i, %j] : memref<8x64xf32>
    }
  }
  return
}

// CHECK-LABEL: func.func @broadcast
// CHECK: %[[R:.*]] = arith.divf %{{.*}}, %arg1 : f32
// CHECK: affine.for
// CHECK-NOT: arith.divf
// CHECK: %[[B:.*]] = vector.broadcast %[[R]] : f32 to vector<16xf32>
// CHECK: arith.mulf %{{.*}}, %[[B]] : vector<16xf32>
// CHECK: return
func.func @broadcast(%x: memref<64xf32>, %s: f32, %y: memref<64xf32>) {
  affine.for %j = 0 to 64 step 16 {
    %a = affine.vector_load %x[%j] : memref<64xf32>, vector<16xf32>
    %b = vector.broadcast %s : f32 to vector<16xf32>
    %c = arith.divf %a, %b : vector<16xf32>
    affine.vector_store %c, %y[%j] : memref<64xf32>, vector<16xf32>
  }
  return
}

// CHECK-LABEL: func.func @varying
// CHECK-NOT: arith.mulf
// CHECK: affine.for
// CHECK: arith.divf
// CHECK-NOT: arith.mulf
// CHECK: return
func.func @varying(%x: memref<64xf32>, %d: memref<64xf32>, %y: memref<64xf32>) {
  affine.for %j = 0 to 64 {
    %a = affine.load %x[%j] : memref<64xf32>
    %b = affine.load %d[%j] : memref<64xf32>
    %c = arith.divf %a, %b : f32
    affine.store %c, %y[%j] : memref<64xf32>
  }
  return
}

// CHECK-LABEL: func.func @written
// CHECK: affine.for
// CHECK: arith.divf
// CHECK-NOT: arith.mulf
// CHECK: return
func.func @written(%x: memref<64xf32>, %s: memref<1xf32>) {
  affine.for %j = 0 to 64 {
    %a = affine.load %x[%j] : memref<64xf32>
    %b = affine.load %s[0] : memref<1xf32>
    %c = arith.divf %a, %b : f32
    affine.store %c, %s[0] : memref<1xf32>
  }
  return
}

// A loop that may not run (its bound a symbol): its divisor's load is not
// read before it.
// CHECK-LABEL: func.func @maybe_empty
// CHECK: affine.for
// CHECK: arith.divf
// CHECK-NOT: arith.mulf
// CHECK: return
func.func @maybe_empty(%x: memref<64xf32>, %s: memref<1xf32>, %y: memref<64xf32>, %n: index) {
  affine.for %j = 0 to %n {
    %a = affine.load %x[%j] : memref<64xf32>
    %b = affine.load %s[0] : memref<1xf32>
    %c = arith.divf %a, %b : f32
    affine.store %c, %y[%j] : memref<64xf32>
  }
  return
}

// A quotient that is rounded (QuantizeLinear's round(x / scale)) keeps its
// division: 2.475 / 0.05 rounds to 49, 2.475 * 20 to 50.
// CHECK-LABEL: func.func @rounded
// CHECK: affine.for
// CHECK: arith.divf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK-NOT: arith.mulf
// CHECK: math.roundeven
// CHECK: return
func.func @rounded(%x: memref<64xf32>, %y: memref<64xi8>) {
  %s = arith.constant 0.05 : f32
  affine.for %j = 0 to 64 step 16 {
    %a = affine.vector_load %x[%j] : memref<64xf32>, vector<16xf32>
    %b = vector.broadcast %s : f32 to vector<16xf32>
    %c = arith.divf %a, %b : vector<16xf32>
    %r = math.roundeven %c : vector<16xf32>
    %q = arith.fptosi %r : vector<16xf32> to vector<16xi8>
    affine.vector_store %q, %y[%j] : memref<64xi8>, vector<16xi8>
  }
  return
}

// Compared (a threshold): the division stays too.
// CHECK-LABEL: func.func @compared
// CHECK: affine.for
// CHECK: arith.divf
// CHECK-NOT: arith.mulf
// CHECK: return
func.func @compared(%x: memref<64xf32>, %s: f32, %y: memref<64xi1>) {
  %one = arith.constant 1.0 : f32
  affine.for %j = 0 to 64 {
    %a = affine.load %x[%j] : memref<64xf32>
    %c = arith.divf %a, %s : f32
    %d = arith.addf %c, %one : f32
    %t = arith.cmpf ogt, %d, %one : f32
    affine.store %t, %y[%j] : memref<64xi1>
  }
  return
}
