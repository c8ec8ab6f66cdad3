// A program with dynamic sizes: without given sizes a located error naming
// the argument (where no library for every size is made: --emit=obj;
// --emit=lib --dynamic=batch names what keeps @pair from the batch loop; the
// default compiles both with symbolic sizes); with --shape or --dim compiled for those sizes, the results
// taking the sizes the program computes; given sizes that contradict a
// static one are an error; --run draws one size for every open dimension.
// RUN: not pbc --emit=obj -o %t.o %s 2>&1 | FileCheck %s --check-prefix=NOSIZES
// NOSIZES: dynamic_shape.mlir:[[# @LINE + 22]]:1: error: argument 0 of @rows has dynamic sizes (tensor<?x3xf32>): give them (pbc --shape=0=D0x..., --dim=N; libpbc pbcProgramCompileShaped), or compile a library (--emit=lib), which serves every size
// RUN: not pbc --emit=lib --dynamic=batch -o %t.so %s 2>&1 | FileCheck %s --check-prefix=LIB
// LIB: error: argument 1 of @pair has a dynamic size in dimension 1: pbc compiles one library for every size of a leading (batch) dimension only
// RUN: pbc --emit=lib -o %t.so %s && FileCheck %s --check-prefix=SYM < %t.h
// SYM: in0 /* s0x3xf32 */
// SYM: out0 /* s0xf32 */
// SYM: in0 /* s0x3xf32 */
// SYM: in1 /* 3xs1xf32 */
// SYM: out0 /* s0xs1xf32 */
// RUN: pbc --emit=s1 --shape=0=7x3 --dim=5 %s | FileCheck %s --check-prefix=SHAPE
// SHAPE: func.func @rows(%arg0: memref<7x3xf32>, %arg1: memref<7xf32>)
// SHAPE: func.func @pair(%arg0: memref<7x3xf32>, %arg1: memref<3x5xf32>, %arg2: memref<7x5xf32>)
// RUN: pbc --emit=s1 --dim=2 '--shape=pair:1=3x9;rows:0=4x3' %s | FileCheck %s --check-prefix=MIXED
// MIXED: func.func @rows(%arg0: memref<4x3xf32>, %arg1: memref<4xf32>)
// MIXED: func.func @pair(%arg0: memref<2x3xf32>, %arg1: memref<3x9xf32>, %arg2: memref<2x9xf32>)
// RUN: not pbc --emit=s1 --shape=0=7x4 %s 2>&1 | FileCheck %s --check-prefix=CONTRA
// CONTRA: error: argument 0 of @rows is tensor<?x3xf32>: --shape gives dimension 1 the size 4
// RUN: not pbc --emit=s1 --dim=2 %S/inputs/rank9_dynamic.mlir 2>&1 | FileCheck %s --check-prefix=RANK
// RANK: rank9_dynamic.mlir:2:1: error: argument 0 of @f has rank 9; pbc supports at most 8
// RUN: pbc --run=1 --check --seed=3 %s 2>&1 | FileCheck %s --check-prefix=DRAWN
// DRAWN: pbc: dynamic sizes drawn as {{[0-9]+}} (seed 3; --dim or --shape fixes them)
// DRAWN-COUNT-2: check PASS
func.func @rows(%x: tensor<?x3xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %x, %c0 : tensor<?x3xf32>
  %z = tensor.empty(%b) : tensor<?xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%z : tensor<?xf32>) -> tensor<?xf32>
  %s = linalg.reduce ins(%x : tensor<?x3xf32>) outs(%f : tensor<?xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %t = arith.addf %a, %acc : f32
      linalg.yield %t : f32
    }
  return %s : tensor<?xf32>
}
func.func @pair(%x: tensor<?x3xf32>, %w: tensor<3x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %x, %c0 : tensor<?x3xf32>
  %n = tensor.dim %w, %c1 : tensor<3x?xf32>
  %z = tensor.empty(%m, %n) : tensor<?x?xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%z : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.matmul ins(%x, %w : tensor<?x3xf32>, tensor<3x?xf32>) outs(%f : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
