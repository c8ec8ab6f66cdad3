// A parallel loop below serial loops would fork once per their iteration.
// NHWC global pooling: serial h, w around a parallel channel loop. With
// min-work, pbc-parallelize moves the channel loop outermost (one fork for
// the nest) when a fork per (h, w) would do less than min-work; the nest
// then forks once, or not at all if it is small. Without min-work, or when
// each fork does enough, the loop is parallelized where it is.
// Work per fork of the c loop: some hundreds (64 iterations of 6 ops,
// weighted: pbc/nest_work.h); of the nest, 12,544 times that.
// RUN: pbc-opt %s -p 'pbc-parallelize{min-trip=2 min-work=1000}' | FileCheck %s --check-prefix=HOIST
// RUN: pbc-opt %s -p 'pbc-parallelize{min-trip=2 min-work=100}' | FileCheck %s --check-prefix=INNER
// RUN: pbc-opt %s -p 'pbc-parallelize{min-trip=2}' | FileCheck %s --check-prefix=INNER
// HOIST-LABEL: func.func @pool
// HOIST: affine.parallel (%[[C:.*]]) = (0) to (64) {
// HOIST-NEXT: affine.for %[[H:.*]] = 0 to 112 {
// HOIST-NEXT: affine.for %[[W:.*]] = 0 to 112 {
// HOIST: affine.load %arg0[0, %[[H]], %[[W]], %[[C]]]
// HOIST: } {pbc.kind = "reduction"}
// INNER-LABEL: func.func @pool
// INNER: affine.for
// INNER-NEXT: affine.for
// INNER-NEXT: affine.parallel (%{{.*}}) = (0) to (64)
func.func @pool(%x: memref<1x112x112x64xf32>, %s: memref<1x1x1x64xf32>) {
  affine.for %h = 0 to 112 {
    affine.for %w = 0 to 112 {
      affine.for %c = 0 to 64 {
        %v = affine.load %x[0, %h, %w, %c] : memref<1x112x112x64xf32>
        %a = affine.load %s[0, 0, 0, %c] : memref<1x1x1x64xf32>
        %n = arith.addf %v, %a : f32
        affine.store %n, %s[0, 0, 0, %c] : memref<1x1x1x64xf32>
      }
    }
  } {pbc.kind = "reduction"}
  return
}
