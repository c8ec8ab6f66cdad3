// pbc crash reproducer
// signal 11 (Segmentation fault) during: stage s1, pass 'buffer-results-to-out-params{hoist-static-allocs modify-public-functions}' (pipelines/s1.pipeline:19)
// command: build/bin/pbc --target=amdgpu --emit=obj -o /tmp/x.o /tmp/r/dup.mlir
// replay: pbc-opt THIS_FILE -p 'func.func(tosa-optional-decompositions,tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor);pbc-decompose-aggregates;canonicalize;eliminate-empty-tensors;empty-tensor-to-alloc-tensor;one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map};buffer-results-to-out-params{hoist-static-allocs modify-public-functions}'
func.func @f(%a: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %e = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  return %r, %r : tensor<16xf32>, tensor<16xf32>
}
