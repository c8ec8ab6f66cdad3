// math.exp on f32 becomes a polynomial scaled by a power of two in one
// instruction where the chip has one (pbc-exp-ldexp): x86-64-v4's
// `ldexp = avx512` scales 16-lane vectors by vscalefps on the float exponent
// (no conversion to integers: no fptosi); `native` calls llvm.ldexp on
// integers; x86-64-v3's `library` keeps MLIR's polynomial, which builds the
// power of two from bits, and calls no ldexp (LLVM would call libm's ldexpf
// per lane).
// RUN: pbc --chip=x86-64-v4 --emit=llvm %s | FileCheck %s --check-prefix=V4
// RUN: pbc --chip=x86-64-v4 --chip-set=ldexp=native --emit=llvm %s | FileCheck %s --check-prefix=NATIVE
// RUN: pbc --chip=x86-64-v3 --emit=llvm %s | FileCheck %s --check-prefix=V3
// RUN: pbc --chip=x86-64-v4 --emit=asm %s | FileCheck %s --check-prefix=ASM
// V4-LABEL: define {{.*}} @_mlir_ciface_silu
// V4: call <16 x float> @llvm.roundeven.v16f32
// V4-NOT: fptosi
// V4: call <16 x float> @llvm.x86.avx512.mask.scalef.ps.512
// V4-NOT: call {{.*}} @expf
// NATIVE-LABEL: define {{.*}} @_mlir_ciface_silu
// NATIVE: fptosi <16 x float>
// NATIVE: call <16 x float> @llvm.ldexp.v16f32.v16i32
// NATIVE-NOT: call {{.*}} @expf
// V3-LABEL: define {{.*}} @_mlir_ciface_silu
// V3-NOT: ldexp
// V3-NOT: scalef
// V3-NOT: call {{.*}} @expf
// ASM: vscalefps
func.func @silu(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %e = tensor.empty() : tensor<64x256xf32>
  %one = arith.constant 1.0 : f32
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x256xf32>) outs(%e : tensor<64x256xf32>) {
    ^bb0(%a: f32, %o: f32):
      %n = arith.negf %a : f32
      %p = math.exp %n : f32
      %d = arith.addf %p, %one : f32
      %s = arith.divf %a, %d : f32
      linalg.yield %s : f32
  } -> tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}
