// RUN: pbc-opt %s -p 'pbc-classify-nests' | FileCheck %s

// Affine nests the rules do not cover are misc (hand-written, as S2 could
// see them after upstream lowering of other dialects).

func.func private @f(f32) -> f32

// A call in the body.
// CHECK-LABEL: func.func @call(
// CHECK:         } {pbc.kind = "misc"}
func.func @call(%a: memref<16xf32>, %o: memref<16xf32>) {
  affine.for %i = 0 to 16 {
    %x = affine.load %a[%i] : memref<16xf32>
    %y = func.call @f(%x) : (f32) -> f32
    affine.store %y, %o[%i] : memref<16xf32>
  }
  return
}

// A non-affine (indirect) load.
// CHECK-LABEL: func.func @gather(
// CHECK:         } {pbc.kind = "misc"}
func.func @gather(%a: memref<16xf32>, %idx: memref<16xindex>,
                  %o: memref<16xf32>) {
  affine.for %i = 0 to 16 {
    %j = affine.load %idx[%i] : memref<16xindex>
    %x = memref.load %a[%j] : memref<16xf32>
    affine.store %x, %o[%i] : memref<16xf32>
  }
  return
}

// affine.if in the body.
// CHECK-LABEL: func.func @guarded(
// CHECK:         } {pbc.kind = "misc"}
func.func @guarded(%a: memref<16xf32>) {
  %c = arith.constant 1.0 : f32
  affine.for %i = 0 to 16 {
    affine.if affine_set<(d0) : (d0 - 8 >= 0)>(%i) {
      affine.store %c, %a[%i] : memref<16xf32>
    }
  }
  return
}

// No store at all.
// CHECK-LABEL: func.func @no_store(
// CHECK:         } {pbc.kind = "misc"}
func.func @no_store(%a: memref<16xf32>) {
  affine.for %i = 0 to 16 {
    %x = affine.load %a[%i] : memref<16xf32>
  }
  return
}

// A loop-carried value (iter_args).
// CHECK-LABEL: func.func @iter_args(
// CHECK:         } {pbc.kind = "misc"}
func.func @iter_args(%a: memref<16xf32>, %o: memref<f32>) {
  %z = arith.constant 0.0 : f32
  affine.for %j = 0 to 1 {
    %s = affine.for %i = 0 to 16 iter_args(%acc = %z) -> f32 {
      %x = affine.load %a[%i] : memref<16xf32>
      %n = arith.addf %acc, %x : f32
      affine.yield %n : f32
    }
    affine.store %s, %o[] : memref<f32>
  }
  return
}

// A store over a loop it does not index, without accumulating.
// CHECK-LABEL: func.func @last_write(
// CHECK:         } {pbc.kind = "misc"}
func.func @last_write(%a: memref<16xf32>, %o: memref<f32>) {
  affine.for %i = 0 to 16 {
    %x = affine.load %a[%i] : memref<16xf32>
    affine.store %x, %o[] : memref<f32>
  }
  return
}
