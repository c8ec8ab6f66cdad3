// pbc-fp-contract lets multiply-adds fuse (fastmath<contract>).
// RUN: pbc-opt %s -p 'pbc-fp-contract' | FileCheck %s
// CHECK: arith.mulf %{{.*}} fastmath<contract>
// CHECK: arith.addf %{{.*}} fastmath<contract>
// CHECK: arith.divf %{{.*}} : f32
func.func @f(%a: f32, %b: f32) -> f32 {
  %m = arith.mulf %a, %b : f32
  %s = arith.addf %m, %a : f32
  %d = arith.divf %s, %b : f32
  return %d : f32
}
