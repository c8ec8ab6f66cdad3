// pbc-vectorize leaves i1 buffers scalar: a buffer of i1 holds a byte per
// element, a vector<16xi1> is bit-packed (loaded as 2 bytes, it read the
// mask's first 16 elements from 2 bytes of it: a select by a boolean mask,
// such as a boolean attention mask made additive, came out wrong). The
// select over the mask still runs as a scalar loop, and matches the naive
// reference.
// RUN: pbc --chip=x86-64-v4 --emit=s3 %s | FileCheck %s
// RUN: pbc --run=1 --check %s
// CHECK-LABEL: func.func @bool_mask_to_additive
// CHECK-NOT: vector<{{[0-9]+}}xi1>
// CHECK: return
func.func @bool_mask_to_additive(%m: tensor<4x37xi1>) -> tensor<4x37xf32> {
  %a = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<f32>
  %ninf = linalg.fill ins(%a : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<f32>
  %zero = linalg.fill ins(%z : f32) outs(%e1 : tensor<f32>) -> tensor<f32>
  %e = tensor.empty() : tensor<4x37xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>,
                                        affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%m, %zero, %ninf : tensor<4x37xi1>, tensor<f32>, tensor<f32>) outs(%e : tensor<4x37xf32>) {
  ^bb0(%c: i1, %x: f32, %y: f32, %o: f32):
    %s = arith.select %c, %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x37xf32>
  return %r : tensor<4x37xf32>
}
