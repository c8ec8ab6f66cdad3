// Programs the batch loop refuses compile once with symbolic sizes: the
// header and --signatures show each input `?` as a size symbol (a symbol
// of its own where the program holds at any sizes: @outer; one per
// dimension position where the inputs must agree: @kdyn's contraction
// size; one for all: @square), results take their inputs' symbols, and the
// entry F is the glue's, calling F__pbc_sym. A result whose size is
// computed from the inputs' (@flatten_batch: 8 x the batch) is refused,
// with why. A slice of a static table by a symbol bounds it (inputs/
// symbolic_bounded.mlir: s0 <= 512 in the header and the signatures);
// importers' checks of the sizes are decided over every size up to the
// bounds (one that fails at some is refused, naming the size).
// RUN: pbc --emit=lib --signatures=%t.sig -o %t.so %s && FileCheck %s < %t.h
// RUN: FileCheck %s --check-prefix=SIG < %t.sig
// RUN: nm -D %t.so | FileCheck %s --check-prefix=SYMS
// RUN: not pbc --emit=lib -o %t2.so %S/inputs/symbolic_refusals.mlir 2>&1 | FileCheck %s --check-prefix=REFUSED
// RUN: not pbc --emit=lib --dynamic=symbolic -o %t2.so %S/inputs/symbolic_refusals.mlir 2>&1 | FileCheck %s --check-prefix=ONLY
// RUN: pbc --emit=lib --signatures=%t3.sig -o %t3.so %S/inputs/symbolic_bounded.mlir && FileCheck %s --check-prefix=BOUNDED < %t3.h
// RUN: FileCheck %s --check-prefix=BOUNDED-SIG < %t3.sig
// RUN: not pbc --emit=lib -o %t4.so %S/inputs/symbolic_failing_check.mlir 2>&1 | FileCheck %s --check-prefix=FAILING
// BOUNDED: void _mlir_ciface_positions(const PbcMemRef_i64_2 *in0 /* 1xs0xi64 */,
// BOUNDED-NEXT: PbcMemRef_i64_2 *out0 /* 1xs0xi64 */
// BOUNDED-NEXT: /* s0 <= 512 */);
// BOUNDED-SIG: positions 1 1
// BOUNDED-SIG: symbols 1 512
// FAILING: symbolic_failing_check.mlir:11:3: error: @checked cannot be compiled with symbolic sizes: the program's own check "three times the sequence fits" fails at s0 = 334
// CHECK: A size s0, s1, ... is a size symbol's
// CHECK: void _mlir_ciface_outer(const PbcMemRef_f32_1 *in0 /* s0xf32 */,
// CHECK-NEXT: const PbcMemRef_f32_1 *in1 /* s1xf32 */,
// CHECK-NEXT: PbcMemRef_f32_2 *out0 /* s0xs1xf32 */);
// CHECK: void _mlir_ciface_kdyn(const PbcMemRef_f32_2 *in0 /* 4xs0xf32 */,
// CHECK-NEXT: const PbcMemRef_f32_2 *in1 /* s0x16xf32 */,
// CHECK-NEXT: PbcMemRef_f32_2 *out0 /* 4x16xf32 */);
// CHECK: void _mlir_ciface_square(const PbcMemRef_f32_2 *in0 /* s0xs0xf32 */,
// CHECK-NEXT: PbcMemRef_f32_2 *out0 /* s0xs0xf32 */);
// SIG: outer 2 1
// SIG-NEXT: 0 1 -2
// SIG-NEXT: 0 1 -3
// SIG-NEXT: 0 2 -2 -3
// SIG: kdyn 2 1
// SIG-NEXT: 0 2 4 -2
// SIG-NEXT: 0 2 -2 16
// SIG-NEXT: 0 2 4 16
// SIG-NEXT: symbols 0
// SYMS-DAG: T _mlir_ciface_outer
// SYMS-DAG: T _mlir_ciface_outer__pbc_sym
// SYMS-DAG: T _pbc_packed_kdyn
// REFUSED-DAG: symbolic_refusals.mlir:{{[0-9]+}}:3: error: @flatten_batch does not separate over its batch
// REFUSED-DAG: error: @flatten_batch cannot be compiled with symbolic sizes: with a size of its own for each '?': result 0's size 0 is computed from the inputs' sizes, not one of them (its caller could not allocate it); give its sizes (pbc --shape or --dim) to compile it for them
// ONLY-NOT: does not separate
// ONLY: error: @flatten_batch cannot be compiled with symbolic sizes
#id = affine_map<(i, j) -> (i, j)>
func.func @outer(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %a, %c0 : tensor<?xf32>
  %n = tensor.dim %b, %c0 : tensor<?xf32>
  %e = tensor.empty(%m, %n) : tensor<?x?xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (j)>, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    linalg.yield %p : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
func.func @kdyn(%a: tensor<4x?xf32>, %b: tensor<?x16xf32>) -> tensor<4x16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = linalg.matmul ins(%a, %b : tensor<4x?xf32>, tensor<?x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
func.func @square(%a: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?x?xf32>
  %e = tensor.empty(%n, %n) : tensor<?x?xf32>
  %t = linalg.transpose ins(%a : tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) permutation = [1, 0]
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %t : tensor<?x?xf32>, tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
