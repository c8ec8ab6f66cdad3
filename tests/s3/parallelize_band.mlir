// pbc-parallelize band=N parallelizes up to N consecutive parallel loops of a
// nest (GPU targets map them to grid and block dimensions); hoist=1 first
// moves the parallel loops of the band outermost where dependences allow,
// and the nest's pbc.kind moves with the outermost loop.
// RUN: pbc-opt %s -p 'pbc-parallelize{min-trip=1 band=3 hoist=1}' | FileCheck %s --check-prefix=GPU
// RUN: pbc-opt %s -p 'pbc-parallelize{min-trip=1}' | FileCheck %s --check-prefix=ONE

// Sum over the outer k of a 3-D tensor: i and j are parallel, k is not.
// GPU-LABEL: func.func @sum_outer
// GPU: affine.parallel (%[[I:.*]]) = (0) to (8) {
// GPU-NEXT: affine.parallel (%[[J:.*]]) = (0) to (16) {
// GPU-NEXT: affine.for %[[K:.*]] = 0 to 4 {
// GPU: affine.load %arg0[%[[K]], %[[I]], %[[J]]]
// GPU: } {pbc.kind = "reduction"}
// Without band/hoist: one parallel loop, below the reduction loop.
// ONE-LABEL: func.func @sum_outer
// ONE: affine.for %{{.*}} = 0 to 4 {
// ONE-NEXT: affine.parallel (%{{.*}}) = (0) to (8) {
// ONE-NEXT: affine.for %{{.*}} = 0 to 16 {
func.func @sum_outer(%a: memref<4x8x16xf32>, %o: memref<8x16xf32>) {
  affine.for %k = 0 to 4 {
    affine.for %i = 0 to 8 {
      affine.for %j = 0 to 16 {
        %x = affine.load %a[%k, %i, %j] : memref<4x8x16xf32>
        %y = affine.load %o[%i, %j] : memref<8x16xf32>
        %s = arith.addf %x, %y : f32
        affine.store %s, %o[%i, %j] : memref<8x16xf32>
      }
    }
  } {pbc.kind = "reduction"}
  return
}

// Iteration (k, i) reads what (k-1, i+1) wrote: i is parallel within each
// k, but moving it outside k would reverse that dependence, so the band
// keeps its order and i is parallelized in place.
// GPU-LABEL: func.func @skewed
// GPU: affine.for %{{.*}} = 0 to 4 {
// GPU-NEXT: affine.parallel (%{{.*}}) = (0) to (8) {
// GPU: } {pbc.kind = "misc"}
func.func @skewed(%o: memref<5x9xf32>) {
  affine.for %k = 0 to 4 {
    affine.for %i = 0 to 8 {
      %x = affine.load %o[%k, %i + 1] : memref<5x9xf32>
      %s = arith.addf %x, %x : f32
      affine.store %s, %o[%k + 1, %i] : memref<5x9xf32>
    }
  } {pbc.kind = "misc"}
  return
}
