/* Element addressing for per-thread matrix-unit emitters (matrix_units.h):
 * a thread turns the row, column and k index it handles into the band's loop
 * indices (delinearized by the loop trips) and evaluates the nest's own
 * subscripts with them. So a transposed operand or a convolution's input
 * window (implicit GEMM) is read where it lies, with no extra copy. */
#include "gpu_build.h"
#include "matrix_units.h"
#include "mlir-c/BuiltinTypes.h"

static MlirValue cst(MlirOperation before, long long v) { return pbcGpuConstIndex(before, v); }

MlirValue pbcGpuAffine1(MlirOperation before, MlirValue base, long long factor, MlirValue v,
                        long long offset) {
  MlirValue x = cst(before, offset);
  if (factor)
    x = pbcGpuArith(before, "addi", x,
                    factor == 1 ? v : pbcGpuArith(before, "muli", v, cst(before, factor)));
  return pbcGpuArith(before, "addi", base, x);
}

void pbcGpuGemmDelinearize(MlirOperation before, const PbcGemm *g, PbcGemmRole role, MlirValue x,
                           MlirValue iv[]) {
  int outer = 0;
  while (outer < g->depth && g->role[outer] != role)
    ++outer;
  long long stride = 1;
  for (int l = g->depth - 1; l >= outer; --l) {
    if (g->role[l] != role)
      continue;
    MlirValue q = stride == 1 ? x : pbcGpuArith(before, "divui", x, cst(before, stride));
    /* x < the role's size: the outermost index needs no remainder. */
    iv[l] = l == outer ? q : pbcGpuArith(before, "remui", q, cst(before, g->trip[l]));
    stride *= g->trip[l];
  }
}

MlirValue pbcGpuEvalLinear(MlirOperation before, const PbcLinearForm *f, int n,
                           const MlirValue from[], const MlirValue to[]) {
  MlirValue x = cst(before, f->constant);
  for (int t = 0; t < f->nTerms; ++t) {
    MlirValue v = f->values[t]; /* a loop index, or a value from outside */
    for (int i = 0; i < n; ++i)
      if (from[i].ptr == v.ptr)
        v = to[i];
    x = pbcGpuAffine1(before, x, f->coeffs[t], v, 0);
  }
  return x;
}

int pbcGpuGemmSubscripts(MlirOperation before, const PbcGemm *g, const PbcAccess *acc,
                         const MlirValue iv[], MlirValue out[]) {
  MlirValue band[kPbcMaxBand];
  for (int l = 0; l < g->depth; ++l)
    band[l] = pbcLoopIv(g->band[l]);
  for (int d = 0; d < acc->rank; ++d)
    out[d] = pbcGpuEvalLinear(before, &acc->subscripts[d], g->depth, band, iv);
  return acc->rank;
}

MlirValue pbcGpuGemmLoad(MlirOperation before, const PbcGemm *g, const PbcAccess *acc,
                         const MlirValue iv[]) {
  MlirValue ops[1 + PBC_MAX_RANK] = {acc->memref};
  int n = pbcGpuGemmSubscripts(before, g, acc, iv, ops + 1);
  MlirType elem = mlirShapedTypeGetElementType(mlirValueGetType(acc->memref));
  return pbcGpuOp(before, "memref.load", 1 + n, ops, elem, 0, NULL);
}

void pbcGpuGemmStore(MlirOperation before, const PbcGemm *g, MlirValue v, const MlirValue iv[]) {
  MlirValue ops[2 + PBC_MAX_RANK] = {v, g->c.memref};
  int n = pbcGpuGemmSubscripts(before, g, &g->c, iv, ops + 2);
  pbcGpuOp(before, "memref.store", 2 + n, ops, (MlirType){NULL}, 0, NULL);
}
