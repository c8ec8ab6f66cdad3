// pbc differential reproducer (seed 3 program 37, variant O3)
// ARGS: 
// outcome: mismatch: output 0: 600 of 1700 elements differ; first at (0, 10): got -3.0, numpy 49.0 (allowed 0)
module {
  func.func @f(%a0: tensor<100x17xi32>) -> tensor<100x17xi32> {
    %e1 = tensor.empty() : tensor<100x17xi32>
    %v2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
        ins(%a0 : tensor<100x17xi32>) outs(%e1 : tensor<100x17xi32>) {
      ^bb0(%b0: i32, %bo: i32):
    %i4 = linalg.index 1 : index
    %v5 = arith.constant 9 : index
    %p3 = arith.cmpi sgt, %i4, %v5 : index
    %v7 = arith.constant 2 : index
    %i9 = linalg.index 0 : index
    %v8 = arith.addi %i9, %v7 : index
    %p6 = arith.cmpi ult, %i4, %v8 : index
    %v11 = arith.constant 41 : index
    %p10 = arith.cmpi ult, %i9, %v11 : index
    %v12 = arith.select %p10, %b0, %b0 : i32
    %p13 = arith.cmpi slt, %i9, %i4 : index
    %v14 = arith.select %p13, %b0, %b0 : i32
    %v15 = arith.select %p6, %v12, %v14 : i32
    %v17 = arith.constant 85 : index
    %p16 = arith.cmpi ne, %i9, %v17 : index
    %c18 = arith.constant -3 : i32
    %c19 = arith.constant 2 : i32
    %v20 = arith.select %p16, %c18, %c19 : i32
    %v21 = arith.addi %b0, %b0 : i32
    %v22 = arith.minsi %v20, %v21 : i32
    %v23 = arith.select %p3, %v15, %v22 : i32
      linalg.yield %v23 : i32
    } -> tensor<100x17xi32>
    return %v2 : tensor<100x17xi32>
  }
}
