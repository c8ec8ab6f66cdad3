// --emit stops after a stage; each stage's contract is visible in its output.
// RUN: pbc --emit=s1 %s | FileCheck %s --check-prefix=S1
// RUN: pbc --emit=s2 %s | FileCheck %s --check-prefix=S2
// RUN: pbc --emit=s3 %s | FileCheck %s --check-prefix=S3
// RUN: pbc --emit=s4 %s | FileCheck %s --check-prefix=S4
// RUN: pbc --emit=s5 %s | FileCheck %s --check-prefix=S5
// RUN: pbc --emit=llvm %s | FileCheck %s --check-prefix=LLVM
// RUN: pbc --emit=asm %s | FileCheck %s --check-prefix=ASM
// S1: func.func @f(%{{.*}}: memref<256x128xf32>, %{{.*}}: memref<128x192xf32>, %{{.*}}: memref<256x192xf32>)
// S1: linalg.matmul
// S2-NOT: linalg.
// S2: affine.for {{.*}} {
// S2: } {pbc.kind = "matmul"}
// S3: affine.parallel
// S3: pbc.kind = "matmul"
// S4-NOT: affine.
// S4: omp.parallel
// S5-NOT: func.func
// S5: llvm.func @_mlir_ciface_f
// LLVM: define void @_mlir_ciface_f(
// ASM: _mlir_ciface_f:
func.func @f(%a: tensor<256x128xf32>, %b: tensor<128x192xf32>) -> tensor<256x192xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x192xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<256x192xf32>) -> tensor<256x192xf32>
  %m = linalg.matmul ins(%a, %b : tensor<256x128xf32>, tensor<128x192xf32>) outs(%f : tensor<256x192xf32>) -> tensor<256x192xf32>
  return %m : tensor<256x192xf32>
}
