// A reshape by a shape tensor built from the input's sizes (torch-mlir's
// ONNX Reshape): once the sizes are fixed the shape is a constant and the
// reshape a static one (a collapse and an expand), so the result is static.
// RUN: pbc --emit=s1 --shape=0=3x5x8 %s | FileCheck %s
// CHECK: func.func @heads(%arg0: memref<3x5x8xf32>, %arg1: memref<3x5x2x4xf32>)
// CHECK-NOT: ?x
// RUN: pbc --run=1 --check --shape=0=2x7x8 %s | FileCheck %s --check-prefix=RAN
// RAN: check PASS
func.func @heads(%x: tensor<?x?x8xf32>) -> tensor<?x?x2x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %x, %c0 : tensor<?x?x8xf32>
  %n = tensor.dim %x, %c1 : tensor<?x?x8xf32>
  %bi = arith.index_cast %b : index to i64
  %ni = arith.index_cast %n : index to i64
  %two = arith.constant 2 : i64
  %four = arith.constant 4 : i64
  %shape = tensor.from_elements %bi, %ni, %two, %four : tensor<4xi64>
  %r = tensor.reshape %x(%shape) : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<?x?x2x4xf32>
  %z = tensor.empty(%b, %n) : tensor<?x?x2x4xf32>
  %e = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%r : tensor<?x?x2x4xf32>) outs(%z : tensor<?x?x2x4xf32>) {
    ^bb0(%v: f32, %o: f32):
      %t = math.tanh %v : f32
      linalg.yield %t : f32
  } -> tensor<?x?x2x4xf32>
  return %e : tensor<?x?x2x4xf32>
}
