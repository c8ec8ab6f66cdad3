/* The subgroup-mma emitter (NVIDIA): warp-wide opaque fragments through
 * gpu.subgroup_mma_* ops, which NVVM lowers to wmma.mma.sync. A warp loads
 * each 16x16 operand fragment with one op (leading dimension from the
 * buffer); a transposed operand is loaded column-major. */
#include <stdio.h>

#include "gpu_build.h"
#include "matrix_units.h"
#include "mlir-c/BuiltinTypes.h"

enum { kWarp = 32 };

static MlirType fragType(MlirOperation at, MlirType elem, const char *operand) {
  char text[96];
  snprintf(text, sizeof(text), "!gpu.mma_matrix<%dx%dx%s, \"%s\">", kPbcFrag, kPbcFrag,
           mlirTypeIsAF16(elem) ? "f16" : "f32", operand);
  return pbcGpuParseType(at, text);
}

static long long leadDim(MlirValue memref) {
  MlirType t = mlirValueGetType(memref);
  return mlirShapedTypeGetDimSize(t, mlirShapedTypeGetRank(t) - 1);
}

static MlirValue loadFrag(MlirOperation before, MlirValue memref, const MlirValue *idx, int n,
                          const char *operand, bool transpose) {
  MlirValue ops[4] = {memref};
  for (int i = 0; i < n; ++i)
    ops[1 + i] = idx[i];
  MlirType t = fragType(before, mlirShapedTypeGetElementType(mlirValueGetType(memref)), operand);
  MlirNamedAttribute attrs[2] = {pbcGpuNamedIndex(before, "leadDimension", leadDim(memref)),
                                 pbcGpuNamedUnit(before, "transpose")};
  return pbcGpuOp(before, "gpu.subgroup_mma_load_matrix", 1 + n, ops, t, transpose ? 2 : 1, attrs);
}

void pbcGpuEmitSubgroupMma(const PbcGemm *g) {
  PbcTileLaunch t = pbcGpuTileLaunch(g, kWarp);
  MlirValue cIdx[3], aIdx[3], bIdx[3];
  int n = pbcGpuTileIndices(&t, t.i0, t.j0, false, cIdx);
  MlirValue acc0 = loadFrag(t.end, g->c.memref, cIdx, n, "COp", false);
  MlirOperation loop = pbcGpuTileKLoop(&t, g, kPbcFrag, acc0);
  MlirOperation yield = mlirBlockGetTerminator(pbcGpuBody(loop, 0));
  MlirValue k0 = mlirBlockGetArgument(pbcGpuBody(loop, 0), 0);
  pbcGpuTileIndices(&t, t.i0, k0, g->aT, aIdx);
  pbcGpuTileIndices(&t, k0, t.j0, g->bT, bIdx);
  MlirValue ops[3] = {loadFrag(yield, g->a.memref, aIdx, n, "AOp", g->aT),
                      loadFrag(yield, g->b.memref, bIdx, n, "BOp", g->bT),
                      mlirBlockGetArgument(pbcGpuBody(loop, 0), 1)};
  /* A transposed fragment is laid out column-major: the mma must know. */
  MlirNamedAttribute attrs[2];
  int nAttrs = 0;
  if (g->aT)
    attrs[nAttrs++] = pbcGpuNamedUnit(yield, "a_transpose");
  if (g->bT)
    attrs[nAttrs++] = pbcGpuNamedUnit(yield, "b_transpose");
  MlirValue acc = pbcGpuOp(yield, "gpu.subgroup_mma_compute", 3, ops, mlirValueGetType(acc0),
                           nAttrs, attrs);
  mlirOperationSetOperand(yield, 0, acc);
  /* Store the accumulator once, after the k loop. */
  MlirValue sops[5] = {mlirOperationGetResult(loop, 0), g->c.memref};
  for (int i = 0; i < n; ++i)
    sops[2 + i] = cIdx[i];
  MlirNamedAttribute ld = pbcGpuNamedIndex(t.end, "leadDimension", leadDim(g->c.memref));
  pbcGpuOp(t.end, "gpu.subgroup_mma_store_matrix", 2 + n, sops, (MlirType){NULL}, 1, &ld);
  pbcGpuTileFinish(g);
}
