// pbc-vectorize-reductions: an innermost row reduction (accumulator in
// iter_args, the row read contiguously) gets a 16-lane vector accumulator and
// one horizontal reduction after the loop; a column reduction (strided
// loads: a gather) and a loop that stores stay scalar. The row is read with
// affine.vector_load (not MLIR's vector.transfer_read), so the dependence
// test still sees that the rows are independent: the row loop parallelizes.
// RUN: pbc-opt %s -p 'pbc-vectorize-reductions{vector-bits=512}' | FileCheck %s
// RUN: pbc-opt %s -p 'pbc-vectorize-reductions{vector-bits=512};pbc-parallelize' | FileCheck %s --check-prefix=PAR
// CHECK-LABEL: func.func @row_sum
// CHECK: affine.for %{{.*}} = 0 to 768 step 16 iter_args(%{{.*}} = %{{.*}}) -> (vector<16xf32>)
// CHECK-NOT: transfer_read
// CHECK: affine.vector_load %arg0[%{{.*}}, %{{.*}}] : memref<128x768xf32>, vector<16xf32>
// CHECK: vector.reduction <add>, %{{.*}} : vector<16xf32> into f32
// PAR-LABEL: func.func @row_sum
// PAR: affine.parallel (%{{.*}}) = (0) to (128)
// PAR: vector.reduction <add>
func.func @row_sum(%x: memref<128x768xf32>, %s: memref<128xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 128 {
    %r = affine.for %j = 0 to 768 iter_args(%acc = %zero) -> (f32) {
      %v = affine.load %x[%i, %j] : memref<128x768xf32>
      %a = arith.addf %acc, %v : f32
      affine.yield %a : f32
    }
    affine.store %r, %s[%i] : memref<128xf32>
  } {pbc.kind = "reduction"}
  return
}
// CHECK-LABEL: func.func @column_sum
// CHECK-NOT: vector
// CHECK: affine.for %{{.*}} = 0 to 128 iter_args
func.func @column_sum(%x: memref<128x768xf32>, %s: memref<768xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %j = 0 to 768 {
    %r = affine.for %i = 0 to 128 iter_args(%acc = %zero) -> (f32) {
      %v = affine.load %x[%i, %j] : memref<128x768xf32>
      %a = arith.addf %acc, %v : f32
      affine.yield %a : f32
    }
    affine.store %r, %s[%j] : memref<768xf32>
  }
  return
}
// CHECK-LABEL: func.func @stores
// CHECK-NOT: vector
// CHECK: affine.for %{{.*}} = 0 to 768 iter_args
func.func @stores(%x: memref<128x768xf32>, %y: memref<128x768xf32>, %s: memref<128xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 128 {
    %r = affine.for %j = 0 to 768 iter_args(%acc = %zero) -> (f32) {
      %v = affine.load %x[%i, %j] : memref<128x768xf32>
      %a = arith.addf %acc, %v : f32
      affine.store %a, %y[%i, %j] : memref<128x768xf32>
      affine.yield %a : f32
    }
    affine.store %r, %s[%i] : memref<128xf32>
  }
  return
}

// A row of one reduction over 128 vectors or more runs 4 accumulator chains
// (one vector<64xf32>, which LLVM splits); two reductions in one loop (a
// tile of dot products) keep one vector each.
// CHECK-LABEL: func.func @long_row_max
// CHECK: affine.for %{{.*}} = 0 to 2048 step 64 iter_args(%{{.*}} = %{{.*}}) -> (vector<64xf32>)
// CHECK: vector.reduction <maxnumf>, %{{.*}} : vector<64xf32> into f32
func.func @long_row_max(%x: memref<8x2048xf32>, %m: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %init = affine.load %m[%i] : memref<8xf32>
    %r = affine.for %j = 0 to 2048 iter_args(%acc = %init) -> (f32) {
      %a = affine.load %x[%i, %j] : memref<8x2048xf32>
      %b = arith.maxnumf %a, %acc : f32
      affine.yield %b : f32
    }
    affine.store %r, %m[%i] : memref<8xf32>
  }
  return
}
// CHECK-LABEL: func.func @two_dots
// CHECK: affine.for %{{.*}} = 0 to 2048 step 16 iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (vector<16xf32>, vector<16xf32>)
func.func @two_dots(%a: memref<2048xf32>, %b: memref<2x2048xf32>, %c: memref<2xf32>) {
  %z = arith.constant 0.0 : f32
  %r:2 = affine.for %k = 0 to 2048 iter_args(%s0 = %z, %s1 = %z) -> (f32, f32) {
    %x = affine.load %a[%k] : memref<2048xf32>
    %y0 = affine.load %b[0, %k] : memref<2x2048xf32>
    %y1 = affine.load %b[1, %k] : memref<2x2048xf32>
    %p0 = arith.mulf %x, %y0 : f32
    %p1 = arith.mulf %x, %y1 : f32
    %t0 = arith.addf %s0, %p0 : f32
    %t1 = arith.addf %s1, %p1 : f32
    affine.yield %t0, %t1 : f32, f32
  }
  affine.store %r#0, %c[0] : memref<2xf32>
  affine.store %r#1, %c[1] : memref<2xf32>
  return
}
// A row of 197 (prime: no lanes divide it): 12 whole vectors, then the last
// 5 elements in a scalar loop that starts from the vector part's sum, whose
// result the store takes. A whole tensor of 87381 elements: 4 chains of 16
// lanes over the first 87360, then 21 scalar ones.
// CHECK-LABEL: func.func @odd_row_sum
// CHECK: %[[V:.*]] = affine.for %{{.*}} = 0 to 192 step 16 iter_args(%{{.*}} = %{{.*}}) -> (vector<16xf32>)
// CHECK: %[[H:.*]] = vector.reduction <add>, %[[V]] : vector<16xf32> into f32
// CHECK: %[[R:.*]] = affine.for %{{.*}} = 192 to 197 iter_args(%{{.*}} = %[[H]]) -> (f32)
// CHECK: affine.store %[[R]], %arg1[%{{.*}}]
// CHECK-LABEL: func.func @odd_total
// CHECK: affine.for %{{.*}} = 0 to 87360 step 64 iter_args(%{{.*}} = %{{.*}}) -> (vector<64xf32>)
// CHECK: affine.for %{{.*}} = 87360 to 87381 iter_args
// A short odd row (23: fewer than 4 vectors) stays scalar.
// CHECK-LABEL: func.func @short_odd_row
// CHECK-NOT: vector
// CHECK: return
func.func @odd_row_sum(%x: memref<64x197xf32>, %s: memref<64xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 64 {
    %r = affine.for %j = 0 to 197 iter_args(%acc = %zero) -> (f32) {
      %v = affine.load %x[%i, %j] : memref<64x197xf32>
      %a = arith.addf %acc, %v : f32
      affine.yield %a : f32
    }
    affine.store %r, %s[%i] : memref<64xf32>
  }
  return
}
func.func @odd_total(%x: memref<87381xf32>, %s: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  %r = affine.for %j = 0 to 87381 iter_args(%acc = %zero) -> (f32) {
    %v = affine.load %x[%j] : memref<87381xf32>
    %a = arith.addf %acc, %v : f32
    affine.yield %a : f32
  } {pbc.kind = "reduction"}
  affine.store %r, %s[] : memref<f32>
  return
}
func.func @short_odd_row(%x: memref<64x23xf32>, %s: memref<64xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 64 {
    %r = affine.for %j = 0 to 23 iter_args(%acc = %zero) -> (f32) {
      %v = affine.load %x[%i, %j] : memref<64x23xf32>
      %a = arith.addf %acc, %v : f32
      affine.yield %a : f32
    }
    affine.store %r, %s[%i] : memref<64xf32>
  }
  return
}
// A row reduction whose bounds take an outer index (a tile of K) still
// gets vector accumulators when the lanes divide its trip.
// CHECK-LABEL: func.func @tiled_row_sum
// CHECK: affine.for %{{.*}} = #{{.*}}(%{{.*}}) to #{{.*}}(%{{.*}}) step 16 iter_args(%{{.*}} = %{{.*}}) -> (vector<16xf32>)
// CHECK: vector.reduction <add>
// A trip no full vector divides, from a lower bound other than 0: not split
// (the split restates bounds from 0), the loop stays whole and scalar.
// CHECK-LABEL: func.func @odd_row_from_five
// CHECK: affine.for %{{.*}} = 5 to 202 iter_args
// CHECK-NOT: vector
// CHECK: return
func.func @tiled_row_sum(%x: memref<8x256xf32>, %s: memref<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 8 {
    affine.for %kt = 0 to 256 step 64 {
      %r = affine.for %k = affine_map<(d0) -> (d0)>(%kt) to affine_map<(d0) -> (d0 + 64)>(%kt) iter_args(%acc = %zero) -> (f32) {
        %v = affine.load %x[%i, %k] : memref<8x256xf32>
        %a = arith.addf %acc, %v : f32
        affine.yield %a : f32
      }
      affine.store %r, %s[%i, %kt floordiv 64] : memref<8x4xf32>
    }
  }
  return
}
func.func @odd_row_from_five(%x: memref<64x202xf32>, %s: memref<64xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 64 {
    %r = affine.for %j = 5 to 202 iter_args(%acc = %zero) -> (f32) {
      %v = affine.load %x[%i, %j] : memref<64x202xf32>
      %a = arith.addf %acc, %v : f32
      affine.yield %a : f32
    }
    affine.store %r, %s[%i] : memref<64xf32>
  }
  return
}
// A reduction whose induction variable is a value, not only an index (a
// prefix sum as a triangular reduction: x[j] where j <= i) stays scalar:
// MLIR's vectorizer crashed on it.
// CHECK-LABEL: func.func @prefix_sum
// CHECK-NOT: vector
// CHECK: arith.cmpi ule
func.func @prefix_sum(%x: memref<4x33xf32>, %s: memref<4x33xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %r = 0 to 4 {
    affine.for %i = 0 to 33 {
      %init = affine.load %s[%r, %i] : memref<4x33xf32>
      %t = affine.for %j = 0 to 33 iter_args(%acc = %init) -> (f32) {
        %v = affine.load %x[%r, %j] : memref<4x33xf32>
        %keep = arith.cmpi ule, %j, %i : index
        %w = arith.select %keep, %v, %zero : f32
        %a = arith.addf %w, %acc : f32
        affine.yield %a : f32
      }
      affine.store %t, %s[%r, %i] : memref<4x33xf32>
    }
  } {pbc.kind = "reduction"}
  return
}
