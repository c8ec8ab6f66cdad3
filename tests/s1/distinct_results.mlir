// pbc-distinct-results: a tensor returned in two result positions is
// returned as a copy in the later one (buffer-results-to-out-params crashed
// on one buffer returned twice); the first position keeps the value.
// RUN: pbc-opt %s -p 'pbc-distinct-results' | FileCheck %s
// CHECK-LABEL: func.func @twice
// CHECK: %[[R:.*]] = linalg.generic
// CHECK: %[[C:.*]] = bufferization.alloc_tensor() copy(%[[R]])
// CHECK: return %[[R]], %[[C]], %arg1
func.func @twice(%a: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %e = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  return %r, %r, %b : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
