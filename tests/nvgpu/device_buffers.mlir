// pbc-gpu-device-buffers: each buffer argument gets a device mirror, filled
// on entry; only written ones are copied back. Constants get a mirror per
// call, top-level allocations become gpu.alloc, and every mirror is freed
// before the return.
// RUN: pbc-opt --target=nvgpu %s -p 'pbc-gpu-device-buffers' | FileCheck %s

memref.global "private" constant @w : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>

// CHECK: func.func @f(%[[IN:.*]]: memref<4xf32>, %[[OUT:.*]]: memref<4xf32>)
// CHECK: %[[DIN:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] () : memref<4xf32>
// CHECK: gpu.memcpy async [%{{.*}}] %[[DIN]], %[[IN]]
// CHECK: %[[DOUT:.*]], %{{.*}} = gpu.alloc async
// CHECK: gpu.memcpy async [%{{.*}}] %[[DOUT]], %[[OUT]]
// CHECK: %[[G:.*]] = memref.get_global @w
// CHECK: %[[DG:.*]], %{{.*}} = gpu.alloc async
// CHECK: gpu.memcpy async [%{{.*}}] %[[DG]], %[[G]]
// CHECK: %[[TMP:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] () : memref<4xf32>
// CHECK-NOT: memref.alloc
// The loops now touch only device buffers.
// CHECK: memref.load %[[DIN]]
// CHECK: memref.load %[[DG]]
// CHECK: memref.store %{{.*}}, %[[TMP]]
// CHECK: memref.load %[[TMP]]
// CHECK: memref.store %{{.*}}, %[[DOUT]]
// CHECK: gpu.dealloc async [%{{.*}}] %[[TMP]]
// The input is only read: not copied back. The output is.
// CHECK-NOT: gpu.memcpy async [%{{.*}}] %[[IN]]
// CHECK: gpu.dealloc async [%{{.*}}] %[[DIN]]
// CHECK: gpu.memcpy async [%{{.*}}] %[[OUT]], %[[DOUT]]
// CHECK: gpu.dealloc async [%{{.*}}] %[[DOUT]]
// CHECK-NOT: gpu.memcpy async [%{{.*}}] %[[G]]
// CHECK: gpu.dealloc async [%{{.*}}] %[[DG]]
// CHECK: return
func.func @f(%in: memref<4xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %g = memref.get_global @w : memref<4xf32>
  %tmp = memref.alloc() : memref<4xf32>
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %x = memref.load %in[%i] : memref<4xf32>
    %y = memref.load %g[%i] : memref<4xf32>
    %s = arith.addf %x, %y : f32
    memref.store %s, %tmp[%i] : memref<4xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %x = memref.load %tmp[%i] : memref<4xf32>
    memref.store %x, %out[%i] : memref<4xf32>
    scf.reduce
  }
  memref.dealloc %tmp : memref<4xf32>
  return
}
