// pbc-outline-nests: each top-level nest becomes a private noinline
// function with internal LLVM linkage, called where it was; values from
// outside become arguments except constants (cloned in); identical nests
// (here: the same copy on two different buffers) share one function; a
// nest with results stays.
// RUN: pbc-opt %s -p 'pbc-outline-nests' | FileCheck %s
// CHECK-LABEL: func.func @main
// CHECK-NOT: optnone
// CHECK-SAME: (%[[A:.*]]: memref<8xf32>, %[[B:.*]]: memref<8xf32>, %[[C:.*]]: memref<8xf32>, %[[S:.*]]: f32)
// CHECK-NOT: affine.for
// CHECK: call @[[SCALE:main_nest[0-9]+]](%[[A]], %[[S]], %[[B]])
// CHECK-NEXT: call @[[SCALE]](%[[B]], %[[S]], %[[C]])
// CHECK: call @[[FILL:main_nest[0-9]+]](%[[C]])
// CHECK: scf.for {{.*}} iter_args
// CHECK: return
// CHECK-DAG: func.func private @[[SCALE]](%{{.*}}: memref<8xf32>, %{{.*}}: f32, %{{.*}}: memref<8xf32>) attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]}
// CHECK-DAG: func.func private @[[FILL]](%{{.*}}: memref<8xf32>)
// CHECK-DAG: arith.constant 3.0
// CHECK-NOT: func.func private @main_nest
func.func @main(%a: memref<8xf32>, %b: memref<8xf32>, %c: memref<8xf32>, %s: f32) -> f32 {
  affine.for %i = 0 to 8 {
    %v = affine.load %a[%i] : memref<8xf32>
    %w = arith.mulf %v, %s : f32
    affine.store %w, %b[%i] : memref<8xf32>
  }
  affine.for %i = 0 to 8 {
    %v = affine.load %b[%i] : memref<8xf32>
    %w = arith.mulf %v, %s : f32
    affine.store %w, %c[%i] : memref<8xf32>
  }
  %k = arith.constant 3.0 : f32
  affine.parallel (%i) = (0) to (8) {
    affine.store %k, %c[%i] : memref<8xf32>
  }
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> f32 {
    %v = memref.load %c[%i] : memref<8xf32>
    %n = arith.addf %acc, %v : f32
    scf.yield %n : f32
  }
  return %sum : f32
}
// A function left with no loops is glue: optnone (with noinline, which
// optnone needs); one that keeps a loop (@main above) is not.
// CHECK-LABEL: func.func @glue
// CHECK-SAME: passthrough = ["noinline", "optnone"]
// CHECK: call @glue_nest
// CHECK-NOT: optnone
func.func @glue(%a: memref<8xf32>, %b: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %v = affine.load %a[%i] : memref<8xf32>
    affine.store %v, %b[%i] : memref<8xf32>
  }
  return
}
