// The run-time checks importers write (cf.assert): one that folded to true
// goes; a check of gathered indices inside a linalg body goes (pbc clamps
// those indices); one that folded to false is a located error with its
// message; any other stays and is rejected as an unsupported op.
// RUN: pbc --emit=s1 --entry=gather %s | FileCheck %s
// CHECK-NOT: cf.assert
// RUN: pbc --run=1 --check %s 2>&1 | FileCheck %s --check-prefix=RAN
// RAN-NOT: FAIL
// RUN: not pbc --emit=s1 %S/inputs/failing_check.mlir 2>&1 | FileCheck %s --check-prefix=FALSE
// FALSE: failing_check.mlir:4:3: error: the program's own check fails for these sizes: "sizes must agree"
// RUN: not pbc --emit=s1 %S/inputs/runtime_check.mlir 2>&1 | FileCheck %s --check-prefix=OTHER
// OTHER: runtime_check.mlir:7:3: error: unsupported op 'cf.assert'
func.func @gather(%table: tensor<10x4xf32>, %idx: tensor<6xi64>) -> tensor<6x4xf32> {
  %true = arith.constant true
  cf.assert %true, "always"
  %e = tensor.empty() : tensor<6x4xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%idx : tensor<6xi64>) outs(%e : tensor<6x4xf32>) {
    ^bb0(%x: i64, %o: f32):
      %c10 = arith.constant 10 : i64
      %lt = arith.cmpi slt, %x, %c10 : i64
      cf.assert %lt, "index must be smaller than dim size"
      %i = arith.index_cast %x : i64 to index
      %j = linalg.index 1 : index
      %v = tensor.extract %table[%i, %j] : tensor<10x4xf32>
      linalg.yield %v : f32
  } -> tensor<6x4xf32>
  return %g : tensor<6x4xf32>
}
