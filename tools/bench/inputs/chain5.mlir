// Five elementwise ops over 16 M floats (bench_chain): out = (max(x*y + x, 0))^2 - y.
#id = affine_map<(i, j) -> (i, j)>
func.func @chain(%x: tensor<4096x4096xf32>, %y: tensor<4096x4096xf32>) -> tensor<4096x4096xf32> {
  %e = tensor.empty() : tensor<4096x4096xf32>
  %zero = arith.constant 0.0 : f32
  %a = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<4096x4096xf32>, tensor<4096x4096xf32>) outs(%e : tensor<4096x4096xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.mulf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<4096x4096xf32>
  %b = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %x : tensor<4096x4096xf32>, tensor<4096x4096xf32>) outs(%e : tensor<4096x4096xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<4096x4096xf32>
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<4096x4096xf32>) outs(%e : tensor<4096x4096xf32>) {
  ^bb0(%p: f32, %o: f32):
    %r = arith.maximumf %p, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4096x4096xf32>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%c : tensor<4096x4096xf32>) outs(%e : tensor<4096x4096xf32>) {
  ^bb0(%p: f32, %o: f32):
    %r = arith.mulf %p, %p : f32
    linalg.yield %r : f32
  } -> tensor<4096x4096xf32>
  %f = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%d, %y : tensor<4096x4096xf32>, tensor<4096x4096xf32>) outs(%e : tensor<4096x4096xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.subf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<4096x4096xf32>
  return %f : tensor<4096x4096xf32>
}
