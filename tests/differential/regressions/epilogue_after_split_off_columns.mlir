// pbc differential reproducer (seed 104 program 52, variant no-unroll)
// ARGS: --disable=unroll
// outcome (before the fix): mismatch: output 0: 8 of 9 elements differ (pbc-fuse-epilogue fused the xori into the nest of the last column, which pbc-tile had split off, and dropped it for the other 8)
module {
  func.func @f(%a0: tensor<1x48xi8>, %a1: tensor<9x48xi8>, %a2: tensor<1x9xi32>) -> tensor<1x9xi32> {
    %e1 = tensor.empty() : tensor<1x9xi32>
    %c2 = arith.constant 0 : i32
    %f3 = linalg.fill ins(%c2 : i32) outs(%e1 : tensor<1x9xi32>) -> tensor<1x9xi32>
    %v4 = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a0, %a1 : tensor<1x48xi8>, tensor<9x48xi8>) outs(%f3 : tensor<1x9xi32>) {
      ^bb0(%x: i8, %y: i8, %acc: i32):
    %v5 = arith.extsi %x : i8 to i32
    %v6 = arith.extsi %y : i8 to i32
    %v7 = arith.muli %v5, %v6 : i32
    %v8 = arith.addi %acc, %v7 : i32
      linalg.yield %v8 : i32
    } -> tensor<1x9xi32>
    %e9 = tensor.empty() : tensor<1x9xi32>
    %v10 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
        ins(%v4, %v4, %a2 : tensor<1x9xi32>, tensor<1x9xi32>, tensor<1x9xi32>) outs(%e9 : tensor<1x9xi32>) {
      ^bb0(%b0: i32, %b1: i32, %b2: i32, %bo: i32):
    %c11 = arith.constant 4 : i32
    %v12 = arith.xori %c11, %b0 : i32
      linalg.yield %v12 : i32
    } -> tensor<1x9xi32>
    return %v10 : tensor<1x9xi32>
  }
}
