// pbc-fold-unit-operand-dims: generic inputs with unit dimensions read at
// index 0 are collapsed (Cx1x1 -> C, 1x1x1x1 -> scalar) and their maps lose
// those results; an input whose unit dimension follows an iterator, and the
// outputs, are left alone.
// RUN: pbc-opt %s -p 'pbc-fold-unit-operand-dims' | FileCheck %s
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3) -> (d3)>
// CHECK-DAG: #[[S:.*]] = affine_map<(d0, d1, d2, d3) -> ()>
// CHECK-DAG: #[[HW:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d2)>
// CHECK-LABEL: func.func @bn
// CHECK: %[[P:.*]] = tensor.collapse_shape %arg1 {{\[}}[0, 1, 2]] : tensor<8x1x1xf32> into tensor<8xf32>
// CHECK-NEXT: %[[Q:.*]] = tensor.collapse_shape %arg2 [] : tensor<1x1x1x1xf32> into tensor<f32>
// CHECK-NEXT: %[[R:.*]] = tensor.collapse_shape %arg3 {{\[}}[0, 1], [2]] : tensor<1x4x4xf32> into tensor<4x4xf32>
// CHECK-NEXT: linalg.generic {indexing_maps = [#[[ID]], #[[C]], #[[S]], #[[HW]], #[[ID]]]
// CHECK-SAME: ins(%arg0, %[[P]], %[[Q]], %[[R]] :
#id = affine_map<(n, h, w, c) -> (n, h, w, c)>
func.func @bn(%x: tensor<1x4x4x8xf32>, %s: tensor<8x1x1xf32>, %one: tensor<1x1x1x1xf32>,
              %hw: tensor<1x4x4xf32>) -> tensor<1x4x4x8xf32> {
  %e = tensor.empty() : tensor<1x4x4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, affine_map<(n, h, w, c) -> (c, 0, 0)>,
                                        affine_map<(n, h, w, c) -> (0, 0, 0, 0)>,
                                        affine_map<(n, h, w, c) -> (0, h, w)>, #id],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %s, %one, %hw : tensor<1x4x4x8xf32>, tensor<8x1x1xf32>, tensor<1x1x1x1xf32>, tensor<1x4x4xf32>)
      outs(%e : tensor<1x4x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %d: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %p = arith.addf %m, %c : f32
    %q = arith.addf %p, %d : f32
    linalg.yield %q : f32
  } -> tensor<1x4x4x8xf32>
  return %r : tensor<1x4x4x8xf32>
}
// A computed operand (a keepdim reduction's result) stays as it is: read
// through a view, its producer and consumer would not fuse in S3.
// CHECK-LABEL: func.func @computed
// CHECK-NOT: tensor.collapse_shape
// CHECK: return
func.func @computed(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x1xf32>) -> tensor<4x1xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, 0)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%f : tensor<4x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x1xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, 0)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<4x8xf32>, tensor<4x1xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
