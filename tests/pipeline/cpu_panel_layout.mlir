// On the cpu target a matmul whose B block is packed gets that block stored
// panel by panel (pbc-panel-layout after the [fast-buffers] packing): K x NR
// panels, read by the micro kernel at (panel, k, offset). The e2e test
// matmul_packed_panels runs the same shape against numpy.
// RUN: pbc --emit=s3 %s | FileCheck %s
// RUN: pbc --emit=s3 --disable=fast-buffers %s | FileCheck %s --check-prefix=OFF
// CHECK-LABEL: func.func @matmul
// CHECK: %[[B:.*]] = memref.alloc() : memref<{{[0-9]+}}x72x{{[0-9]+}}xf32>
// CHECK: affine.vector_store %{{.*}}, %[[B]][{{.*}} floordiv {{[0-9]+}}, {{.*}} mod {{[0-9]+}}]
// CHECK: affine.vector_load %[[B]][{{.*}} floordiv {{[0-9]+}}, {{.*}}, 0]
// OFF-NOT: floordiv
func.func @matmul(%a: tensor<48x72xf32>, %b: tensor<72x1024xf32>) -> tensor<48x1024xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<48x1024xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<48x1024xf32>) -> tensor<48x1024xf32>
  %r = linalg.matmul ins(%a, %b : tensor<48x72xf32>, tensor<72x1024xf32>) outs(%f : tensor<48x1024xf32>) -> tensor<48x1024xf32>
  return %r : tensor<48x1024xf32>
}
