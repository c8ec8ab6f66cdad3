#qk = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>]
#id = affine_map<(i, j) -> (i, j)>
func.func @attention(%q: tensor<64x32xf16>, %k: tensor<64x32xf16>, %v: tensor<64x32xf16>) -> tensor<64x32xf32> {
  %z = arith.constant 0.0 : f32
  %es = tensor.empty() : tensor<64x64xf32>
  %fs = linalg.fill ins(%z : f32) outs(%es : tensor<64x64xf32>) -> tensor<64x64xf32>
  %s = linalg.generic {indexing_maps = #qk, iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<64x32xf16>, tensor<64x32xf16>) outs(%fs : tensor<64x64xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %xf = arith.extf %x : f16 to f32
    %yf = arith.extf %y : f16 to f32
    %m = arith.mulf %xf, %yf : f32
    %a = arith.addf %acc, %m : f32
    linalg.yield %a : f32
  } -> tensor<64x64xf32>
  %ep = tensor.empty() : tensor<64x64xf32>
  %p = linalg.softmax dimension(1) ins(%s : tensor<64x64xf32>) outs(%ep : tensor<64x64xf32>) -> tensor<64x64xf32>
  %eh = tensor.empty() : tensor<64x64xf16>
  %ph = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<64x64xf32>) outs(%eh : tensor<64x64xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  } -> tensor<64x64xf16>
  %eo = tensor.empty() : tensor<64x32xf32>
  %fo = linalg.fill ins(%z : f32) outs(%eo : tensor<64x32xf32>) -> tensor<64x32xf32>
  %o = linalg.matmul ins(%ph, %v : tensor<64x64xf16>, tensor<64x32xf16>) outs(%fo : tensor<64x32xf32>) -> tensor<64x32xf32>
  return %o : tensor<64x32xf32>
}
