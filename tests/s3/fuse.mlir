// pbc-fuse fuses a producer into its consumer when both have the same band
// and the consumer reads exactly what the producer wrote in the same
// iteration: one nest, the produced value forwarded (no load), the local
// intermediate buffer gone. It must not fuse a stencil consumer (reads a
// neighbour), nor into a matmul-kind nest, nor a producer that writes an
// element in more than one iteration (a reduction) into a consumer that
// reads it across the row, broadcast or reduction alike.
// RUN: pbc-opt %s -p 'pbc-fuse' | FileCheck %s
// CHECK-LABEL: func.func @chain
// CHECK-NOT: memref.alloc
// CHECK: affine.for %[[I:.*]] = 0 to 64 {
// CHECK-NEXT: %[[X:.*]] = affine.load %arg0[%[[I]]]
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[X]], %[[X]]
// CHECK-NEXT: %[[X2:.*]] = affine.load %arg0[%[[I]]]
// CHECK-NEXT: %[[A:.*]] = arith.addf %[[M]], %[[X2]]
// CHECK-NEXT: affine.store %[[A]], %arg1[%[[I]]]
// CHECK-NEXT: }
// CHECK-NOT: affine.for
func.func @chain(%x: memref<64xf32>, %y: memref<64xf32>) {
  %t = memref.alloc() : memref<64xf32>
  affine.for %i = 0 to 64 {
    %a = affine.load %x[%i] : memref<64xf32>
    %m = arith.mulf %a, %a : f32
    affine.store %m, %t[%i] : memref<64xf32>
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 64 {
    %b = affine.load %t[%i] : memref<64xf32>
    %c = affine.load %x[%i] : memref<64xf32>
    %s = arith.addf %b, %c : f32
    affine.store %s, %y[%i] : memref<64xf32>
  } {pbc.kind = "pointwise"}
  memref.dealloc %t : memref<64xf32>
  return
}
// CHECK-LABEL: func.func @stencil
// CHECK: affine.for
// CHECK: affine.for
func.func @stencil(%x: memref<66xf32>, %y: memref<64xf32>) {
  %t = memref.alloc() : memref<66xf32>
  affine.for %i = 0 to 64 {
    %a = affine.load %x[%i] : memref<66xf32>
    affine.store %a, %t[%i] : memref<66xf32>
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 64 {
    %b = affine.load %t[%i + 1] : memref<66xf32>
    affine.store %b, %y[%i] : memref<64xf32>
  } {pbc.kind = "pointwise"}
  memref.dealloc %t : memref<66xf32>
  return
}
// The consumer reads the produced element, and also its neighbour through a
// shifted view of the same buffer (a stencil in disguise): not fused.
// CHECK-LABEL: func.func @through_view
// CHECK: affine.for
// CHECK: affine.for
func.func @through_view(%x: memref<65xf32>, %y: memref<64xf32>) {
  %t = memref.alloc() : memref<65xf32>
  %v = memref.subview %t[1] [64] [1] : memref<65xf32> to memref<64xf32, strided<[1], offset: 1>>
  affine.for %i = 0 to 64 {
    %a = affine.load %x[%i] : memref<65xf32>
    affine.store %a, %t[%i] : memref<65xf32>
  } {pbc.kind = "pointwise"}
  affine.for %i = 0 to 64 {
    %b = affine.load %v[%i] : memref<64xf32, strided<[1], offset: 1>>
    %c = affine.load %t[%i] : memref<65xf32>
    %s = arith.addf %b, %c : f32
    affine.store %s, %y[%i] : memref<64xf32>
  } {pbc.kind = "pointwise"}
  memref.dealloc %t : memref<65xf32>
  return
}
// A pointwise producer (pbc-pad-gemm's copy-back of C') into a broadcast
// consumer (bias, ReLU): fused, the copy's buffer deallocated after.
// CHECK-LABEL: func.func @copy_back_bias
// CHECK: affine.for %[[I:.*]] = 0 to 4 {
// CHECK-NEXT: affine.for %[[J:.*]] = 0 to 5 {
// CHECK-NEXT: %[[V:.*]] = affine.load %arg0[%[[I]], %[[J]]]
// CHECK-NOT: affine.load %arg1
// CHECK: %[[B:.*]] = affine.load %arg2[%[[J]]]
// CHECK-NEXT: arith.addf %[[V]], %[[B]]
// CHECK: } {pbc.kind = "broadcast"}
// CHECK-NEXT: memref.dealloc %arg0
// CHECK-NEXT: return
func.func @copy_back_bias(%cp: memref<4x8xf32>, %c: memref<4x5xf32>, %b: memref<5xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 5 {
      %v = affine.load %cp[%i, %j] : memref<4x8xf32>
      affine.store %v, %c[%i, %j] : memref<4x5xf32>
    }
  } {pbc.kind = "pointwise"}
  memref.dealloc %cp : memref<4x8xf32>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 5 {
      %v = affine.load %c[%i, %j] : memref<4x5xf32>
      %w = affine.load %b[%j] : memref<5xf32>
      %s = arith.addf %v, %w : f32
      %r = arith.maximumf %s, %zero : f32
      affine.store %r, %c[%i, %j] : memref<4x5xf32>
    }
  } {pbc.kind = "broadcast"}
  return
}
// A row maximum (a reduction) read across its row by exp(x - max): the
// maximum is final only after the row, so the nests stay apart.
// CHECK-LABEL: func.func @reduction_into_broadcast
// CHECK: } {pbc.kind = "reduction"}
// CHECK-NEXT: affine.for
// CHECK: } {pbc.kind = "broadcast"}
func.func @reduction_into_broadcast(%x: memref<4x8xf32>, %m: memref<4xf32>, %y: memref<4x8xf32>) {
  affine.for %i = 0 to 4 {
    affine.for %k = 0 to 8 {
      %v = affine.load %x[%i, %k] : memref<4x8xf32>
      %a = affine.load %m[%i] : memref<4xf32>
      %s = arith.maxnumf %v, %a : f32
      affine.store %s, %m[%i] : memref<4xf32>
    }
  } {pbc.kind = "reduction"}
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %x[%i, %j] : memref<4x8xf32>
      %a = affine.load %m[%i] : memref<4xf32>
      %d = arith.subf %v, %a : f32
      %e = math.exp %d : f32
      affine.store %e, %y[%i, %j] : memref<4x8xf32>
    }
  } {pbc.kind = "broadcast"}
  return
}
// logsumexp's two reductions: the sum reads the row maximum at every k, the
// maximum is final only after the row: not fused.
// CHECK-LABEL: func.func @reduction_into_reduction
// CHECK: } {pbc.kind = "reduction"}
// CHECK-NEXT: affine.for
// CHECK: } {pbc.kind = "reduction"}
func.func @reduction_into_reduction(%x: memref<4x8xf32>, %m: memref<4xf32>, %s: memref<4xf32>) {
  affine.for %i = 0 to 4 {
    affine.for %k = 0 to 8 {
      %v = affine.load %x[%i, %k] : memref<4x8xf32>
      %a = affine.load %m[%i] : memref<4xf32>
      %r = arith.maxnumf %v, %a : f32
      affine.store %r, %m[%i] : memref<4xf32>
    }
  } {pbc.kind = "reduction"}
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %x[%i, %j] : memref<4x8xf32>
      %a = affine.load %m[%i] : memref<4xf32>
      %d = arith.subf %v, %a : f32
      %e = math.exp %d : f32
      %o = affine.load %s[%i] : memref<4xf32>
      %t = arith.addf %o, %e : f32
      affine.store %t, %s[%i] : memref<4xf32>
    }
  } {pbc.kind = "reduction"}
  return
}
