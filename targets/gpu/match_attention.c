/* The attention chain a fused kernel replaces (see PbcAttention in
 * matrix_units.h): PolyBlocks' reduce-reduce fusion (§4.4) needs the whole
 * chain from Q Kᵀ to P V, so it is matched nest by nest in program order,
 * each nest checked for exactly the computation the kernel performs:
 *
 *   [Kᵀ = transpose(K)]          a copy the kernel reads through (before or
 *                               after the fill)
 *   S = 0; S += Q Kᵀ            the first gemm and its fill
 *   X1 = f1(S, ...), ...        pointwise nests on the scores (scale, mask)
 *   M = -inf; M = max_j X       the row max (NaN also starts maxnumf's)
 *   E = exp(X - M)
 *   L = 0; L = sum_j E
 *   P = E / L
 *   P16 = truncf(P)            to f16 (bf16 when Q, K and V are); none
 *                               when S (and so P) is already f16
 *   O = init; O += P16 V        the second gemm
 *
 * Fills may sit anywhere before the reduction they start; constants,
 * allocations and the deallocations of the chain's own buffers between the
 * nests are allowed, nothing else (a nest reading something else would
 * run before the kernel, which is built where the P V gemm is). Every
 * intermediate buffer must be allocated by the function and used only by
 * the chain (and deallocations): the kernel never materializes them. */
#include <math.h>
#include <string.h>

#include "gpu_build.h"
#include "matrix_units.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"
#include "pbc/chain_match.h"
#include "pbc/ir_build.h"

enum { kMaxFills = 4, kMaxHeadDim = 128 };

static MlirType elemOf(MlirValue memref) {
  return mlirShapedTypeGetElementType(mlirValueGetType(memref));
}

/* Scores and the softmax's buffers: f32, or f16 as the program keeps them. */
static bool isScoreType(MlirType t) { return mlirTypeIsAF32(t) || mlirTypeIsAF16(t); }

static int rankOf(MlirValue memref) { return (int)mlirShapedTypeGetRank(mlirValueGetType(memref)); }

/* P16 = truncf(P) to `half` (f16 or bf16) over all of P. */
static bool matchTruncation(MlirOperation nest, MlirValue p, bool bf16, MlirValue *out) {
  MlirOperation band[kPbcMaxBand], op[3];
  int rank = rankOf(p);
  if (pbcChainBandBody(nest, rank, p, band, op, 3) != 3 || !pbcChainAccessByBand(op[0], p, false, band) ||
      !pbcOpIsA(op[1], "arith.truncf") ||
      !(bf16 ? mlirTypeIsABF16 : mlirTypeIsAF16)(mlirValueGetType(mlirOperationGetResult(op[1], 0))))
    return false;
  PbcAccess st;
  if (!pbcAccessGet(op[2], &st) || !st.isWrite ||
      mlirOperationGetOperand(op[2], 0).ptr != mlirOperationGetResult(op[1], 0).ptr)
    return false;
  *out = st.memref;
  return pbcChainAccessByBand(op[2], *out, true, band) && pbcChainIsAlloc(*out) && pbcChainSameShape(*out, p, rank);
}

/* The buffer the one store in a nest's innermost body writes, or null. */
static MlirValue storedBuffer(MlirOperation nest) {
  MlirOperation band[kPbcMaxBand];
  int depth = pbcLoopBand(nest, band, kPbcMaxBand);
  MlirValue found = {NULL};
  if (depth == 0)
    return found;
  PbcAccess acc;
  for (MlirOperation op = mlirBlockGetFirstOperation(pbcLoopBody(band[depth - 1]));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    if (pbcAccessGet(op, &acc) && acc.isWrite) {
      if (!mlirValueIsNull(found))
        return (MlirValue){NULL};
      found = acc.memref;
    }
  return found;
}

typedef struct {
  MlirValue buffer;
  double value;
} Fill;

static void addNest(PbcAttention *at, MlirOperation nest) { at->nests[at->nNests++] = nest; }

static bool addBuffer(PbcAttention *at, MlirValue b) {
  for (int i = 0; i < at->nBuffers; ++i)
    if (at->buffers[i].ptr == b.ptr)
      return false; /* written twice in the chain */
  at->buffers[at->nBuffers++] = b;
  return true;
}

static bool isChainBuffer(const PbcAttention *at, MlirValue b) {
  for (int i = 0; i < at->nBuffers; ++i)
    if (at->buffers[i].ptr == b.ptr)
      return true;
  return false;
}

/* Whether the reduction buffer r was filled with a value that starts it:
 * the sum from 0; the max from -inf, or from NaN for maxnumf alone
 * (maximumf of NaN stays NaN, which the kernel's running max would not). */
static bool filledFor(const Fill *fills, int n, MlirValue r, PbcRowCombiner comb) {
  for (int i = 0; i < n; ++i)
    if (fills[i].buffer.ptr == r.ptr) {
      double v = fills[i].value;
      if (comb == kPbcCombSum)
        return v == 0.0;
      return (isinf(v) && v < 0) || (comb == kPbcCombMaxNum && isnan(v));
    }
  return false;
}

static bool headDimOk(long long d) { return d % kPbcFrag == 0 && d <= kMaxHeadDim; }

bool pbcGpuMatchAttention(MlirOperation qkRoot, PbcAttention *at) {
  at->nScore = at->nNests = at->nBuffers = 0;
  PbcGemm *qk = &at->qk, *pv = &at->pv;
  if (!pbcGpuMatchGemm(qkRoot, qk) || !qk->plain || qk->aT || !isScoreType(elemOf(qk->c.memref)) ||
      !headDimOk(qk->k) || !pbcChainIsAlloc(qk->c.memref) || !addBuffer(at, qk->c.memref))
    return false;
  /* S starts from 0 (the kernel's scores are the products alone); Kᵀ,
   * when the gemm reads it, is copied just before or just before the fill
   * (past constants and allocations). */
  MlirOperation fill = pbcChainNeighbour(qkRoot, false), copy = {NULL};
  at->k = qk->b.memref;
  if (!qk->bT) {
    copy = fill;
    if (mlirOperationIsNull(copy) || mlirValueIsNull(pbcChainTransposedFrom(copy, qk->b.memref)))
      copy = pbcChainNeighbour(fill, false);
    else
      fill = pbcChainNeighbour(copy, false);
    if (mlirOperationIsNull(copy) ||
        mlirValueIsNull(at->k = pbcChainTransposedFrom(copy, qk->b.memref)) ||
        !addBuffer(at, qk->b.memref))
      return false;
    addNest(at, copy);
  }
  MlirValue init;
  bool ok;
  if (mlirOperationIsNull(fill) || !pbcGpuMatchFill(fill, qk->c.memref, &init) ||
      pbcChainFloatConstant(init, &ok) != 0.0 || !ok)
    return false;
  addNest(at, fill);
  addNest(at, qkRoot);

  enum { kScores, kExp, kSum, kDiv, kTrunc, kGemm } state = kScores;
  MlirValue x = qk->c.memref, m = {NULL}, e = {NULL}, l = {NULL}, p = {NULL};
  Fill fills[kMaxFills];
  int nFills = 0;
  for (MlirOperation op = pbcChainNextNest(qkRoot, at->buffers, at->nBuffers);;
       op = pbcChainNextNest(op, at->buffers, at->nBuffers)) {
    if (mlirOperationIsNull(op) || at->nNests + 2 > kPbcMaxChain ||
        at->nBuffers + 1 > kPbcMaxChain)
      return false;
    MlirValue out, v, filled = storedBuffer(op);
    PbcAccess st;
    if (state == kGemm) {
      /* P V, after its own fill (the kernel absorbs it as any gemm's). */
      if (pbcGpuMatchGemm(op, pv) && pv->a.memref.ptr == p.ptr)
        break;
      if (!mlirValueIsNull(filled) && !isChainBuffer(at, filled) &&
          pbcGpuMatchFill(op, filled, &v) && pbcChainNeighbour(op, true).ptr != NULL &&
          pbcGpuMatchGemm(pbcChainNeighbour(op, true), pv) && pv->a.memref.ptr == p.ptr &&
          pv->c.memref.ptr == filled.ptr)
        continue;
      return false;
    }
    if (!mlirValueIsNull(filled) && rankOf(filled) == rankOf(x) - 1 && pbcChainIsAlloc(filled) &&
        mlirTypeEqual(elemOf(filled), elemOf(x)) && pbcChainSameShape(filled, x, rankOf(x) - 1) &&
        nFills < kMaxFills &&
        pbcGpuMatchFill(op, filled, &v)) {
      fills[nFills].buffer = filled;
      fills[nFills++].value = pbcChainFloatConstant(v, &ok);
      if (!ok || !addBuffer(at, filled))
        return false;
      addNest(at, op);
      continue;
    }
    if (state == kScores && at->nScore < kPbcMaxScoreNests && pbcGpuMatchPointwise(op, x, &st) &&
        pbcChainIsAlloc(st.memref) && mlirTypeEqual(elemOf(st.memref), elemOf(x)) &&
        pbcChainSameShape(st.memref, x, rankOf(x))) {
      at->scoreIn[at->nScore] = x;
      at->scoreNests[at->nScore++] = op;
      x = st.memref;
      if (!addBuffer(at, x))
        return false;
      addNest(at, op);
      continue;
    }
    /* Each step below names the buffer it writes: a fresh one, or the
     * row max or sum its fill registered. */
    MlirValue fresh = {NULL};
    PbcRowCombiner comb;
    if (state == kScores && pbcChainRowReduce(op, x, filled, true, &comb) &&
        filledFor(fills, nFills, filled, comb)) {
      m = filled;
      state = kExp;
    } else if (state == kExp && pbcChainRowBroadcast(op, x, m, "arith.subf", "math.exp", &out)) {
      e = fresh = out;
      state = kSum;
    } else if (state == kSum && pbcChainRowReduce(op, e, filled, false, &comb) &&
               filledFor(fills, nFills, filled, comb)) {
      l = filled;
      state = kDiv;
    } else if (state == kDiv && pbcChainRowBroadcast(op, e, l, "arith.divf", NULL, &out)) {
      p = fresh = out;
      /* f16 softmax: P feeds P V as it is. */
      state = mlirTypeIsAF16(elemOf(p)) && !qk->bf16 ? kGemm : kTrunc;
    } else if (state == kTrunc && matchTruncation(op, p, qk->bf16, &out)) {
      p = fresh = out;
      state = kGemm;
    } else {
      return false;
    }
    if (!mlirValueIsNull(fresh) && !addBuffer(at, fresh))
      return false;
    addNest(at, op);
  }
  /* The products: P (M x N of scores) times V (N x Dv), same batch. */
  if (!pv->plain || pv->aT || pv->bT || pv->bf16 != qk->bf16 || pv->depth != qk->depth ||
      pv->batch != qk->batch ||
      pv->m != qk->m || pv->k != qk->n || !headDimOk(pv->n) ||
      !pbcChainBuffersPrivate(at->buffers, at->nBuffers, at->nests, at->nNests, pv->root))
    return false;
  pbcGpuMatchNeighbours(pv);
  return true;
}

void pbcGpuAttentionFinish(const PbcAttention *at) {
  pbcGpuTileFinish(&at->pv);
  for (int i = at->nNests - 1; i >= 0; --i)
    mlirOperationDestroy(at->nests[i]);
  for (int i = 0; i < at->nBuffers; ++i)
    pbcEraseWithUsers(mlirOpResultGetOwner(at->buffers[i]));
}

static MlirValue clampBelow(MlirOperation before, MlirValue v, long long limit) {
  if (!limit)
    return v;
  return pbcGpuArith(before, "minui", v, pbcGpuConstIndex(before, limit - 1));
}

MlirValue pbcGpuAttentionScore(MlirOperation before, const PbcAttention *at, MlirValue s,
                               MlirValue b, MlirValue row, long long rowLimit, MlirValue col,
                               long long colLimit) {
  MlirType f32 = mlirF32TypeGet(mlirOperationGetContext(before));
  MlirType sElem = mlirShapedTypeGetElementType(mlirValueGetType(at->qk.c.memref));
  MlirValue colIn = colLimit ? pbcGpuLessThan(before, col, pbcGpuConstIndex(before, colLimit))
                             : (MlirValue){NULL};
  MlirValue v = s;
  if (!mlirTypeIsAF32(sElem)) /* scores the program keeps in f16 */
    v = pbcGpuOp(before, "arith.truncf", 1, &v, sElem, 0, NULL);
  if (at->nScore) {
    MlirValue idx[3];
    int k = 0;
    if (!mlirValueIsNull(b))
      idx[k++] = b;
    idx[k++] = clampBelow(before, row, rowLimit);
    idx[k++] = clampBelow(before, col, colLimit);
    for (int i = 0; i < at->nScore; ++i)
      v = pbcGpuInlinePointwise(before, at->scoreNests[i], at->scoreIn[i], v, idx, false);
  }
  if (!mlirTypeIsAF32(sElem))
    v = pbcGpuOp(before, "arith.extf", 1, &v, f32, 0, NULL);
  return mlirValueIsNull(colIn)
             ? v
             : pbcGpuSelect(before, colIn, v, pbcGpuConstF32(before, "0xFF800000 : f32"));
}
