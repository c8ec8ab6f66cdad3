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
