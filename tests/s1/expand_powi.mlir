// pbc-expand-powi: math.fpowi by a constant integer becomes multiplications
// by repeated squaring (a reciprocal for a negative exponent, 1 for 0); a
// non-constant 64-bit exponent is a located error; an i32 one stays.
// RUN: pbc-opt -p 'pbc-expand-powi' %s | FileCheck %s
// RUN: not pbc-opt -p 'pbc-expand-powi' %S/inputs/powi_runtime_i64.mlir 2>&1 | FileCheck %s --check-prefix=ERR
// ERR: powi_runtime_i64.mlir:2:8: error: math.fpowi with a 64-bit exponent that is not a constant (or past 64) is not supported

// CHECK-LABEL: func.func @cube
// CHECK-NOT: math.fpowi
// CHECK: %[[SQ:.*]] = arith.mulf %arg0, %arg0 : f32
// CHECK: %[[CUBE:.*]] = arith.mulf %arg0, %[[SQ]] : f32
// CHECK: return %[[CUBE]]
func.func @cube(%x: f32) -> f32 {
  %c3 = arith.constant 3 : i64
  %r = math.fpowi %x, %c3 : f32, i64
  return %r : f32
}

// CHECK-LABEL: func.func @inverse_square
// CHECK: %[[SQ:.*]] = arith.mulf %arg0, %arg0 : f16
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f16
// CHECK: arith.divf %[[ONE]], %[[SQ]] : f16
func.func @inverse_square(%x: f16) -> f16 {
  %c = arith.constant -2 : i64
  %r = math.fpowi %x, %c : f16, i64
  return %r : f16
}

// CHECK-LABEL: func.func @zero
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: return %[[ONE]]
func.func @zero(%x: f32) -> f32 {
  %c = arith.constant 0 : i32
  %r = math.fpowi %x, %c : f32, i32
  return %r : f32
}

// CHECK-LABEL: func.func @runtime_i32
// CHECK: math.fpowi
func.func @runtime_i32(%x: f32, %n: i32) -> f32 {
  %r = math.fpowi %x, %n : f32, i32
  return %r : f32
}
