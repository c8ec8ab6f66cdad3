// pbc-transpose-copies: a pbc.copy nest whose innermost two loops read
// along one and write along the other becomes blocks of lanes x lanes (16
// f32 at 512 bits, 8 at 256): lanes vector loads along the input's rows,
// log2(lanes) rounds of lanes shuffles, lanes vector stores along the copy's
// rows, both loops stepping by the lanes. Here as pbc-pack leaves a GEMM's
// B tile read as N x K: inside a tile loop, bounds and subscripts offset by
// the tile's origin; partial blocks stay element by element (@partial_blocks).
// Not transformed: fewer iterations than a block, copies that do not
// transpose, nests not marked pbc.copy, i1.
// RUN: pbc-opt %s -p 'pbc-transpose-copies{vector-bits=512}' | FileCheck %s
// RUN: pbc-opt %s -p 'pbc-transpose-copies{vector-bits=256}' | FileCheck %s --check-prefix=AVX2
// CHECK-LABEL: func.func @packed
// CHECK: affine.for %[[T:.*]] = 0 to 64 step 32 {
// CHECK: affine.for %[[J:.*]] = #{{.*}}(%[[T]]) to #{{.*}}(%[[T]]) step 16 {
// CHECK-NEXT: affine.for %[[K:.*]] = 0 to 48 step 16 {
// CHECK-NEXT: %[[R0:.*]] = affine.vector_load %arg0[%[[J]], %[[K]]] : memref<64x48xf32>, vector<16xf32>
// CHECK-NEXT: affine.vector_load %arg0[%[[J]] + 1, %[[K]]]
// CHECK-COUNT-14: affine.vector_load %arg0
// CHECK-NEXT: vector.shuffle %[[R0]], %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]
// CHECK-COUNT-63: vector.shuffle
// CHECK-NEXT: affine.vector_store %{{.*}}, %[[BUF:.*]][%[[K]], %[[J]] - %[[T]]] : memref<48x32xf32>, vector<16xf32>
// CHECK-NEXT: affine.vector_store %{{.*}}, %[[BUF]][%[[K]] + 1, %[[J]] - %[[T]]]
// CHECK-COUNT-14: affine.vector_store %{{.*}}, %[[BUF]]
// CHECK-NEXT: }
// CHECK-NEXT: } {pbc.copy}
// AVX2-LABEL: func.func @packed
// AVX2: step 8 {
// AVX2-NEXT: affine.for %{{.*}} = 0 to 48 step 8 {
// AVX2-COUNT-8: affine.vector_load %arg0{{.*}} vector<8xf32>
// AVX2-COUNT-24: vector.shuffle
// AVX2-COUNT-8: affine.vector_store
// AVX2-NEXT: }
func.func @packed(%b: memref<64x48xf32>, %out: memref<48x64xf32>) {
  affine.for %t = 0 to 64 step 32 {
    %buf = memref.alloc() : memref<48x32xf32>
    affine.for %j = affine_map<(d0) -> (d0)>(%t) to affine_map<(d0) -> (d0 + 32)>(%t) {
      affine.for %k = 0 to 48 {
        %v = affine.load %b[%j, %k] : memref<64x48xf32>
        affine.store %v, %buf[%k, %j - %t] : memref<48x32xf32>
      }
    } {pbc.copy}
    affine.for %k = 0 to 48 {
      affine.for %j = 0 to 32 {
        %v = affine.load %buf[%k, %j] : memref<48x32xf32>
        affine.store %v, %out[%k, %j + %t] : memref<48x64xf32>
      }
    }
    memref.dealloc %buf : memref<48x32xf32>
  }
  return
}
// 20 x 24: one whole block; the right strip (rows 0-15, columns 16-23),
// then the bottom strip (rows 16-19, every column) element by element.
// CHECK-LABEL: func.func @partial_blocks
// CHECK: affine.for %{{.*}} = 0 to 16 step 16 {
// CHECK-NEXT: affine.for %{{.*}} = 0 to 16 step 16 {
// CHECK-COUNT-16: affine.vector_load
// CHECK: } {pbc.copy}
// CHECK-NEXT: affine.for %[[J:.*]] = 0 to 16 {
// CHECK-NEXT: affine.for %[[K:.*]] = 16 to 24 {
// CHECK-NEXT: %[[V:.*]] = affine.load %arg0[%[[J]], %[[K]]] : memref<20x24xf32>
// CHECK-NEXT: affine.store %[[V]], %arg1[%[[K]], %[[J]]] : memref<24x20xf32>
// CHECK: } {pbc.copy}
// CHECK-NEXT: affine.for %[[J:.*]] = 16 to 20 {
// CHECK-NEXT: affine.for %[[K:.*]] = 0 to 24 {
// CHECK-NEXT: %[[V:.*]] = affine.load %arg0[%[[J]], %[[K]]] : memref<20x24xf32>
// CHECK-NEXT: affine.store %[[V]], %arg1[%[[K]], %[[J]]] : memref<24x20xf32>
// CHECK: } {pbc.copy}
// CHECK-NEXT: return
func.func @partial_blocks(%b: memref<20x24xf32>, %c: memref<24x20xf32>) {
  affine.for %j = 0 to 20 {
    affine.for %k = 0 to 24 {
      %v = affine.load %b[%j, %k] : memref<20x24xf32>
      affine.store %v, %c[%k, %j] : memref<24x20xf32>
    }
  } {pbc.copy}
  return
}
// Fewer rows than a block: left as it is.
// CHECK-LABEL: func.func @no_whole_block
// CHECK-NOT: vector
// CHECK: return
func.func @no_whole_block(%b: memref<8x32xf32>, %c: memref<32x8xf32>) {
  affine.for %j = 0 to 8 {
    affine.for %k = 0 to 32 {
      %v = affine.load %b[%j, %k] : memref<8x32xf32>
      affine.store %v, %c[%k, %j] : memref<32x8xf32>
    }
  } {pbc.copy}
  return
}
// CHECK-LABEL: func.func @not_transposing
// CHECK-NOT: vector
// CHECK: return
func.func @not_transposing(%b: memref<32x32xf32>, %c: memref<32x32xf32>) {
  affine.for %j = 0 to 32 {
    affine.for %k = 0 to 32 {
      %v = affine.load %b[%j, %k] : memref<32x32xf32>
      affine.store %v, %c[%j, %k] : memref<32x32xf32>
    }
  } {pbc.copy}
  return
}
// CHECK-LABEL: func.func @not_a_copy
// CHECK-NOT: vector
// CHECK: return
func.func @not_a_copy(%b: memref<32x32xf32>, %c: memref<32x32xf32>) {
  affine.for %j = 0 to 32 {
    affine.for %k = 0 to 32 {
      %v = affine.load %b[%j, %k] : memref<32x32xf32>
      affine.store %v, %c[%k, %j] : memref<32x32xf32>
    }
  }
  return
}
// CHECK-LABEL: func.func @bits
// CHECK-NOT: vector
// CHECK: return
func.func @bits(%b: memref<32x32xi1>, %c: memref<32x32xi1>) {
  affine.for %j = 0 to 32 {
    affine.for %k = 0 to 32 {
      %v = affine.load %b[%j, %k] : memref<32x32xi1>
      affine.store %v, %c[%k, %j] : memref<32x32xi1>
    }
  } {pbc.copy}
  return
}
