// pbc-fuse-slices, the paper's Fig. 6: a stencil consumer (it reads rows
// h .. h+4 of the intermediate) is tiled along h (64 rows: the 4-row halo is
// 6% of redundant work, within the 10% bound), and per tile the producers
// (fill, then the horizontal pass) compute the 68 rows it reads into a
// private buffer; the global intermediate is gone, and the tile loop is
// marked parallel. Rejected: a private buffer (17 KiB here) larger than
// half of L2, a producer that reads its own output at another row (a recurrence
// along h), and an intermediate read by anything besides the consumer.
// The private buffer gets half of L2 (the other half holds the streams): in
// SMALL, 68 rows of 64 floats exceed 8 KiB, and the rows are too short to
// split (a 32-float run is under 256 bytes). In TWOD, @wide's 68 rows of
// 1024 floats exceed 64 KiB: its columns are tiled too, by 128 (68 x 128
// floats fit), and each 2-D tile has its own buffer.
// RUN: pbc-opt %s -p 'pbc-fuse-slices{l2-bytes=1048576}' | FileCheck %s
// RUN: pbc-opt %s -p 'pbc-fuse-slices{l2-bytes=16384}' | FileCheck %s --check-prefix=SMALL
// RUN: pbc-opt %s -p 'pbc-fuse-slices{l2-bytes=131072}' | FileCheck %s --check-prefix=TWOD

// CHECK-LABEL: func.func @blur
// CHECK-NOT: memref.alloc() {{.*}} : memref<1028x64xf32>
// CHECK: affine.for %[[T:.*]] = 0 to 1024 step 64 {
// CHECK-NEXT: %[[P:.*]] = memref.alloc() {alignment = 64 : i64} : memref<68x64xf32>
// CHECK: affine.for %[[H:.*]] = 0 to 68 {
// CHECK: %[[R:.*]] = affine.apply #{{.*}}(%[[T]], %[[H]])
// CHECK: affine.store %{{.*}}, %[[P]][%[[R]] - %[[T]], %{{.*}}] : memref<68x64xf32>
// CHECK: affine.for %[[H2:.*]] = 0 to 68 {
// CHECK: %[[R2:.*]] = affine.apply #{{.*}}(%[[T]], %[[H2]])
// CHECK: affine.load %arg0[%[[R2]], %{{.*}}]
// CHECK: affine.store %{{.*}}, %[[P]][%[[R2]] - %[[T]], %{{.*}}] : memref<68x64xf32>
// CHECK: affine.for %[[H3:.*]] = 0 to 64 {
// CHECK: %[[R3:.*]] = affine.apply #{{.*}}(%[[T]], %[[H3]])
// CHECK: affine.load %[[P]][%[[R3]] + %{{.*}} - %[[T]], %{{.*}}] : memref<68x64xf32>
// CHECK: affine.store %{{.*}}, %arg1[%[[R3]], %{{.*}}] : memref<1024x64xf32>
// CHECK: memref.dealloc %[[P]]
// CHECK-NEXT: } {pbc.kind = "misc", pbc.parallel}
// CHECK-NOT: memref.alloc
// CHECK: return
// SMALL-LABEL: func.func @blur
// SMALL: memref.alloc() {{.*}} : memref<1028x64xf32>
// SMALL-NOT: step 64
// SMALL-LABEL: func.func @recurrence

// CHECK-LABEL: func.func @wide
// CHECK-NOT: memref.alloc() {{.*}} : memref<1028x1024xf32>
// CHECK: affine.for %{{.*}} = 0 to 1024 step 64 {
// CHECK-NEXT: memref.alloc() {alignment = 64 : i64} : memref<68x1024xf32>
// CHECK-NOT: memref.alloc() {{.*}} : memref<1028x1024xf32>
// TWOD-LABEL: func.func @wide
// TWOD-NOT: memref.alloc() {{.*}} : memref<1028x1024xf32>
// TWOD: affine.for %[[T:.*]] = 0 to 1024 step 64 {
// TWOD-NEXT: affine.for %[[U:.*]] = 0 to 1024 step 128 {
// TWOD-NEXT: %[[P:.*]] = memref.alloc() {alignment = 64 : i64} : memref<68x128xf32>
// TWOD: affine.for %[[H:.*]] = 0 to 68 {
// TWOD-NEXT: affine.for %[[W:.*]] = 0 to 128 {
// TWOD-DAG: %[[R:.*]] = affine.apply #{{.*}}(%[[T]], %[[H]])
// TWOD-DAG: %[[C:.*]] = affine.apply #{{.*}}(%[[U]], %[[W]])
// TWOD: %{{.*}} = affine.load %arg0[%[[R]], %[[C]]] : memref<1028x1024xf32>
// TWOD: affine.store %{{.*}}, %[[P]][%[[R]] - %[[T]], %[[C]] - %[[U]]] : memref<68x128xf32>
// TWOD: affine.for %[[H2:.*]] = 0 to 64 {
// TWOD-NEXT: affine.for %[[W2:.*]] = 0 to 128 {
// TWOD-DAG: %[[R2:.*]] = affine.apply #{{.*}}(%[[T]], %[[H2]])
// TWOD-DAG: %[[C2:.*]] = affine.apply #{{.*}}(%[[U]], %[[W2]])
// TWOD: affine.load %[[P]][%[[R2]] + %{{.*}} - %[[T]], %[[C2]] - %[[U]]] : memref<68x128xf32>
// TWOD: affine.store %{{.*}}, %arg1[%[[R2]], %[[C2]]] : memref<1024x1024xf32>
// TWOD: memref.dealloc %[[P]]
// TWOD-NEXT: } {pbc.parallel}
// TWOD-NEXT: } {pbc.kind = "misc", pbc.parallel}
// TWOD-NOT: memref.alloc
// TWOD: return

// A stencil along the inner dimension: its tile (32 + 2 columns, 136-byte
// rows) is the run, whatever the row tile; under kMinRunBytes, so TWOD
// keeps the intermediate (a 256 x 34 buffer before).
// TWOD-LABEL: func.func @inner_stencil
// TWOD: memref.alloc() {{.*}} : memref<1024x1026xf32>
// TWOD-NOT: memref.alloc
// TWOD: return

// CHECK-LABEL: func.func @recurrence
// CHECK: memref.alloc() {{.*}} : memref<1028x64xf32>
// CHECK-NOT: step 64
// CHECK-LABEL: func.func @escapes
// CHECK: memref.alloc() {{.*}} : memref<1028x64xf32>
// CHECK-NOT: step 64
// CHECK: return

func.func @blur(%x: memref<1028x64xf32>, %y: memref<1024x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() {alignment = 64 : i64} : memref<1028x64xf32>
  affine.for %h = 0 to 1028 {
    affine.for %w = 0 to 64 {
      affine.store %zero, %t[%h, %w] : memref<1028x64xf32>
    }
  } {pbc.kind = "pointwise"}
  affine.for %h = 0 to 1028 {
    affine.for %w = 0 to 64 {
      %a = affine.load %x[%h, %w] : memref<1028x64xf32>
      %b = affine.load %t[%h, %w] : memref<1028x64xf32>
      %s = arith.addf %a, %b : f32
      affine.store %s, %t[%h, %w] : memref<1028x64xf32>
    }
  } {pbc.kind = "pointwise"}
  affine.for %h = 0 to 1024 {
    affine.for %w = 0 to 64 {
      affine.for %k = 0 to 5 {
        %a = affine.load %t[%h + %k, %w] : memref<1028x64xf32>
        %o = affine.load %y[%h, %w] : memref<1024x64xf32>
        %s = arith.addf %a, %o : f32
        affine.store %s, %y[%h, %w] : memref<1024x64xf32>
      }
    }
  } {pbc.kind = "matmul"}
  memref.dealloc %t : memref<1028x64xf32>
  return
}

func.func @wide(%x: memref<1028x1024xf32>, %y: memref<1024x1024xf32>) {
  %t = memref.alloc() {alignment = 64 : i64} : memref<1028x1024xf32>
  affine.for %h = 0 to 1028 {
    affine.for %w = 0 to 1024 {
      %a = affine.load %x[%h, %w] : memref<1028x1024xf32>
      %b = arith.mulf %a, %a : f32
      affine.store %b, %t[%h, %w] : memref<1028x1024xf32>
    }
  } {pbc.kind = "pointwise"}
  affine.for %h = 0 to 1024 {
    affine.for %w = 0 to 1024 {
      affine.for %k = 0 to 5 {
        %a = affine.load %t[%h + %k, %w] : memref<1028x1024xf32>
        %o = affine.load %y[%h, %w] : memref<1024x1024xf32>
        %s = arith.addf %a, %o : f32
        affine.store %s, %y[%h, %w] : memref<1024x1024xf32>
      }
    }
  } {pbc.kind = "matmul"}
  memref.dealloc %t : memref<1028x1024xf32>
  return
}

func.func @inner_stencil(%x: memref<1024x1026xf32>, %y: memref<1024x1024xf32>) {
  %t = memref.alloc() {alignment = 64 : i64} : memref<1024x1026xf32>
  affine.for %h = 0 to 1024 {
    affine.for %w = 0 to 1026 {
      %a = affine.load %x[%h, %w] : memref<1024x1026xf32>
      %b = arith.mulf %a, %a : f32
      affine.store %b, %t[%h, %w] : memref<1024x1026xf32>
    }
  } {pbc.kind = "pointwise"}
  affine.for %h = 0 to 1024 {
    affine.for %w = 0 to 1024 {
      affine.for %k = 0 to 3 {
        %a = affine.load %t[%h, %w + %k] : memref<1024x1026xf32>
        %o = affine.load %y[%h, %w] : memref<1024x1024xf32>
        %s = arith.addf %a, %o : f32
        affine.store %s, %y[%h, %w] : memref<1024x1024xf32>
      }
    }
  } {pbc.kind = "matmul"}
  memref.dealloc %t : memref<1024x1026xf32>
  return
}

func.func @recurrence(%x: memref<1028x64xf32>, %y: memref<1024x64xf32>) {
  %t = memref.alloc() {alignment = 64 : i64} : memref<1028x64xf32>
  affine.for %h = 1 to 1028 {
    affine.for %w = 0 to 64 {
      %a = affine.load %t[%h - 1, %w] : memref<1028x64xf32>
      affine.store %a, %t[%h, %w] : memref<1028x64xf32>
    }
  } {pbc.kind = "misc"}
  affine.for %h = 0 to 1024 {
    affine.for %w = 0 to 64 {
      affine.for %k = 0 to 5 {
        %a = affine.load %t[%h + %k, %w] : memref<1028x64xf32>
        affine.store %a, %y[%h, %w] : memref<1024x64xf32>
      }
    }
  } {pbc.kind = "misc"}
  memref.dealloc %t : memref<1028x64xf32>
  return
}

func.func @escapes(%x: memref<1028x64xf32>, %y: memref<1024x64xf32>, %z: memref<1028x64xf32>) {
  %t = memref.alloc() {alignment = 64 : i64} : memref<1028x64xf32>
  affine.for %h = 0 to 1028 {
    affine.for %w = 0 to 64 {
      %a = affine.load %x[%h, %w] : memref<1028x64xf32>
      affine.store %a, %t[%h, %w] : memref<1028x64xf32>
    }
  } {pbc.kind = "pointwise"}
  affine.for %h = 0 to 1024 {
    affine.for %w = 0 to 64 {
      affine.for %k = 0 to 5 {
        %a = affine.load %t[%h + %k, %w] : memref<1028x64xf32>
        %o = affine.load %y[%h, %w] : memref<1024x64xf32>
        %s = arith.addf %a, %o : f32
        affine.store %s, %y[%h, %w] : memref<1024x64xf32>
      }
    }
  } {pbc.kind = "matmul"}
  memref.copy %t, %z : memref<1028x64xf32> to memref<1028x64xf32>
  memref.dealloc %t : memref<1028x64xf32>
  return
}
