// pbc-parallelize on CPUs (one level): when the cores cannot split the
// outermost parallel loop evenly (7 rows over 2 cores: one core runs 4) and
// its whole body is a parallel loop, that loop is parallelized too, if the
// pair splits better (7 x 20 = 140); S4's canonicalize merges the two
// scf.parallel loops, and the OpenMP loop covers both (collapse(2)).
// RUN: pbc-opt %s -p 'pbc-parallelize{min-trip=2}' | FileCheck %s
// RUN: pbc-opt %s -p 'pbc-parallelize{min-trip=4}' | FileCheck %s --check-prefix=FOUR
// RUN: pbc-opt %s -p 'pbc-parallelize{min-trip=2}' | pbc-opt - -p 'func.func(lower-affine),func.func(canonicalize),convert-scf-to-openmp' | FileCheck %s --check-prefix=OMP
// CHECK-LABEL: func.func @seven_rows
// CHECK: affine.parallel (%{{.*}}) = (0) to (7) {
// CHECK-NEXT: affine.parallel (%{{.*}}) = (0) to (20) {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 16 {
// OMP-LABEL: func.func @seven_rows
// OMP: omp.loop_nest (%{{.*}}, %{{.*}}) : index = (%{{.*}}, %{{.*}}) to (%{{.*}}, %{{.*}}) step (%{{.*}}, %{{.*}}) collapse(2)
// Eight rows split evenly: one level.
// CHECK-LABEL: func.func @eight_rows
// CHECK: affine.parallel (%{{.*}}) = (0) to (8) {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 20 {
// A body of two loops cannot merge into one OpenMP loop: one level.
// CHECK-LABEL: func.func @two_inner_loops
// CHECK: affine.parallel (%{{.*}}) = (0) to (7) {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 20 {
// CHECK-NOT: affine.parallel
// CHECK: return
// On 4 cores (min-trip=4), 7 x 3 = 21 iterations leave a core idle as
// long as 7 do (6 and 2 rounds of 4): one level. On 2 cores they split better.
// FOUR-LABEL: func.func @no_better
// FOUR: affine.parallel (%{{.*}}) = (0) to (7) {
// FOUR-NEXT: affine.for %{{.*}} = 0 to 3 {
// CHECK-LABEL: func.func @no_better
// CHECK: affine.parallel (%{{.*}}) = (0) to (7) {
// CHECK-NEXT: affine.parallel (%{{.*}}) = (0) to (3) {
func.func @seven_rows(%a: memref<7x20x16xf32>) {
  affine.for %i = 0 to 7 {
    affine.for %j = 0 to 20 {
      affine.for %k = 0 to 16 {
        %x = affine.load %a[%i, %j, %k] : memref<7x20x16xf32>
        %y = arith.addf %x, %x : f32
        affine.store %y, %a[%i, %j, %k] : memref<7x20x16xf32>
      }
    }
  } {pbc.kind = "pointwise"}
  return
}
func.func @eight_rows(%a: memref<8x20x16xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 20 {
      affine.for %k = 0 to 16 {
        %x = affine.load %a[%i, %j, %k] : memref<8x20x16xf32>
        %y = arith.addf %x, %x : f32
        affine.store %y, %a[%i, %j, %k] : memref<8x20x16xf32>
      }
    }
  } {pbc.kind = "pointwise"}
  return
}
func.func @two_inner_loops(%a: memref<7x20x16xf32>, %b: memref<7x20x16xf32>) {
  affine.for %i = 0 to 7 {
    affine.for %j = 0 to 20 {
      affine.for %k = 0 to 16 {
        %x = affine.load %a[%i, %j, %k] : memref<7x20x16xf32>
        %y = arith.addf %x, %x : f32
        affine.store %y, %a[%i, %j, %k] : memref<7x20x16xf32>
      }
    }
    affine.for %j = 0 to 20 {
      affine.for %k = 0 to 16 {
        %x = affine.load %b[%i, %j, %k] : memref<7x20x16xf32>
        %y = arith.addf %x, %x : f32
        affine.store %y, %b[%i, %j, %k] : memref<7x20x16xf32>
      }
    }
  } {pbc.kind = "pointwise"}
  return
}
func.func @no_better(%a: memref<7x3x16xf32>) {
  affine.for %i = 0 to 7 {
    affine.for %j = 0 to 3 {
      affine.for %k = 0 to 16 {
        %x = affine.load %a[%i, %j, %k] : memref<7x3x16xf32>
        %y = arith.addf %x, %x : f32
        affine.store %y, %a[%i, %j, %k] : memref<7x3x16xf32>
      }
    }
  } {pbc.kind = "pointwise"}
  return
}
