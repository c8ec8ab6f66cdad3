/* Attention as one kernel on AMD's matrix cores (the paper's reduce-reduce
 * fusion, §4.4): the chain pbcGpuMatchAttention found, softmax(f(Q Kᵀ)) V,
 * on the per-lane MFMA/WMMA instructions (matrix_units.h's PbcLaneLayout),
 * the score tile never in memory.
 *
 * One wave per 16 query rows of one batch entry walks the keys 16 at a
 * time. It computes the transposed products, so that everything a row
 * needs stays in the lanes of that row (lane l: r = l % 16 is the row):
 *
 *   Sᵀ = K Qᵀ     A = K's 16 keys x d, B = Qᵀ (Q's B operands are loaded
 *                 once and kept in registers); lane r holds the scores of
 *                 row r for the keys the C layout gives it;
 *   f             the score nests' bodies (scale, masks) on each score,
 *                 keys past N -> -inf;
 *   online softmax  m' = max(m, rowmax), alpha = exp(m - m'),
 *                 P = exp(S - m'), l = l alpha + rowsum P, O = O alpha: a
 *                 row's scores sit in the lanes r + 16 q, so its max meets
 *                 by xor shuffles of 16 (and 32 on wave 64) and its sum
 *                 stays per lane until the end;
 *   Oᵀ += Vᵀ Pᵀ   A = Vᵀ (16 head columns x the 16 keys), B = Pᵀ: on MFMA
 *                 the C layout of Sᵀ is the B layout of Pᵀ (lane-local);
 *                 on WMMA, whose B wants all 16 keys in each lane, the two
 *                 half-waves swap their keys by one xor shuffle of 16;
 *                 lane r's elements of Oᵀ are all row r's, so alpha and
 *                 1 / l scale them in place;
 *   O / l         leaves through the P V gemm's copy-out (its fill and
 *                 pointwise consumer included).
 *
 * Rows past M read the last row and are not stored; keys past N read the
 * last key, score -inf and contribute V as 0. A row whose scores are all
 * -inf so far keeps exp's argument finite (m' = -inf counts as 0). */
#include "gpu_build.h"
#include "matrix_units.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/ir_build.h"

enum { kMaxHeadTiles = 128 / kPbcFrag, kMaxLaneElems = kPbcFrag };

static MlirValue cst(MlirOperation before, long long v) { return pbcGpuConstIndex(before, v); }
static MlirValue arith(MlirOperation before, const char *op, MlirValue a, long long b) {
  return pbcGpuArith(before, op, a, cst(before, b));
}
static MlirValue unary(MlirOperation before, const char *op, MlirValue a, MlirType t) {
  return pbcGpuOp(before, op, 1, &a, t, 0, NULL);
}

/* memref.load of [b,] i, j. */
static MlirValue load(MlirOperation before, MlirValue memref, MlirValue b, MlirValue i,
                      MlirValue j) {
  MlirValue ops[4] = {memref};
  int n = 1;
  if (!mlirValueIsNull(b))
    ops[n++] = b;
  ops[n++] = i;
  ops[n++] = j;
  MlirType elem = mlirShapedTypeGetElementType(mlirValueGetType(memref));
  return pbcGpuOp(before, "memref.load", n, ops, elem, 0, NULL);
}

static MlirValue pack(MlirOperation before, const MlirValue *elems, int n, MlirType elem) {
  return pbcGpuOp(before, "vector.from_elements", n, elems,
                  mlirVectorTypeGet(1, (int64_t[]){n}, elem), 0, NULL);
}

/* Key offset (within the block of 16) of element e of the C layout in
 * quad q. */
static long long cKey(const PbcLaneLayout *L, int q, int e) {
  return (long long)L->cRowPerQuad * q + (long long)L->cRowPerElem * e;
}

/* Max (or sum) of the lanes r + 16 q for every q: xor shuffles over the
 * quads. */
static MlirValue acrossQuads(MlirOperation before, const PbcLaneLayout *L, const char *op,
                             MlirValue v) {
  for (int off = kPbcFrag; off < L->lanes; off *= 2)
    v = pbcGpuArith(before, op, v, pbcGpuShuffleXor(before, v, off, L->lanes));
  return v;
}

void pbcGpuEmitAttentionLanes(const PbcAttention *at, const PbcLaneLayout *L) {
  const PbcGemm *qk = &at->qk, *pv = &at->pv;
  MlirOperation here = pv->root;
  MlirContext ctx = mlirOperationGetContext(here);
  MlirType f32 = mlirF32TypeGet(ctx), accType = mlirVectorTypeGet(1, (int64_t[]){L->cElems}, f32);
  MlirType half = mlirShapedTypeGetElementType(mlirValueGetType(qk->a.memref));
  long long m = qk->m, n = qk->n, d = qk->k, dv = pv->n, nKB = (n + kPbcFrag - 1) / kPbcFrag;
  int fd = (int)(d / kPbcFrag), fo = (int)(dv / kPbcFrag);
  bool batched = qk->depth == 4;
  /* The C layout of Sᵀ is the B layout of Pᵀ (MFMA), or the half-waves
   * swap keys (WMMA). */
  bool pLocal = L->abElems == L->cElems && L->kPerQuad == L->cRowPerQuad && L->cRowPerElem == 1;

  MlirValue c1 = cst(here, 1);
  MlirValue grid[3] = {cst(here, (m + kPbcFrag - 1) / kPbcFrag), c1, cst(here, qk->batch)};
  MlirValue block[3] = {cst(here, L->lanes), c1, c1};
  MlirOperation launch = pbcGpuBuildLaunch(here, grid, block, (MlirValue){NULL});
  MlirBlock body = pbcGpuBody(launch, 0);
  MlirOperation end = mlirBlockGetTerminator(body);
  MlirValue lane = mlirBlockGetArgument(body, 3);
  MlirValue b = batched ? mlirBlockGetArgument(body, 2) : (MlirValue){NULL};
  MlirValue r = arith(end, "remui", lane, kPbcFrag), q = arith(end, "divui", lane, kPbcFrag);
  MlirValue row = pbcGpuArith(end, "addi", arith(end, "muli", mlirBlockGetArgument(body, 0),
                                                 kPbcFrag), r);
  MlirValue rowIn = m % kPbcFrag ? arith(end, "minui", row, m - 1) : row;
  MlirValue zero = cst(end, 0);

  /* Qᵀ's B operands, one per 16 columns of d: B[d][row] = Q[row][d]. */
  MlirValue qB[kMaxHeadTiles];
  for (int t = 0; t < fd; ++t) {
    MlirValue e[kMaxLaneElems];
    for (int i = 0; i < L->abElems; ++i)
      e[i] = load(end, qk->a.memref, b, rowIn,
                  pbcGpuAffine1(end, zero, L->kPerQuad, q, kPbcFrag * t + i));
    qB[t] = pack(end, e, L->abElems, half);
  }

  /* Carried: the row's running max and this lane's part of its sum, Oᵀ's
   * accumulators (one per 16 columns of V). */
  MlirValue negInf = pbcGpuConstF32(end, "0xFF800000 : f32"), zeroF = pbcGpuConstF32(end, "0.0 : f32");
  MlirValue init[2 + kMaxHeadTiles] = {negInf, zeroF};
  for (int t = 0; t < fo; ++t)
    init[2 + t] = pbcGpuZeros(end, accType);
  MlirOperation loop = pbcGpuBuildFor(end, zero, cst(end, nKB), c1, 2 + fo, init);
  MlirBlock lb = pbcGpuBody(loop, 0);
  MlirOperation y = mlirBlockGetTerminator(lb);
  MlirValue j0 = arith(y, "muli", mlirBlockGetArgument(lb, 0), kPbcFrag);
  MlirValue mOld = mlirBlockGetArgument(lb, 1), lOld = mlirBlockGetArgument(lb, 2);

  /* Sᵀ = K Qᵀ: A[key][d] = K[j0 + r][d]. */
  MlirValue keyA = pbcGpuArith(y, "addi", j0, r);
  if (n % kPbcFrag)
    keyA = arith(y, "minui", keyA, n - 1);
  MlirValue s = pbcGpuZeros(y, accType);
  for (int t = 0; t < fd; ++t) {
    MlirValue e[kMaxLaneElems];
    for (int i = 0; i < L->abElems; ++i)
      e[i] = load(y, at->k, b, keyA, pbcGpuAffine1(y, zero, L->kPerQuad, q, kPbcFrag * t + i));
    s = pbcGpuLaneMma(y, L, pack(y, e, L->abElems, half), qB[t], s);
  }

  /* The score nests on each score (key j0 + cKey(q, e)), keys past N ->
   * -inf; the row max. */
  MlirValue x[kMaxLaneElems], mx = {NULL};
  for (int e = 0; e < L->cElems; ++e) {
    MlirValue v = pbcGpuVectorExtract(y, s, 1, (int64_t[]){e}, f32);
    MlirValue key = pbcGpuArith(y, "addi", j0, pbcGpuAffine1(y, zero, L->cRowPerQuad, q,
                                                            (long long)L->cRowPerElem * e));
    x[e] = pbcGpuAttentionScore(y, at, v, b, rowIn, 0, key, n % kPbcFrag ? n : 0);
    mx = e ? pbcGpuArith(y, "maxnumf", mx, x[e]) : x[e];
  }

  /* The online softmax of the row. */
  MlirValue mNew = pbcGpuArith(y, "maxnumf", mOld, acrossQuads(y, L, "maxnumf", mx));
  MlirValue safe = pbcGpuSelect(y, pbcGpuCmpF(y, 1 /* oeq */, mNew, negInf), zeroF, mNew);
  MlirValue alpha = unary(y, "math.exp", pbcGpuArith(y, "subf", mOld, safe), f32);
  /* exp(x - m) as exp2(x log2e - m log2e): one fma per score. */
  MlirValue log2e = pbcGpuConstF32(y, "1.44269504 : f32");
  MlirValue shift = pbcGpuArith(y, "mulf", safe, pbcGpuConstF32(y, "-1.44269504 : f32"));
  MlirValue sum = {NULL};
  for (int e = 0; e < L->cElems; ++e) {
    MlirValue fma[3] = {x[e], log2e, shift};
    x[e] = unary(y, "math.exp2", pbcGpuOp(y, "math.fma", 3, fma, f32, 0, NULL), f32);
    sum = e ? pbcGpuArith(y, "addf", sum, x[e]) : x[e];
  }
  MlirValue lNew = pbcGpuArith(y, "addf", pbcGpuArith(y, "mulf", lOld, alpha), sum);

  /* Pᵀ's B operand: B[key][row] for the keys kPerQuad q + i. */
  MlirValue p[kMaxLaneElems];
  if (pLocal) {
    for (int i = 0; i < L->abElems; ++i)
      p[i] = x[i];
  } else {
    /* WMMA: lane r + 16 h holds keys 2 e + h (cKey); B wants keys 0..15
     * in both half-waves: the other half's by one xor shuffle of 16. */
    MlirValue h0 = pbcGpuLessThan(y, lane, cst(y, kPbcFrag));
    for (int e = 0; e < L->cElems; ++e) {
      MlirValue other = pbcGpuShuffleXor(y, x[e], kPbcFrag, L->lanes);
      p[cKey(L, 0, e)] = pbcGpuSelect(y, h0, x[e], other);
      p[cKey(L, 1, e)] = pbcGpuSelect(y, h0, other, x[e]);
    }
  }
  for (int i = 0; i < L->abElems; ++i)
    p[i] = unary(y, "arith.truncf", p[i], half);
  MlirValue pB = pack(y, p, L->abElems, half);

  /* Oᵀ = alpha Oᵀ + Vᵀ Pᵀ: A[dcol][key] = V[j0 + key][16 t + r]. */
  MlirValue alphaV = pbcGpuOp(y, "vector.broadcast", 1, &alpha, accType, 0, NULL);
  MlirValue zeroV = pbcBuildFloatConstant(y, half, 0.0);
  for (int t = 0; t < fo; ++t) {
    MlirValue e[kMaxLaneElems];
    MlirValue col = arith(y, "addi", r, kPbcFrag * t);
    for (int i = 0; i < L->abElems; ++i) {
      MlirValue key = pbcGpuArith(y, "addi", j0, pbcGpuAffine1(y, zero, L->kPerQuad, q, i));
      MlirValue keyRead = n % kPbcFrag ? arith(y, "minui", key, n - 1) : key;
      e[i] = load(y, pv->b.memref, b, keyRead, col);
      if (n % kPbcFrag) /* a key past N adds 0, whatever V's last row holds */
        e[i] = pbcGpuSelect(y, pbcGpuLessThan(y, key, cst(y, n)), e[i], zeroV);
    }
    MlirValue o = pbcGpuArith(y, "mulf", mlirBlockGetArgument(lb, 3 + t), alphaV);
    mlirOperationSetOperand(y, 2 + t, pbcGpuLaneMma(y, L, pack(y, e, L->abElems, half), pB, o));
  }
  mlirOperationSetOperand(y, 0, mNew);
  mlirOperationSetOperand(y, 1, lNew);

  /* The quads' sums meet; O / l leaves through the P V gemm's copy-out:
   * element e of Oᵀ's tile t is O[row][16 t + cKey(q, e)]. */
  MlirOperation at0 = end;
  if (m % kPbcFrag)
    at0 = mlirBlockGetTerminator(pbcGpuBody(pbcGpuBuildIf(end, pbcGpuLessThan(end, row, cst(end, m))), 0));
  MlirValue l = acrossQuads(at0, L, "addf", mlirOperationGetResult(loop, 1));
  MlirValue inv = pbcGpuArith(at0, "divf", pbcGpuConstF32(at0, "1.0 : f32"), l);
  int l0 = pv->depth - 3;
  for (int t = 0; t < fo; ++t) {
    MlirValue res = mlirOperationGetResult(loop, 2 + t);
    for (int e = 0; e < L->cElems; ++e) {
      MlirValue iv[kPbcMaxBand];
      if (batched)
        iv[0] = b;
      iv[l0] = row;
      iv[l0 + 1] = pbcGpuAffine1(at0, zero, L->cRowPerQuad, q,
                                 kPbcFrag * t + (long long)L->cRowPerElem * e);
      iv[l0 + 2] = zero;
      MlirValue v = pbcGpuArith(at0, "mulf", pbcGpuVectorExtract(at0, res, 1, (int64_t[]){e}, f32), inv);
      pbcGpuCopyOut(at0, pv, pbcGpuArith(at0, "addf", pbcGpuAccInit(at0, pv, iv), v), iv);
    }
  }

  pbcGpuAttentionFinish(at);
}
