// pbc-streaming-stores: vector stores into a result the function only
// writes, larger than a quarter of L3, become non-temporal in a copy of the
// nest that runs when the result is 64-byte aligned (the original nest runs
// otherwise). Offsets must be multiples of the vector in every iteration
// (steps of parallel and sequential loops, constants). Left alone: a result
// also read, an offset off the vector grid, a result below the threshold.
// RUN: pbc-opt %s -p 'pbc-streaming-stores{l3-bytes=4096}' | FileCheck %s
// RUN: pbc-opt %s -p 'pbc-streaming-stores{l3-bytes=1048576}' | FileCheck %s --check-prefix=BIG
// CHECK-LABEL: func.func @stream
// CHECK: %[[P:.*]] = memref.extract_aligned_pointer_as_index %arg1
// CHECK: %[[R:.*]] = arith.remui %[[P]], %c64
// CHECK: %[[OK:.*]] = arith.cmpi eq, %[[R]], %c0
// CHECK: scf.if %[[OK]] {
// CHECK: affine.parallel
// CHECK: vector.store %{{.*}}, %arg1[%{{.*}}, %{{.*}}] {alignment = 64 : i64, nontemporal = true}
// CHECK: vector.store %{{.*}}, %arg1[%{{.*}}, %{{.*}}] {alignment = 64 : i64, nontemporal = true}
// CHECK: } else {
// CHECK: affine.parallel
// CHECK: affine.vector_store %{{.*}}, %arg1[%{{.*}}, %{{.*}}]
// CHECK: affine.vector_store %{{.*}}, %arg1[%{{.*}}, %{{.*}} + 16]
// Mixed vector sizes: the base is checked against the largest, and each
// store claims only its own vector's alignment.
// CHECK-LABEL: func.func @mixed
// CHECK: arith.remui %{{.*}}, %c64
// CHECK: vector.store {{.*}} {alignment = 64 : i64, nontemporal = true} : memref<64x64xf32>, vector<16xf32>
// CHECK: vector.store {{.*}} {alignment = 32 : i64, nontemporal = true} : memref<64x64xf32>, vector<8xf32>
// CHECK-LABEL: func.func @read_back
// CHECK-NOT: scf.if
// CHECK-LABEL: func.func @off_grid
// CHECK-NOT: scf.if
// CHECK: return
// BIG-NOT: scf.if
func.func @stream(%x: memref<64x64xf32>, %y: memref<64x64xf32>) {
  affine.parallel (%i) = (0) to (64) step (2) {
    affine.for %ii = 0 to 2 {
      affine.for %j = 0 to 64 step 32 {
        %a = affine.vector_load %x[%i + %ii, %j] : memref<64x64xf32>, vector<16xf32>
        affine.vector_store %a, %y[%i + %ii, %j] : memref<64x64xf32>, vector<16xf32>
        %b = affine.vector_load %x[%i + %ii, %j + 16] : memref<64x64xf32>, vector<16xf32>
        affine.vector_store %b, %y[%i + %ii, %j + 16] : memref<64x64xf32>, vector<16xf32>
      }
    }
  }
  return
}
func.func @mixed(%x: memref<64x64xf32>, %y: memref<64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 step 32 {
      %a = affine.vector_load %x[%i, %j] : memref<64x64xf32>, vector<16xf32>
      affine.vector_store %a, %y[%i, %j] : memref<64x64xf32>, vector<16xf32>
      %b = affine.vector_load %x[%i, %j + 16] : memref<64x64xf32>, vector<8xf32>
      affine.vector_store %b, %y[%i, %j + 16] : memref<64x64xf32>, vector<8xf32>
      %c = affine.vector_load %x[%i, %j + 24] : memref<64x64xf32>, vector<8xf32>
      affine.vector_store %c, %y[%i, %j + 24] : memref<64x64xf32>, vector<8xf32>
    }
  }
  return
}
func.func @read_back(%x: memref<64x64xf32>, %y: memref<64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 step 16 {
      %a = affine.vector_load %x[%i, %j] : memref<64x64xf32>, vector<16xf32>
      %b = affine.vector_load %y[%i, %j] : memref<64x64xf32>, vector<16xf32>
      %s = arith.addf %a, %b : vector<16xf32>
      affine.vector_store %s, %y[%i, %j] : memref<64x64xf32>, vector<16xf32>
    }
  }
  return
}
func.func @off_grid(%x: memref<64x72xf32>, %y: memref<64x72xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 step 16 {
      %a = affine.vector_load %x[%i, %j] : memref<64x72xf32>, vector<16xf32>
      affine.vector_store %a, %y[%i, %j] : memref<64x72xf32>, vector<16xf32>
    }
  }
  return
}
