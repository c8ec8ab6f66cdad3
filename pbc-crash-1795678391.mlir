// pbc crash reproducer
// signal 11 (Segmentation fault) during: stage s1, pass 'buffer-results-to-out-params{hoist-static-allocs modify-public-functions}' (pipelines/s1.pipeline:19)
// command: build/bin/pbc --run=1 --check /tmp/rep11/seed11_p3_O3.mlir
// replay: pbc-opt THIS_FILE -p 'func.func(tosa-optional-decompositions,tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor);pbc-decompose-aggregates;canonicalize;eliminate-empty-tensors;empty-tensor-to-alloc-tensor;one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map};buffer-results-to-out-params{hoist-static-allocs modify-public-functions}'
// pbc differential reproducer (seed 11 program 3, variant O3)
// ARGS: 
// outcome: crash: contained (exit 70): pbc: error: internal compiler crash: signal 11 (Segmentation fault) during stage s1, pass 'buffer-results-to-out-params{hoist-static-allocs modify-public-functions}' (pipelines/s1.pipeline:19)
//   pbc: note: reproducer written to ./pbc-crash-1795678337.mlir
module {
  func.func @f(%a0: tensor<129x1xf32>, %a1: tensor<129xf32>, %a2: tensor<129x1xf32>) -> (tensor<129x1xf32>, tensor<129x1xf32>) {
    %e1 = tensor.empty() : tensor<129x1xf32>
    %v2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
        ins(%a0, %a1, %a2 : tensor<129x1xf32>, tensor<129xf32>, tensor<129x1xf32>) outs(%e1 : tensor<129x1xf32>) {
      ^bb0(%b0: f32, %b1: f32, %b2: f32, %bo: f32):
      linalg.yield %b1 : f32
    } -> tensor<129x1xf32>
    %e3 = tensor.empty() : tensor<129x1xf32>
    %v4 = linalg.transpose ins(%v2 : tensor<129x1xf32>) outs(%e3 : tensor<129x1xf32>) permutation = [0, 1]
    return %v4, %v2 : tensor<129x1xf32>, tensor<129x1xf32>
  }
}
