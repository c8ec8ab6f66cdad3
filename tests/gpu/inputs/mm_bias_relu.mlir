// f16 matmul, then bias + relu + truncation to f16 (a transformer MLP layer).
#mat = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @mm_bias_relu(%a: tensor<256x512xf16>, %b: tensor<512x384xf16>, %bias: tensor<384xf32>) -> tensor<256x384xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x384xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<256x384xf32>) -> tensor<256x384xf32>
  %m = linalg.matmul ins(%a, %b : tensor<256x512xf16>, tensor<512x384xf16>) outs(%z : tensor<256x384xf32>) -> tensor<256x384xf32>
  %eh = tensor.empty() : tensor<256x384xf16>
  %h = linalg.generic {indexing_maps = [#mat, #row, #mat], iterator_types = ["parallel", "parallel"]}
      ins(%m, %bias : tensor<256x384xf32>, tensor<384xf32>) outs(%eh : tensor<256x384xf16>) {
    ^bb0(%x: f32, %y: f32, %o: f16):
      %s = arith.addf %x, %y : f32
      %r = arith.maximumf %s, %zero : f32
      %t = arith.truncf %r : f32 to f16
      linalg.yield %t : f16
  } -> tensor<256x384xf16>
  return %h : tensor<256x384xf16>
}
