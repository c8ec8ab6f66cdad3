// pbc-quantized-matmul: a float matmul of two dequantized 8-bit tensors
// (what torch-mlir makes of ONNX's QDQ MatMul with per-channel weight
// scales) is an i8 x i8 -> i32 contraction and one generic after it that
// scales the sums (per tensor, per row of A, per column of B) and adds them
// to the init. A may be u8 with a zero point (then B's column sums come
// off); B's zero point must be zero (symmetric weights).
// RUN: pbc-opt %s -p 'pbc-quantized-matmul' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A per tensor (a scalar from outside), B per output channel with a zero
// tensor of zero points (torch-mlir's form).
// CHECK-LABEL: func.func @per_channel
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : i32) outs(%{{.*}} : tensor<8x32xi32>)
// CHECK: %[[CI:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : tensor<8x64xi8>, tensor<64x32xi8>) outs(%[[Z]] : tensor<8x32xi32>)
// CHECK: arith.extsi %{{.*}} : i8 to i32
// CHECK: arith.extsi %{{.*}} : i8 to i32
// CHECK: arith.muli
// CHECK: arith.addi
// CHECK: linalg.generic {indexing_maps = [#map{{.*}}, #map{{.*}}, #map{{.*}}], iterator_types = ["parallel", "parallel"]} ins(%[[CI]], %arg2 : tensor<8x32xi32>, tensor<32xf32>) outs(%[[INIT:.*]] : tensor<8x32xf32>)
// CHECK: ^bb0(%[[I:.*]]: i32, %[[SB:.*]]: f32, %[[O:.*]]: f32):
// CHECK: %[[F:.*]] = arith.sitofp %[[I]] : i32 to f32
// CHECK: %[[X:.*]] = arith.mulf %[[F]], %[[SA:.*]] : f32
// CHECK: %[[Y:.*]] = arith.mulf %[[X]], %[[SB]] : f32
// CHECK: arith.addf %[[O]], %[[Y]] : f32
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @per_channel(%aq: tensor<8x64xi8>, %wq: tensor<64x32xi8>, %sw: tensor<32xf32>) -> tensor<8x32xf32> {
  %sa = arith.constant 0.05 : f32
  %zero = arith.constant 0.0 : f32
  %zp = arith.constant dense<0> : tensor<32xi8>
  %e0 = tensor.empty() : tensor<8x64xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%aq : tensor<8x64xi8>) outs(%e0 : tensor<8x64xf32>) {
  ^bb0(%x: i8, %o: f32):
    %f = arith.sitofp %x : i8 to f32
    %r = arith.mulf %f, %sa : f32
    linalg.yield %r : f32
  } -> tensor<8x64xf32>
  %e1 = tensor.empty() : tensor<64x32xf32>
  %w = linalg.generic {indexing_maps = [#id, #col, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wq, %sw, %zp : tensor<64x32xi8>, tensor<32xf32>, tensor<32xi8>) outs(%e1 : tensor<64x32xf32>) {
  ^bb0(%x: i8, %s: f32, %z: i8, %o: f32):
    %ze = arith.extsi %z : i8 to i16
    %xe = arith.extsi %x : i8 to i16
    %d = arith.subi %xe, %ze : i16
    %f = arith.sitofp %d : i16 to f32
    %r = arith.mulf %f, %s : f32
    linalg.yield %r : f32
  } -> tensor<64x32xf32>
  %e2 = tensor.empty() : tensor<8x32xf32>
  %c0 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %c = linalg.matmul ins(%a, %w : tensor<8x64xf32>, tensor<64x32xf32>) outs(%c0 : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %c : tensor<8x32xf32>
}

// A per row (scale first in the product), B per tensor.
// CHECK-LABEL: func.func @per_row
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4x16xi8>, tensor<16x8xi8>)
// CHECK: linalg.generic {indexing_maps = [#map{{.*}}, #map5, #map{{.*}}]
// CHECK-SAME: ins(%{{.*}}, %arg2 : tensor<4x8xi32>, tensor<4xf32>) outs(%arg3 : tensor<4x8xf32>)
func.func @per_row(%aq: tensor<4x16xi8>, %wq: tensor<16x8xi8>, %sa: tensor<4xf32>, %init: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sw = arith.constant 0.02 : f32
  %e0 = tensor.empty() : tensor<4x16xf32>
  %a = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%aq, %sa : tensor<4x16xi8>, tensor<4xf32>) outs(%e0 : tensor<4x16xf32>) {
  ^bb0(%x: i8, %s: f32, %o: f32):
    %f = arith.sitofp %x : i8 to f32
    %r = arith.mulf %s, %f : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  %e1 = tensor.empty() : tensor<16x8xf32>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wq : tensor<16x8xi8>) outs(%e1 : tensor<16x8xf32>) {
  ^bb0(%x: i8, %o: f32):
    %f = arith.sitofp %x : i8 to f32
    %r = arith.mulf %f, %sw : f32
    linalg.yield %r : f32
  } -> tensor<16x8xf32>
  %c = linalg.matmul ins(%a, %w : tensor<4x16xf32>, tensor<16x8xf32>) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// A as u8 with zero point 128 (onnxruntime's quantizer, through
// torch-mlir: extui, subi, sitofp): A's bytes widen unsigned in the
// product, and 128 times B's column sums come off.
// CHECK-LABEL: func.func @asymmetric_u8
// CHECK: %[[CI:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4x16xi8>, tensor<16x8xi8>)
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK: arith.extsi %{{.*}} : i8 to i32
// CHECK: %[[CS:.*]] = linalg.generic {indexing_maps = [#map{{.*}}, #map{{.*}}], iterator_types = ["reduction", "parallel"]} ins(%arg1 : tensor<16x8xi8>) outs(%{{.*}} : tensor<8xi32>)
// CHECK: linalg.generic {{.*}} ins(%[[CI]], %[[CS]] : tensor<4x8xi32>, tensor<8xi32>)
// CHECK: ^bb0(%[[I:.*]]: i32, %[[S:.*]]: i32, %{{.*}}: f32):
// CHECK: %[[ZA:.*]] = arith.constant 128 : i32
// CHECK: %[[SH:.*]] = arith.muli %[[S]], %[[ZA]] : i32
// CHECK: %[[D:.*]] = arith.subi %[[I]], %[[SH]] : i32
// CHECK: arith.sitofp %[[D]] : i32 to f32
func.func @asymmetric_u8(%aq: tensor<4x16xi8>, %wq: tensor<16x8xi8>) -> tensor<4x8xf32> {
  %sa = arith.constant 0.05 : f32
  %sw = arith.constant 0.02 : f32
  %zp = arith.constant 128 : i64
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4x16xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%aq : tensor<4x16xi8>) outs(%e0 : tensor<4x16xf32>) {
  ^bb0(%x: i8, %o: f32):
    %xe = arith.extui %x : i8 to i64
    %d = arith.subi %xe, %zp : i64
    %f = arith.sitofp %d : i64 to f32
    %r = arith.mulf %f, %sa : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  %e1 = tensor.empty() : tensor<16x8xf32>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wq : tensor<16x8xi8>) outs(%e1 : tensor<16x8xf32>) {
  ^bb0(%x: i8, %o: f32):
    %f = arith.sitofp %x : i8 to f32
    %r = arith.mulf %f, %sw : f32
    linalg.yield %r : f32
  } -> tensor<16x8xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %c0 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = linalg.matmul ins(%a, %w : tensor<4x16xf32>, tensor<16x8xf32>) outs(%c0 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// A constant B: its column sums are a constant (1+3+5+7, -2+4-6+8).
// CHECK-LABEL: func.func @asymmetric_constant_b
// CHECK: %[[CS:.*]] = arith.constant dense<[16, 4]> : tensor<2xi32>
// CHECK-NOT: "reduction", "parallel"
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[CS]] : tensor<3x2xi32>, tensor<2xi32>)
func.func @asymmetric_constant_b(%aq: tensor<3x4xi8>) -> tensor<3x2xf32> {
  %wq = arith.constant dense<[[1, -2], [3, 4], [5, -6], [7, 8]]> : tensor<4x2xi8>
  %sa = arith.constant 0.05 : f32
  %sw = arith.constant 0.02 : f32
  %zp = arith.constant 128 : i64
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<3x4xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%aq : tensor<3x4xi8>) outs(%e0 : tensor<3x4xf32>) {
  ^bb0(%x: i8, %o: f32):
    %xe = arith.extui %x : i8 to i64
    %d = arith.subi %xe, %zp : i64
    %f = arith.sitofp %d : i64 to f32
    %r = arith.mulf %f, %sa : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>
  %e1 = tensor.empty() : tensor<4x2xf32>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wq : tensor<4x2xi8>) outs(%e1 : tensor<4x2xf32>) {
  ^bb0(%x: i8, %o: f32):
    %f = arith.sitofp %x : i8 to f32
    %r = arith.mulf %f, %sw : f32
    linalg.yield %r : f32
  } -> tensor<4x2xf32>
  %e2 = tensor.empty() : tensor<3x2xf32>
  %c0 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<3x2xf32>) -> tensor<3x2xf32>
  %c = linalg.matmul ins(%a, %w : tensor<3x4xf32>, tensor<4x2xf32>) outs(%c0 : tensor<3x2xf32>) -> tensor<3x2xf32>
  return %c : tensor<3x2xf32>
}

// Not taken: B with a zero point that is not zero; a scale that changes
// along k (A's per column); a dequantized tensor with another use;
// unsigned values converted directly (uitofp).
// CHECK-LABEL: func.func @not_taken
// CHECK-NOT: xi32>
// CHECK: return
func.func @not_taken(%aq: tensor<4x16xi8>, %wq: tensor<16x8xi8>, %sk: tensor<16xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x16xf32>, tensor<4x8xf32>) {
  %s = arith.constant 0.02 : f32
  %zero = arith.constant 0.0 : f32
  %zp3 = arith.constant 3 : i8
  %e0 = tensor.empty() : tensor<4x16xf32>
  %e1 = tensor.empty() : tensor<16x8xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %c0 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wq : tensor<16x8xi8>) outs(%e1 : tensor<16x8xf32>) {
  ^bb0(%x: i8, %o: f32):
    %f = arith.sitofp %x : i8 to f32
    %r = arith.mulf %f, %s : f32
    linalg.yield %r : f32
  } -> tensor<16x8xf32>
  %w2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wq : tensor<16x8xi8>) outs(%e1 : tensor<16x8xf32>) {
  ^bb0(%x: i8, %o: f32):
    %f = arith.sitofp %x : i8 to f32
    %r = arith.mulf %f, %s : f32
    linalg.yield %r : f32
  } -> tensor<16x8xf32>
  %w3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wq : tensor<16x8xi8>) outs(%e1 : tensor<16x8xf32>) {
  ^bb0(%x: i8, %o: f32):
    %f = arith.sitofp %x : i8 to f32
    %r = arith.mulf %f, %s : f32
    linalg.yield %r : f32
  } -> tensor<16x8xf32>
  %w4 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wq : tensor<16x8xi8>) outs(%e1 : tensor<16x8xf32>) {
  ^bb0(%x: i8, %o: f32):
    %f = arith.uitofp %x : i8 to f32
    %r = arith.mulf %f, %s : f32
    linalg.yield %r : f32
  } -> tensor<16x8xf32>
  %a1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%aq : tensor<4x16xi8>) outs(%e0 : tensor<4x16xf32>) {
  ^bb0(%x: i8, %o: f32):
    %f = arith.sitofp %x : i8 to f32
    %r = arith.mulf %f, %s : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  %w1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wq : tensor<16x8xi8>) outs(%e1 : tensor<16x8xf32>) {
  ^bb0(%x: i8, %o: f32):
    %ze = arith.extsi %zp3 : i8 to i16
    %xe = arith.extsi %x : i8 to i16
    %d = arith.subi %xe, %ze : i16
    %f = arith.sitofp %d : i16 to f32
    %r = arith.mulf %f, %s : f32
    linalg.yield %r : f32
  } -> tensor<16x8xf32>
  %m1 = linalg.matmul ins(%a1, %w1 : tensor<4x16xf32>, tensor<16x8xf32>) outs(%c0 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a2 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%aq, %sk : tensor<4x16xi8>, tensor<16xf32>) outs(%e0 : tensor<4x16xf32>) {
  ^bb0(%x: i8, %k: f32, %o: f32):
    %f = arith.sitofp %x : i8 to f32
    %r = arith.mulf %f, %k : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  %m2 = linalg.matmul ins(%a2, %w2 : tensor<4x16xf32>, tensor<16x8xf32>) outs(%c0 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%aq : tensor<4x16xi8>) outs(%e0 : tensor<4x16xf32>) {
  ^bb0(%x: i8, %o: f32):
    %f = arith.sitofp %x : i8 to f32
    %r = arith.mulf %f, %s : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  %m3 = linalg.matmul ins(%a3, %w3 : tensor<4x16xf32>, tensor<16x8xf32>) outs(%c0 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a4 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%aq : tensor<4x16xi8>) outs(%e0 : tensor<4x16xf32>) {
  ^bb0(%x: i8, %o: f32):
    %f = arith.sitofp %x : i8 to f32
    %r = arith.mulf %f, %s : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  %m4 = linalg.matmul ins(%a4, %w4 : tensor<4x16xf32>, tensor<16x8xf32>) outs(%c0 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %m1, %m2, %m3, %a3, %m4 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x16xf32>, tensor<4x8xf32>
}
