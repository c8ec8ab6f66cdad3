/* The per-lane emitter (AMD amdgpu.mfma / amdgpu.wmma): each lane loads the
 * elements of A, B and C that the instruction's layout assigns to it
 * (matrix_units.h), packs them into vectors, and the wave multiplies 16x16xk
 * tiles with one instruction per k step, accumulating in f32 registers (i32
 * for i8 operands). Element loads take any affine subscripts (gemm_index.c):
 * transposed operands and convolutions (implicit GEMM) included. The
 * copy-out (gemm_epilogue.c) narrows f16 or bf16 C and runs an absorbed
 * pointwise consumer. */
#include <string.h>

#include "gpu_build.h"
#include "matrix_units.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

const PbcLaneLayout pbcMfma16x16x16 = {"amdgpu.mfma", 64, 16, 4, 4, 4, 4, 1};
const PbcLaneLayout pbcMfma16x16x32 = {"amdgpu.mfma", 64, 32, 8, 8, 4, 4, 1};
const PbcLaneLayout pbcWmma16x16x16 = {"amdgpu.wmma", 32, 16, 16, 0, 8, 1, 2};

static MlirValue cst(MlirOperation before, long long v) { return pbcGpuConstIndex(before, v); }

static MlirValue pack(MlirOperation before, MlirValue *elems, int n, MlirType elem) {
  int64_t shape[1] = {n};
  return pbcGpuOp(before, "vector.from_elements", n, elems, mlirVectorTypeGet(1, shape, elem), 0,
                  NULL);
}

MlirValue pbcGpuLaneMma(MlirOperation before, const PbcLaneLayout *L, MlirValue a, MlirValue b,
                        MlirValue acc) {
  /* MFMA: one block, no broadcast (cbsz, abid, blgp keep their defaults). */
  MlirNamedAttribute attrs[4] = {
      pbcGpuNamedI32(before, "m", kPbcFrag), pbcGpuNamedI32(before, "n", kPbcFrag),
      pbcGpuNamedI32(before, "k", L->k), pbcGpuNamedI32(before, "blocks", 1)};
  bool mfma = strcmp(L->op, "amdgpu.mfma") == 0;
  MlirValue ops[3] = {a, b, acc};
  return pbcGpuOp(before, L->op, 3, ops, mlirValueGetType(acc), mfma ? 4 : 3, attrs);
}

/* C's row loops (into ivC) for accumulator element e of the lane in quad q:
 * row i0 + cRowPerQuad * q + cRowPerElem * e. */
static void cRow(MlirOperation before, const PbcGemm *g, const PbcLaneLayout *L, MlirValue i0,
                 MlirValue q, int e, MlirValue ivC[]) {
  MlirValue row = pbcGpuAffine1(before, i0, L->cRowPerQuad, q, (long long)L->cRowPerElem * e);
  pbcGpuGemmDelinearize(before, g, kPbcRowM, row, ivC);
}

void pbcGpuEmitLaneMma(const PbcGemm *g, const PbcLaneLayout *L) {
  PbcTileLaunch t = pbcGpuTileLaunch(g, L->lanes);
  MlirOperation end = t.end;
  /* The operands' type packs as it is (f16, bf16, i8); the accumulators
   * are f32, or i32 for i8. */
  MlirType ab = mlirShapedTypeGetElementType(mlirValueGetType(g->a.memref));
  /* Lane l: r = l % 16 (A's row, B's and C's column), q = l / 16. */
  MlirValue r = pbcGpuArith(end, "remui", t.lane, cst(end, kPbcFrag));
  MlirValue q = pbcGpuArith(end, "divui", t.lane, cst(end, kPbcFrag));
  /* Loop indices fixed per lane: batch, A's row, the column. */
  MlirValue ivA[kPbcMaxBand], ivB[kPbcMaxBand], ivC[kPbcMaxBand];
  pbcGpuGemmDelinearize(end, g, kPbcBatch, t.b, ivA);
  pbcGpuGemmDelinearize(end, g, kPbcBatch, t.b, ivB);
  pbcGpuGemmDelinearize(end, g, kPbcBatch, t.b, ivC);
  pbcGpuGemmDelinearize(end, g, kPbcRowM, pbcGpuArith(end, "addi", t.i0, r), ivA);
  pbcGpuGemmDelinearize(end, g, kPbcColN, pbcGpuArith(end, "addi", t.j0, r), ivB);
  pbcGpuGemmDelinearize(end, g, kPbcColN, pbcGpuArith(end, "addi", t.j0, r), ivC);
  MlirValue acc[16];
  for (int e = 0; e < L->cElems; ++e) {
    cRow(end, g, L, t.i0, q, e, ivC);
    acc[e] = pbcGpuAccInit(end, g, ivC);
  }
  MlirType accType = mlirValueGetType(acc[0]);
  MlirValue acc0 = pack(end, acc, L->cElems, accType);
  MlirOperation loop = pbcGpuTileKLoop(&t, g, L->k, acc0);
  MlirBlock body = pbcGpuBody(loop, 0);
  MlirOperation yield = mlirBlockGetTerminator(body);
  MlirValue k0 = mlirBlockGetArgument(body, 0);
  MlirValue a[kPbcFrag], b[kPbcFrag];
  for (int e = 0; e < L->abElems; ++e) {
    /* Element e of both operands is at k = k0 + kPerQuad*q + e. */
    pbcGpuGemmDelinearize(yield, g, kPbcRed, pbcGpuAffine1(yield, k0, L->kPerQuad, q, e), ivA);
    for (int l = 0; l < g->depth; ++l)
      if (g->role[l] == kPbcRed)
        ivB[l] = ivA[l];
    a[e] = pbcGpuGemmLoad(yield, g, &g->a, ivA);
    b[e] = pbcGpuGemmLoad(yield, g, &g->b, ivB);
  }
  MlirValue aV = pack(yield, a, L->abElems, ab), bV = pack(yield, b, L->abElems, ab);
  MlirValue next = pbcGpuLaneMma(yield, L, aV, bV, mlirBlockGetArgument(body, 1));
  mlirOperationSetOperand(yield, 0, next);
  /* Store the accumulator once, after the k loop. */
  MlirValue res = mlirOperationGetResult(loop, 0);
  for (int e = 0; e < L->cElems; ++e) {
    MlirValue v = pbcGpuVectorExtract(end, res, 1, (int64_t[]){e}, accType);
    cRow(end, g, L, t.i0, q, e, ivC);
    pbcGpuCopyOut(end, g, v, ivC);
  }
  pbcGpuTileFinish(g);
}
