// pbc differential reproducer (seed 3 program 36, variant O3)
// ARGS: 
// outcome: rejected: /tmp/pbc_diff_0rlds_e1/input.mlir:4:11: error: stage s3 contract violated: 'affine.for' root loop has no pbc.kind attribute (every root nest must be classified)
//   pipelines/s3.pipeline:119: error: stage s3: pass 'pbc-verify-stage{stage=s3}' failed
module {
  func.func @f(%a0: tensor<4xbf16>) -> tensor<4xbf16> {
    %e1 = tensor.empty() : tensor<4xbf16>
    %v2 = linalg.softmax dimension(0) ins(%a0 : tensor<4xbf16>) outs(%e1 : tensor<4xbf16>) -> tensor<4xbf16>
    return %v2 : tensor<4xbf16>
  }
}
