// [group] entries of S3 are skipped by --disable and at -O0.
// RUN: pbc --emit=s3 %s | FileCheck %s --check-prefix=ON
// RUN: pbc --emit=s3 --disable=parallelization %s | FileCheck %s --check-prefix=OFF
// RUN: pbc --emit=s3 -O0 %s | FileCheck %s --check-prefix=OFF
// ON: affine.parallel
// OFF-NOT: affine.parallel
func.func @f(%a: tensor<2048x512xf32>) -> tensor<2048x512xf32> {
  %e = tensor.empty() : tensor<2048x512xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<2048x512xf32>) outs(%e : tensor<2048x512xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  } -> tensor<2048x512xf32>
  return %r : tensor<2048x512xf32>
}
