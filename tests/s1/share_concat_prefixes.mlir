// pbc-share-concat-prefixes: DenseNet-style concatenations (each one's
// sources lead the next one's) become slices of the largest one, whose
// inserts follow their sources; a concatenation that shares no prefix, and
// one with a source in another place, are left alone.
// RUN: pbc-opt %s -p 'pbc-share-concat-prefixes' | FileCheck %s
// CHECK-LABEL: func.func @dense
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1x4x4x8xf32>
// CHECK-NEXT: %[[G0:.*]] = tensor.insert_slice %arg0 into %[[E]][0, 0, 0, 0] [1, 4, 4, 4]
// CHECK-NEXT: %[[X1:.*]] = linalg.generic
// CHECK: %[[X1S:.*]] = tensor.extract_slice %[[X1]]
// CHECK-NEXT: %[[G1:.*]] = tensor.insert_slice %[[X1S]] into %[[G0]][0, 0, 0, 4] [1, 4, 4, 2]
// CHECK-NEXT: %[[C1:.*]] = tensor.extract_slice %[[G1]][0, 0, 0, 0] [1, 4, 4, 6] [1, 1, 1, 1] : tensor<1x4x4x8xf32> to tensor<1x4x4x6xf32>
// CHECK: %[[C1S:.*]] = tensor.extract_slice %[[C1]][0, 0, 0, 3]
// CHECK: %[[X2:.*]] = linalg.generic {{.*}} ins(%[[C1S]] :
// CHECK: %[[G2:.*]] = tensor.insert_slice %[[X2]] into %[[G1]][0, 0, 0, 6] [1, 4, 4, 2]
// CHECK-NOT: tensor.insert_slice
// CHECK-NOT: tensor.empty
// CHECK: return %[[G2]]
#id = affine_map<(n, h, w, c) -> (n, h, w, c)>
func.func @dense(%x0: tensor<1x4x4x4xf32>) -> tensor<1x4x4x8xf32> {
  %x1 = linalg.generic {indexing_maps = [affine_map<(n, h, w, c) -> (n, h, w, c)>, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x0 : tensor<1x4x4x4xf32>) outs(%x0 : tensor<1x4x4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<1x4x4x4xf32>
  %x1s = tensor.extract_slice %x1[0, 0, 0, 0] [1, 4, 4, 2] [1, 1, 1, 1] : tensor<1x4x4x4xf32> to tensor<1x4x4x2xf32>
  %e1 = tensor.empty() : tensor<1x4x4x6xf32>
  %a1 = tensor.insert_slice %x0 into %e1[0, 0, 0, 0] [1, 4, 4, 4] [1, 1, 1, 1] : tensor<1x4x4x4xf32> into tensor<1x4x4x6xf32>
  %c1 = tensor.insert_slice %x1s into %a1[0, 0, 0, 4] [1, 4, 4, 2] [1, 1, 1, 1] : tensor<1x4x4x2xf32> into tensor<1x4x4x6xf32>
  %o2 = tensor.empty() : tensor<1x4x4x2xf32>
  %c1s = tensor.extract_slice %c1[0, 0, 0, 3] [1, 4, 4, 2] [1, 1, 1, 1] : tensor<1x4x4x6xf32> to tensor<1x4x4x2xf32>
  %x2 = linalg.generic {indexing_maps = [affine_map<(n, h, w, c) -> (n, h, w, c)>, affine_map<(n, h, w, c) -> (n, h, w, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c1s : tensor<1x4x4x2xf32>) outs(%o2 : tensor<1x4x4x2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.addf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<1x4x4x2xf32>
  %e2 = tensor.empty() : tensor<1x4x4x8xf32>
  %b1 = tensor.insert_slice %x0 into %e2[0, 0, 0, 0] [1, 4, 4, 4] [1, 1, 1, 1] : tensor<1x4x4x4xf32> into tensor<1x4x4x8xf32>
  %b2 = tensor.insert_slice %x1s into %b1[0, 0, 0, 4] [1, 4, 4, 2] [1, 1, 1, 1] : tensor<1x4x4x2xf32> into tensor<1x4x4x8xf32>
  %c2 = tensor.insert_slice %x2 into %b2[0, 0, 0, 6] [1, 4, 4, 2] [1, 1, 1, 1] : tensor<1x4x4x2xf32> into tensor<1x4x4x8xf32>
  return %c2 : tensor<1x4x4x8xf32>
}

// Different first sources, or the same sources at other places: no sharing.
// CHECK-LABEL: func.func @unrelated
// CHECK-NOT: tensor.extract_slice
// CHECK: tensor.insert_slice %arg1 into {{.*}}[0, 3] [2, 3]
// CHECK-NOT: tensor.extract_slice
// CHECK: tensor.insert_slice %arg1 into {{.*}}[2, 0] [2, 3]
// CHECK-NOT: tensor.extract_slice
// CHECK: return
func.func @unrelated(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> (tensor<2x6xf32>, tensor<4x3xf32>) {
  %e1 = tensor.empty() : tensor<2x6xf32>
  %a1 = tensor.insert_slice %a into %e1[0, 0] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x6xf32>
  %c1 = tensor.insert_slice %b into %a1[0, 3] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x6xf32>
  %e2 = tensor.empty() : tensor<4x3xf32>
  %a2 = tensor.insert_slice %a into %e2[0, 0] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<4x3xf32>
  %c2 = tensor.insert_slice %b into %a2[2, 0] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<4x3xf32>
  return %c1, %c2 : tensor<2x6xf32>, tensor<4x3xf32>
}
