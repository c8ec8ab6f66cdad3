// pbc-gpu-map-parallel: a parallel loop becomes blocks x threads, the
// innermost dimension on x (coalesced), thread counts powers of two within
// the block size, a guard only where the block does not divide the trip;
// serial work (an accumulator around a reduction loop) runs as one thread;
// a device value the host would use is a located error.
// RUN: split-file %s %t
// RUN: pbc-opt --target=nvgpu %t/map.mlir -p 'pbc-gpu-map-parallel{threads=256}' | FileCheck %s
// RUN: pbc-opt --target=nvgpu %t/rows.mlir -p 'pbc-gpu-map-parallel{threads=256 warp-size=32}' | FileCheck %s --check-prefix=ROWS
// RUN: not pbc-opt --target=nvgpu %t/host_use.mlir -p 'pbc-gpu-map-parallel{threads=256}' 2>&1 | FileCheck %s --check-prefix=ERR

// 100 x 70: 128 threads on j (x), 2 on i (y); 100 % 2 == 0 needs no guard.
// CHECK-LABEL: func.func @map
// CHECK: scf.parallel (%[[BI:.*]], %[[BJ:.*]]) = (%c0, %c0) to (%c100, %c70) step (%{{.*}}, %{{.*}}) {
// CHECK: scf.parallel (%[[TI:.*]], %[[TJ:.*]]) = (%{{.*}}, %{{.*}}) to (%[[C2:.*]], %[[C128:.*]]) step
// CHECK: %[[I:.*]] = arith.addi %[[BI]], %[[TI]]
// CHECK: %[[J:.*]] = arith.addi %[[BJ]], %[[TJ]]
// CHECK-NOT: arith.cmpi slt, %[[I]]
// CHECK: %[[IN:.*]] = arith.cmpi slt, %[[J]], %c70
// CHECK: scf.if %[[IN]] {
// CHECK: memref.store %{{.*}}, %arg0[%[[I]], %[[J]]]
// CHECK: mapping = [#gpu.loop_dim_map<processor = thread_y{{.*}}>, #gpu.loop_dim_map<processor = thread_x
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_y{{.*}}>, #gpu.loop_dim_map<processor = block_x
// The load, loop and store of a whole-tensor sum become one single-thread kernel.
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step
// CHECK-NEXT: memref.load %arg1[]
// CHECK-NEXT: scf.for
// CHECK: memref.store %{{.*}}, %arg1[]
// CHECK-NEXT: scf.reduce
// CHECK-NEXT: } {mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK: return

// A max along contiguous rows of 100 (not a multiple of the warp): a warp
// per row, 8 rows per block of 256 threads (a guard: 30 rows), lanes
// reading consecutive elements in 4 rounds from -inf (a select past the
// row's end), five xor shuffles, the initial value joined last, lane 0
// storing the row's result.
// ROWS-LABEL: func.func @rows
// ROWS: scf.parallel (%[[B:.*]], %[[R:.*]]) = (%c0, %c0) to (%c4, %c30) step (%c1, %{{.*}}) {
// ROWS: scf.parallel (%[[T:.*]]) = (%{{.*}}) to (%c256{{.*}}) step
// ROWS: %[[LANE:.*]] = arith.remui %[[T]], %c32
// ROWS: %[[WARP:.*]] = arith.divui %[[T]], %c32
// ROWS: %[[ROW:.*]] = arith.addi %[[R]], %{{.*}}
// ROWS: scf.if %{{.*}} {
// ROWS: %[[M:.*]] = scf.for %[[K:.*]] = %c0{{.*}} to %c4{{.*}} step %c1{{.*}} iter_args(%[[ACC:.*]] = %cst{{.*}}) -> (f32) {
// ROWS: %[[J:.*]] = arith.minui %{{.*}}, %c99
// ROWS: memref.load %arg0[%[[B]], %[[ROW]], %[[J]]]
// ROWS: arith.select
// ROWS: arith.maximumf
// ROWS-COUNT-5: gpu.shuffle xor
// ROWS: arith.maximumf %arg2
// ROWS: arith.cmpi eq, %[[LANE]], %c0
// ROWS-NEXT: scf.if
// ROWS-NEXT: memref.store %{{.*}}, %arg1[%[[B]], %[[ROW]]]
// ROWS: mapping = [#gpu.loop_dim_map<processor = thread_x
// ROWS: mapping = [#gpu.loop_dim_map<processor = block_y{{.*}}>, #gpu.loop_dim_map<processor = block_x

// ERR: host_use.mlir:6:9: error: host code would use a value computed on the device

//--- map.mlir
func.func @map(%o: memref<100x70xf32>, %acc: memref<f32>, %v: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c70 = arith.constant 70 : index
  %c100 = arith.constant 100 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c100, %c70) step (%c1, %c1) {
    memref.store %f, %o[%i, %j] : memref<100x70xf32>
    scf.reduce
  }
  %a0 = memref.load %acc[] : memref<f32>
  %s = scf.for %k = %c0 to %c64 step %c1 iter_args(%a = %a0) -> (f32) {
    %x = memref.load %v[%k] : memref<64xf32>
    %y = arith.addf %a, %x : f32
    scf.yield %y : f32
  }
  memref.store %s, %acc[] : memref<f32>
  return
}

//--- rows.mlir
func.func @rows(%x: memref<4x30x100xf32>, %m: memref<4x30xf32>, %init: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c30 = arith.constant 30 : index
  %c100 = arith.constant 100 : index
  scf.parallel (%b, %r) = (%c0, %c0) to (%c4, %c30) step (%c1, %c1) {
    %v = scf.for %j = %c0 to %c100 step %c1 iter_args(%a = %init) -> (f32) {
      %e = memref.load %x[%b, %r, %j] : memref<4x30x100xf32>
      %n = arith.maximumf %e, %a : f32
      scf.yield %n : f32
    }
    memref.store %v, %m[%b, %r] : memref<4x30xf32>
    scf.reduce
  }
  return
}

//--- host_use.mlir
func.func @host_use(%acc: memref<f32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 1.0 : f32
  %a0 = memref.load %acc[] : memref<f32>
  return %a0 : f32
}
