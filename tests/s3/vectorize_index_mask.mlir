// pbc-vectorize: the loop's iv used as a value (a mask's `j > i`) becomes
// each lane's own index, iv + [0 .. lanes), not a splat of the iv (row 0
// kept x in columns 1-15 where the mask applied).
// RUN: pbc-opt %s -p 'pbc-vectorize{vector-bits=512}' | FileCheck %s
// CHECK-LABEL: func.func @mask
// CHECK: affine.for %[[I:.*]] = 0 to 4 {
// CHECK: affine.for %[[J:.*]] = 0 to 32 step 16 {
// CHECK-DAG: %[[B:.*]] = vector.broadcast %[[J]] : index to vector<16xindex>
// CHECK-DAG: %[[S:.*]] = vector.step : vector<16xindex>
// CHECK: %[[JV:.*]] = arith.addi %[[B]], %[[S]] : vector<16xindex>
// CHECK: %[[IV:.*]] = vector.broadcast %[[I]] : index to vector<16xindex>
// CHECK: arith.cmpi ugt, %[[JV]], %[[IV]] : vector<16xindex>
func.func @mask(%x: memref<4x32xf32>, %y: memref<4x32xf32>) {
  %fill = arith.constant -1.0e+30 : f32
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 32 {
      %a = affine.load %x[%i, %j] : memref<4x32xf32>
      %c = arith.cmpi ugt, %j, %i : index
      %s = arith.select %c, %fill, %a : f32
      affine.store %s, %y[%i, %j] : memref<4x32xf32>
    }
  } {pbc.kind = "pointwise"}
  return
}
