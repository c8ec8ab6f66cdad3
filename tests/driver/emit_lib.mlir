// --emit=lib writes a shared library exporting the entry point and a header
// declaring it with MLIR's memref descriptors (inputs, then outputs).
// RUN: rm -rf %t && mkdir -p %t
// RUN: pbc --emit=lib -o %t/libscale.so %s
// RUN: llvm-nm -D %t/libscale.so | FileCheck %s --check-prefix=SYM
// RUN: FileCheck %s --check-prefix=HDR --input-file=%t/libscale.h
// SYM: T _mlir_ciface_scale
// HDR: typedef struct {
// HDR: float *aligned;
// HDR: int64_t sizes[2];
// HDR: } PbcMemRef_f32_2;
// HDR: void _mlir_ciface_scale(const PbcMemRef_f32_2 *in0 /* 8x16xf32 */,
// HDR-NEXT: PbcMemRef_f32_2 *out0 /* 8x16xf32 */);
func.func @scale(%a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
