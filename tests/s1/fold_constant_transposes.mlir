// pbc-fold-constant-transposes: a linalg.transpose of a constant (a dense
// one, or a resource blob as torch-mlir's FX importer writes weights)
// becomes the transposed constant; a transpose of an argument stays.
// RUN: pbc-opt %s -p 'pbc-fold-constant-transposes;canonicalize' | FileCheck %s

// CHECK-LABEL: func.func @dense
// CHECK: arith.constant dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK-NOT: linalg.transpose
func.func @dense() -> tensor<3x2xf32> {
  %w = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %e = tensor.empty() : tensor<3x2xf32>
  %t = linalg.transpose ins(%w : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [1, 0]
  return %t : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @resource
// CHECK: arith.constant dense<{{\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-NOT: linalg.transpose
func.func @resource() -> tensor<2x2xf32> {
  %w = arith.constant dense_resource<pbc_test_w> : tensor<2x2xf32>
  %e = tensor.empty() : tensor<2x2xf32>
  %t = linalg.transpose ins(%w : tensor<2x2xf32>) outs(%e : tensor<2x2xf32>) permutation = [1, 0]
  return %t : tensor<2x2xf32>
}

// CHECK-LABEL: func.func @argument
// CHECK: linalg.transpose
func.func @argument(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %e = tensor.empty() : tensor<3x2xf32>
  %t = linalg.transpose ins(%x : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [1, 0]
  return %t : tensor<3x2xf32>
}
// A resource whose blob is absent (elided) is left alone: the pass crashed
// reading it (later stages report the missing resource at its location).
// CHECK-LABEL: func.func @elided
// CHECK: linalg.transpose
func.func @elided() -> tensor<3x2xf32> {
  %w = arith.constant dense_resource<__elided__> : tensor<2x3xf32>
  %e = tensor.empty() : tensor<3x2xf32>
  %t = linalg.transpose ins(%w : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [1, 0]
  return %t : tensor<3x2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      pbc_test_w: "0x040000000000803F000000400000404000008040"
    }
  }
#-}
