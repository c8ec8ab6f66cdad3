// pbc-bias-epilogue: a convolution or matmul whose accumulator starts as a
// broadcast bias starts at zero (the broadcast yields 0.0) and the bias is
// added after it (ins(conv, bias) into a fresh tensor), before the activation.
// A broadcast with another use, and an op that is not a sum of products
// (a max pooling), keep their init. After S3 the 1x1 convolution with bias
// and ReLU6 is one nest: the zero fill is absorbed and the add and the
// clamp run in its tiles (pbc-fuse-epilogue).
// RUN: pbc-opt %s -p 'pbc-bias-epilogue' | FileCheck %s
// RUN: pbc --emit=s3 --chip=x86-64-v4 %s | FileCheck %s --check-prefix=S3
// CHECK-LABEL: func.func @conv_bias_relu6
// CHECK: %[[B:.*]] = linalg.generic
// CHECK-SAME: ins(%arg2 : tensor<16xf32>)
// CHECK: %[[Z:.*]] = arith.constant 0.0
// CHECK-NEXT: linalg.yield %[[Z]]
// CHECK: %[[C:.*]] = linalg.conv_2d_nhwc_hwcf
// CHECK-SAME: outs(%[[B]] :
// CHECK: %[[E:.*]] = tensor.empty()
// CHECK-NEXT: %[[D:.*]] = linalg.generic
// CHECK-SAME: ins(%[[C]], %arg2 : tensor<1x28x28x16xf32>, tensor<16xf32>) outs(%[[E]] :
// CHECK: ^bb0(%[[X:.*]]: f32, %[[BIAS:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[X]], %[[BIAS]]
// CHECK-NEXT: linalg.yield %[[S]]
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[D]] :
// CHECK-LABEL: func.func @matmul_bias
// CHECK: arith.constant 0.0
// CHECK: linalg.matmul
// CHECK: arith.addf
// CHECK-LABEL: func.func @broadcast_used_twice
// CHECK-NOT: arith.constant
// CHECK-NOT: arith.addf
// CHECK: return
// CHECK-LABEL: func.func @max_pool
// CHECK-NOT: arith.constant
// CHECK-NOT: arith.addf
// CHECK: return
// S3-LABEL: func.func @conv_bias_relu6
// S3-NOT: pbc.kind
// S3: pbc.kind = "matmul"
// S3-NOT: pbc.kind
// S3: return
#bcast = affine_map<(d0, d1, d2, d3) -> (d3)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @conv_bias_relu6(%x: tensor<1x28x28x8xf32>, %w: tensor<1x1x8x16xf32>, %bias: tensor<16xf32>) -> tensor<1x28x28x16xf32> {
  %e = tensor.empty() : tensor<1x28x28x16xf32>
  %b = linalg.generic {indexing_maps = [#bcast, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%bias : tensor<16xf32>) outs(%e : tensor<1x28x28x16xf32>) {
  ^bb0(%i: f32, %o: f32):
    linalg.yield %i : f32
  } -> tensor<1x28x28x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x28x28x8xf32>, tensor<1x1x8x16xf32>) outs(%b : tensor<1x28x28x16xf32>) -> tensor<1x28x28x16xf32>
  %e2 = tensor.empty() : tensor<1x28x28x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c : tensor<1x28x28x16xf32>) outs(%e2 : tensor<1x28x28x16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %six = arith.constant 6.0 : f32
    %m = arith.maximumf %i, %zero : f32
    %n = arith.minimumf %m, %six : f32
    linalg.yield %n : f32
  } -> tensor<1x28x28x16xf32>
  return %r : tensor<1x28x28x16xf32>
}
func.func @matmul_bias(%a: tensor<20x32xf32>, %w: tensor<32x48xf32>, %bias: tensor<48xf32>) -> tensor<20x48xf32> {
  %e = tensor.empty() : tensor<20x48xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%bias : tensor<48xf32>) outs(%e : tensor<20x48xf32>) {
  ^bb0(%i: f32, %o: f32):
    linalg.yield %i : f32
  } -> tensor<20x48xf32>
  %c = linalg.matmul ins(%a, %w : tensor<20x32xf32>, tensor<32x48xf32>) outs(%b : tensor<20x48xf32>) -> tensor<20x48xf32>
  return %c : tensor<20x48xf32>
}
func.func @broadcast_used_twice(%a: tensor<20x32xf32>, %w: tensor<32x48xf32>, %bias: tensor<48xf32>) -> (tensor<20x48xf32>, tensor<20x48xf32>) {
  %e = tensor.empty() : tensor<20x48xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%bias : tensor<48xf32>) outs(%e : tensor<20x48xf32>) {
  ^bb0(%i: f32, %o: f32):
    linalg.yield %i : f32
  } -> tensor<20x48xf32>
  %c = linalg.matmul ins(%a, %w : tensor<20x32xf32>, tensor<32x48xf32>) outs(%b : tensor<20x48xf32>) -> tensor<20x48xf32>
  return %c, %b : tensor<20x48xf32>, tensor<20x48xf32>
}
func.func @max_pool(%x: tensor<1x8x8x4xf32>, %bias: tensor<4xf32>) -> tensor<1x4x4x4xf32> {
  %e = tensor.empty() : tensor<1x4x4x4xf32>
  %b = linalg.generic {indexing_maps = [#bcast, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%bias : tensor<4xf32>) outs(%e : tensor<1x4x4x4xf32>) {
  ^bb0(%i: f32, %o: f32):
    linalg.yield %i : f32
  } -> tensor<1x4x4x4xf32>
  %k = tensor.empty() : tensor<2x2xf32>
  %p = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%x, %k : tensor<1x8x8x4xf32>, tensor<2x2xf32>) outs(%b : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %p : tensor<1x4x4x4xf32>
}
