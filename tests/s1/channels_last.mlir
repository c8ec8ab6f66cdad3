// pbc-channels-last runs an NCHW convolution as conv_2d_nhwc_hwcf between
// transposes (a constant filter transposed at compile time), and an NCHW
// max pooling as pooling_nhwc_max; pbc-sink-transposes moves each NHWC ->
// NCHW transpose below the elementwise op (bias + ReLU: its channel operand
// read at d3 now) and the pad after it, where it meets the next layer's
// NCHW -> NHWC transpose and canonicalize cancels the pair. What is left:
// the input's transpose (after its pad), the runtime filter's, and the
// output's.
// RUN: pbc-opt %s -p 'pbc-channels-last;pbc-sink-transposes;canonicalize' | FileCheck %s
// CHECK: #[[CH:.*]] = affine_map<(d0, d1, d2, d3) -> (d3)>
// CHECK-LABEL: func.func @layers
// The 1x1 filter F x C = 2 x 8 as H x W x C x F: [c][f] = (c + 1) * (1, -1)[f].
// CHECK-DAG: %[[F2:.*]] = arith.constant dense<{{\[\[\[\[}}1.000000e+00, -1.000000e+00], [2.000000e+00, -2.000000e+00], [3.000000e+00, -3.000000e+00]{{.*}}> : tensor<1x1x8x2xf32>
// CHECK: %[[XP:.*]] = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[XT:.*]] = linalg.transpose ins(%[[XP]] : tensor<1x4x10x10xf32>) outs(%{{.*}} : tensor<1x10x10x4xf32>) permutation = [0, 2, 3, 1]
// CHECK: %[[WT:.*]] = linalg.transpose ins(%arg1 : tensor<8x4x3x3xf32>) outs(%{{.*}} : tensor<3x3x4x8xf32>) permutation = [2, 3, 1, 0]
// CHECK: %[[C1:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[XT]], %[[WT]] : tensor<1x10x10x4xf32>, tensor<3x3x4x8xf32>) outs(%{{.*}} : tensor<1x8x8x8xf32>)
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #[[CH]], #{{.*}}]{{.*}} ins(%[[C1]], %arg2 : tensor<1x8x8x8xf32>, tensor<8xf32>) outs(%{{.*}} : tensor<1x8x8x8xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: %[[RP:.*]] = tensor.pad %[[R]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: %[[C2:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[RP]], %[[F2]] : tensor<1x10x10x8xf32>, tensor<1x1x8x2xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: %[[P:.*]] = linalg.pooling_nhwc_max {{.*}} ins(%[[C2]], %{{.*}} : tensor<1x10x10x2xf32>, tensor<2x2xf32>)
// CHECK: %[[OUT:.*]] = linalg.transpose ins(%[[P]] : tensor<1x5x5x2xf32>) outs(%{{.*}} : tensor<1x2x5x5xf32>) permutation = [0, 3, 1, 2]
// CHECK: return %[[OUT]]
func.func @layers(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x2x5x5xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %xp = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x4x8x8xf32> to tensor<1x4x10x10xf32>
  %e1 = tensor.empty() : tensor<1x8x8x8xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %c1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
          ins(%xp, %w : tensor<1x4x10x10xf32>, tensor<8x4x3x3xf32>) outs(%f1 : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (c)>,
                                        affine_map<(n, c, h, w) -> (n, c, h, w)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c1, %b : tensor<1x8x8x8xf32>, tensor<8xf32>) outs(%e1 : tensor<1x8x8x8xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x8x8x8xf32>
  %rp = tensor.pad %r low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x8x8x8xf32> to tensor<1x8x10x10xf32>
  %w2 = arith.constant dense<[[[[1.0]], [[2.0]], [[3.0]], [[4.0]], [[5.0]], [[6.0]], [[7.0]], [[8.0]]],
                              [[[-1.0]], [[-2.0]], [[-3.0]], [[-4.0]], [[-5.0]], [[-6.0]], [[-7.0]], [[-8.0]]]]> : tensor<2x8x1x1xf32>
  %e2 = tensor.empty() : tensor<1x2x10x10xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x2x10x10xf32>) -> tensor<1x2x10x10xf32>
  %c2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
          ins(%rp, %w2 : tensor<1x8x10x10xf32>, tensor<2x8x1x1xf32>) outs(%f2 : tensor<1x2x10x10xf32>) -> tensor<1x2x10x10xf32>
  %e3 = tensor.empty() : tensor<1x2x5x5xf32>
  %f3 = linalg.fill ins(%ninf : f32) outs(%e3 : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
         ins(%c2, %win : tensor<1x2x10x10xf32>, tensor<2x2xf32>) outs(%f3 : tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  return %p : tensor<1x2x5x5xf32>
}
// An elementwise generic on rank-0 tensors is left alone (its empty maps
// once passed for a transposed input's: a crash).
// RUN: pbc-opt %s -p 'pbc-sink-transposes' | FileCheck %s --check-prefix=SCALAR
// SCALAR-LABEL: func.func @scalar
// SCALAR: linalg.generic
// SCALAR-SAME: ins(%arg0 : tensor<f32>) outs(%arg1 : tensor<f32>)
func.func @scalar(%x: tensor<f32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>],
                       iterator_types = []}
      ins(%x : tensor<f32>) outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
// Depthwise: C x KH x KW -> KH x KW x C, the constant transposed here.
// RUN: pbc-opt %s -p 'pbc-channels-last;canonicalize' | FileCheck %s --check-prefix=DW
// DW-LABEL: func.func @depthwise
// DW-DAG: %[[F:.*]] = arith.constant dense<{{\[\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]]> : tensor<1x2x2xf32>
// DW-DAG: %[[XT:.*]] = linalg.transpose ins(%arg0 : tensor<1x2x3x4xf32>) outs(%{{.*}} : tensor<1x3x4x2xf32>) permutation = [0, 2, 3, 1]
// DW: %[[D:.*]] = linalg.depthwise_conv_2d_nhwc_hwc {{.*}} ins(%[[XT]], %[[F]] : tensor<1x3x4x2xf32>, tensor<1x2x2xf32>)
// DW: linalg.transpose ins(%[[D]] : tensor<1x3x3x2xf32>) outs(%{{.*}} : tensor<1x2x3x3xf32>) permutation = [0, 3, 1, 2]
func.func @depthwise(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x3x3xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[[1.0, 2.0]], [[3.0, 4.0]]]> : tensor<2x1x2xf32>
  %e = tensor.empty() : tensor<1x2x3x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %r = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<1x2x3x4xf32>, tensor<2x1x2xf32>) outs(%f : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %r : tensor<1x2x3x3xf32>
}
// The same with 2-byte elements: any whole-byte element type is moved.
// DW-LABEL: func.func @depthwise_f16
// DW: arith.constant dense<{{\[\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]]> : tensor<1x2x2xf16>
// DW-NOT: linalg.transpose ins(%{{.*}} : tensor<2x1x2xf16>)
func.func @depthwise_f16(%x: tensor<1x2x3x4xf16>) -> tensor<1x2x3x3xf16> {
  %zero = arith.constant 0.0 : f16
  %w = arith.constant dense<[[[1.0, 2.0]], [[3.0, 4.0]]]> : tensor<2x1x2xf16>
  %e = tensor.empty() : tensor<1x2x3x3xf16>
  %f = linalg.fill ins(%zero : f16) outs(%e : tensor<1x2x3x3xf16>) -> tensor<1x2x3x3xf16>
  %r = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<1x2x3x4xf16>, tensor<2x1x2xf16>) outs(%f : tensor<1x2x3x3xf16>) -> tensor<1x2x3x3xf16>
  return %r : tensor<1x2x3x3xf16>
}
// Weights in a resource blob (torch-mlir's FX importer): read and moved at
// compile time too, not transposed on every call (an NCHW ResNet-18 from
// torch-mlir ran 1.6x slower so).
// DW-LABEL: func.func @depthwise_resource
// DW: arith.constant dense<{{\[\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]]> : tensor<1x2x2xf32>
// DW-NOT: linalg.transpose ins(%{{.*}} : tensor<2x1x2xf32>)
func.func @depthwise_resource(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x3x3xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense_resource<pbc_test_weights> : tensor<2x1x2xf32>
  %e = tensor.empty() : tensor<1x2x3x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %r = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<1x2x3x4xf32>, tensor<2x1x2xf32>) outs(%f : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %r : tensor<1x2x3x3xf32>
}
{-#
  dialect_resources: {
    builtin: {
      pbc_test_weights: "0x040000000000803F000000400000404000008040"
    }
  }
#-}
