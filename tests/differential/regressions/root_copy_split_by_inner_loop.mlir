// pbc differential reproducer (seed 14 program 161, variant small-caches)
// ARGS: --chip-set=l1d-bytes=16384 --chip-set=l2-bytes=65536 --chip-set=l3-bytes=524288
// outcome: rejected: /tmp/pbc_diff_kdyi5ia5/input.mlir:4:11: error: stage s3 contract violated: 'affine.parallel' root loop has no pbc.kind attribute (every root nest must be classified)
//   pipelines/s3.pipeline:147: error: stage s3: pass 'pbc-verify-stage{stage=s3}' failed
module {
  func.func @f(%a0: tensor<1x33x100xf16>) -> tensor<1x264x100xf16> {
    %e1 = tensor.empty() : tensor<1x33x8x100xf16>
    %v2 = linalg.broadcast ins(%a0 : tensor<1x33x100xf16>) outs(%e1 : tensor<1x33x8x100xf16>) dimensions = [2]
    %v3 = tensor.collapse_shape %v2 [[0], [1, 2], [3]] : tensor<1x33x8x100xf16> into tensor<1x264x100xf16>
    return %v3 : tensor<1x264x100xf16>
  }
}
