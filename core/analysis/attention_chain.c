/* The f32 attention chain (see attention_chain.h), matched nest by nest in
 * program order, each nest checked for exactly the computation a fused
 * kernel performs. */
#include "analysis/attention_chain.h"

#include <math.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/chain_match.h"

enum { kMaxBand = 4, kMaxBody = 32 };

static MlirValue result(MlirOperation op) { return mlirOperationGetResult(op, 0); }

static bool isIv(const PbcLinearForm *f, MlirOperation loop) {
  long long k;
  return pbcLinearIsIvPlusConstant(f, pbcLoopIv(loop), &k) && k == 0;
}

static int rankOf(MlirValue m) { return (int)mlirShapedTypeGetRank(mlirValueGetType(m)); }

static long long dimOf(MlirValue m, int d) {
  return mlirShapedTypeGetDimSize(mlirValueGetType(m), d);
}

/* A static, identity-layout memref of f32. */
static bool plainF32(MlirValue m) {
  MlirType t = mlirValueGetType(m);
  return mlirTypeIsAMemRef(t) && mlirShapedTypeHasStaticShape(t) &&
         pbcMemrefHasIdentityLayout(t) && mlirTypeIsAF32(mlirShapedTypeGetElementType(t));
}

/* A fill: the nest stores one constant into every element of a buffer
 * (*buffer, *value). */
static bool matchFill(MlirOperation nest, MlirValue *buffer, MlirValue *value) {
  MlirOperation band[PBC_MAX_BAND];
  int depth = pbcOpIsA(nest, "affine.for") ? pbcLoopBand(nest, band, PBC_MAX_BAND) : 0;
  PbcAccess st;
  MlirOperation cst;
  if (depth == 0 || !pbcLoopStoresOnlyConstant(band[depth - 1], &st, &cst) ||
      st.rank != depth || !plainF32(st.memref))
    return false;
  for (int l = 0; l < depth; ++l)
    if (pbcLoopZeroBasedTrip(band[l]) != dimOf(st.memref, l) || !isIv(&st.subscripts[l], band[l]))
      return false;
  *buffer = st.memref;
  *value = result(cst);
  return true;
}

/* A gemm C[b,i,j] += A[b,i,k] * B[b,k,j] (or B[b,j,k]: *bRows) on f32, band
 * [b] i j k. */
typedef struct {
  MlirOperation band[kMaxBand];
  int depth;
  MlirValue a, b, c;
  bool bRows;
} Gemm;

static bool accessIs(const PbcAccess *acc, const Gemm *g, int r, int c) {
  int batch = g->depth - 3;
  if (acc->rank != 2 + batch || acc->lanes || (batch && !isIv(&acc->subscripts[0], g->band[0])))
    return false;
  return isIv(&acc->subscripts[batch], g->band[r]) && isIv(&acc->subscripts[batch + 1], g->band[c]);
}

static bool matchGemm(MlirOperation root, Gemm *g) {
  MlirOperation band[PBC_MAX_BAND], op[6];
  if (!pbcOpIsA(root, "affine.for") || !pbcNestKindIs(root, "matmul"))
    return false;
  g->depth = pbcLoopBand(root, band, PBC_MAX_BAND);
  if (g->depth != 3 && g->depth != 4)
    return false;
  memcpy(g->band, band, sizeof(MlirOperation) * (size_t)g->depth);
  int n = 0;
  for (MlirOperation o = mlirBlockGetFirstOperation(pbcLoopBody(band[g->depth - 1]));
       !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o)) {
    if (pbcOpIsA(o, "affine.yield"))
      continue;
    if (n == 6)
      return false;
    op[n++] = o;
  }
  /* load, load, load, mulf, addf, store in some order of the loads. */
  if (n != 6 || !pbcOpIsA(op[3], "arith.mulf") || !pbcOpIsA(op[4], "arith.addf") ||
      !pbcOpIsA(op[5], "affine.store") ||
      mlirOperationGetOperand(op[5], 0).ptr != result(op[4]).ptr)
    return false;
  PbcAccess acc[3], st;
  for (int i = 0; i < 3; ++i)
    if (!pbcOpIsA(op[i], "affine.load") || !pbcAccessGet(op[i], &acc[i]))
      return false;
  pbcAccessGet(op[5], &st);
  int ci = -1;
  for (int i = 0; i < 3; ++i)
    if (acc[i].memref.ptr == st.memref.ptr && pbcAccessesSame(&acc[i], &st))
      ci = i;
  if (ci < 0)
    return false;
  int x = ci == 0 ? 1 : 0, y = ci == 2 ? 1 : 2;
  MlirOperation mul = op[3], add = op[4];
  if (!pbcChainOperandsAre(mul, op[x], op[y], true) ||
      !(pbcChainOperandsAre(add, op[ci], mul, true)))
    return false;
  int d = g->depth, i = d - 3, j = d - 2, k = d - 1;
  for (int l = 0; l < d; ++l)
    if (pbcLoopZeroBasedTrip(band[l]) <= 0)
      return false;
  if (!accessIs(&st, g, i, j))
    return false;
  /* A is the operand indexed by i. */
  if (!accessIs(&acc[x], g, i, k)) {
    int t = x;
    x = y;
    y = t;
  }
  if (!accessIs(&acc[x], g, i, k))
    return false;
  g->bRows = accessIs(&acc[y], g, j, k);
  if (!g->bRows && !accessIs(&acc[y], g, k, j))
    return false;
  g->a = acc[x].memref, g->b = acc[y].memref, g->c = st.memref;
  return plainF32(g->a) && plainF32(g->b) && plainF32(g->c);
}

/* A pointwise nest on the scores x: loads x at the band's indices, other
 * buffers at subscripts that are each a band index or a constant (the
 * key index, if any, last), computes with arith and math ops on f32 (and
 * i1) from those loads and outside float constants, and stores one value
 * at the band's indices into a fresh buffer (*y) of x's shape. */
static bool matchScoreNest(MlirOperation nest, MlirValue x, MlirValue *y) {
  MlirOperation band[kMaxBand], op[kMaxBody];
  int rank = rankOf(x);
  int n = pbcChainBandBody(nest, rank, x, band, op, kMaxBody);
  if (n < 3)
    return false;
  int xLoads = 0;
  for (int i = 0; i < n - 1; ++i) {
    PbcAccess acc;
    if (pbcOpIsA(op[i], "affine.load")) {
      if (!pbcAccessGet(op[i], &acc) || !plainF32(acc.memref))
        return false;
      if (acc.memref.ptr == x.ptr) {
        if (!pbcChainAccessByBand(op[i], x, false, band))
          return false;
        ++xLoads;
        continue;
      }
      for (int d = 0; d < acc.rank; ++d) {
        const PbcLinearForm *f = &acc.subscripts[d];
        bool ok = f->linear && f->nTerms == 0;
        for (int l = 0; l < rank && !ok; ++l)
          ok = isIv(f, band[l]) && (l != rank - 1 || d == acc.rank - 1);
        if (!ok)
          return false;
      }
      continue;
    }
    char name[64];
    pbcOpName(op[i], name, sizeof name);
    if ((strncmp(name, "arith.", 6) && strncmp(name, "math.", 5)) ||
        pbcOpIsA(op[i], "arith.constant") || mlirOperationGetNumResults(op[i]) != 1 ||
        mlirOperationGetNumRegions(op[i]) != 0)
      return false;
    MlirType t = mlirValueGetType(result(op[i]));
    bool isIndex = mlirTypeIsAIndex(t);
    if (!mlirTypeIsAF32(t) && !isIndex && !(mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) == 1))
      return false;
    /* Index arithmetic and comparisons (causal and banded masks) on the
     * band's indices and index constants. */
    if ((!strncmp(name, "arith.", 6) && (name[strlen(name) - 1] == 'i' || isIndex)) &&
        !pbcOpIsA(op[i], "arith.cmpi") && !pbcOpIsA(op[i], "arith.addi") &&
        !pbcOpIsA(op[i], "arith.subi") && !pbcOpIsA(op[i], "arith.muli"))
      return false;
    for (intptr_t k = 0; k < mlirOperationGetNumOperands(op[i]); ++k) {
      MlirValue v = mlirOperationGetOperand(op[i], k);
      if (mlirValueIsABlockArgument(v)) {
        bool isBandIv = false;
        for (int l = 0; l < rank; ++l)
          isBandIv |= v.ptr == pbcLoopIv(band[l]).ptr;
        if (!isBandIv)
          return false;
        continue;
      }
      MlirOperation def = mlirOpResultGetOwner(v);
      bool ok = pbcOpIsInside(def, nest);
      if (!ok && pbcOpIsA(def, "arith.constant")) {
        MlirType ct = mlirValueGetType(v);
        ok = mlirTypeIsAIndex(ct) || (pbcChainFloatConstant(v, &ok), ok);
      }
      if (!ok)
        return false;
    }
  }
  PbcAccess st;
  if (xLoads != 1 || !pbcAccessGet(op[n - 1], &st) || !st.isWrite)
    return false;
  *y = st.memref;
  return pbcChainAccessByBand(op[n - 1], *y, true, band) && pbcChainIsAlloc(*y) && plainF32(*y) &&
         rankOf(*y) == rank;
}

static bool addBuffer(PbcAttentionChain *at, MlirValue b) {
  for (int i = 0; i < at->nBuffers; ++i)
    if (at->buffers[i].ptr == b.ptr)
      return false;
  if (at->nBuffers == kPbcAttentionMaxChain || !pbcChainIsAlloc(b))
    return false;
  at->buffers[at->nBuffers++] = b;
  return true;
}

static bool isChainBuffer(const PbcAttentionChain *at, MlirValue b) {
  for (int i = 0; i < at->nBuffers; ++i)
    if (at->buffers[i].ptr == b.ptr)
      return true;
  return false;
}

static bool addNest(PbcAttentionChain *at, MlirOperation nest) {
  if (at->nNests == kPbcAttentionMaxChain)
    return false;
  at->nests[at->nNests++] = nest;
  return true;
}

bool pbcMatchAttentionChain(MlirOperation qkRoot, PbcAttentionChain *at) {
  memset(at, 0, sizeof *at);
  Gemm qk, pv;
  if (!matchGemm(qkRoot, &qk) || !pbcChainIsAlloc(qk.c) || !addBuffer(at, qk.c))
    return false;
  at->batched = qk.depth == 4;
  int bd = at->batched ? 1 : 0;
  at->batch = bd ? dimOf(qk.c, 0) : 1;
  at->m = dimOf(qk.c, bd), at->n = dimOf(qk.c, bd + 1), at->d = dimOf(qk.a, bd + 1);
  at->q = qk.a;
  at->k = qk.b;
  at->kRows = qk.bRows;
  /* S starts at 0; a transposing copy of K (before or after that fill)
   * is read through. */
  MlirOperation fill = pbcChainNeighbour(qkRoot, false);
  MlirValue filled, init;
  bool ok;
  if (!qk.bRows && !mlirOperationIsNull(fill) && pbcChainIsAlloc(qk.b)) {
    MlirOperation copy = fill;
    MlirValue k = pbcChainTransposedFrom(copy, qk.b);
    if (mlirValueIsNull(k) && !mlirOperationIsNull(pbcChainNeighbour(fill, false)))
      k = pbcChainTransposedFrom(copy = pbcChainNeighbour(fill, false), qk.b);
    else if (!mlirValueIsNull(k))
      fill = pbcChainNeighbour(copy, false);
    if (!mlirValueIsNull(k)) {
      if (!addBuffer(at, qk.b) || !addNest(at, copy))
        return false;
      at->k = k;
      at->kRows = true;
    }
  }
  if (mlirOperationIsNull(fill) || !matchFill(fill, &filled, &init) || filled.ptr != qk.c.ptr ||
      pbcChainFloatConstant(init, &ok) != 0.0 || !ok || !addNest(at, fill) || !addNest(at, qkRoot))
    return false;

  enum { kScores, kExp, kSum, kDiv, kGemm } state = kScores;
  MlirValue x = qk.c, m = {NULL}, e = {NULL}, l = {NULL}, p = {NULL}, mFill = {NULL},
            lFill = {NULL};
  double mInit = 0;
  /* Frees of other buffers (Q's, after Q Kᵀ) move after the kernel. */
  for (MlirOperation op = pbcChainNextNest(qkRoot, NULL, 0);; op = pbcChainNextNest(op, NULL, 0)) {
    if (mlirOperationIsNull(op))
      return false;
    MlirValue out;
    if (state == kGemm) {
      /* O's fill, then P V. */
      if (mlirValueIsNull(at->oInit) && matchFill(op, &filled, &init) &&
          !isChainBuffer(at, filled)) {
        at->o = filled;
        at->oInit = init;
        if (!addNest(at, op))
          return false;
        continue;
      }
      if (!matchGemm(op, &pv) || pv.a.ptr != p.ptr || pv.bRows || pv.depth != qk.depth ||
          mlirValueIsNull(at->oInit) || pv.c.ptr != at->o.ptr)
        return false;
      at->pv = op;
      break;
    }
    if (matchFill(op, &filled, &init) && pbcChainIsAlloc(filled) &&
        pbcChainSameShape(filled, x, rankOf(x) - 1) && !isChainBuffer(at, filled)) {
      double v = pbcChainFloatConstant(init, &ok);
      if (!ok || !addBuffer(at, filled) || !addNest(at, op))
        return false;
      if (mlirValueIsNull(mFill) && state == kScores)
        mFill = filled, mInit = v;
      else if (mlirValueIsNull(lFill) && v == 0.0)
        lFill = filled;
      else
        return false;
      continue;
    }
    PbcRowCombiner comb;
    if (state == kScores && at->nScore < kPbcAttentionMaxScoreNests &&
        matchScoreNest(op, x, &out)) {
      at->scoreIn[at->nScore] = x;
      at->scoreNests[at->nScore++] = op;
      x = out;
      if (!addBuffer(at, x))
        return false;
    } else if (state == kScores && pbcChainRowReduce(op, x, mFill, true, &comb)) {
      /* maximumf from NaN stays NaN; the kernel's max starts from the
       * fill too, so any start is what the program computes. */
      m = mFill;
      at->maxInit = mInit;
      at->maxNum = comb == kPbcCombMaxNum;
      state = kExp;
    } else if (state == kExp && pbcChainRowBroadcast(op, x, m, "arith.subf", "math.exp", &out)) {
      e = out;
      if (!addBuffer(at, e))
        return false;
      state = kSum;
    } else if (state == kSum && pbcChainRowReduce(op, e, lFill, false, &comb)) {
      l = lFill;
      state = kDiv;
    } else if (state == kDiv && pbcChainRowBroadcast(op, e, l, "arith.divf", NULL, &out)) {
      p = out;
      if (!addBuffer(at, p))
        return false;
      state = kGemm;
    } else {
      return false;
    }
    if (!addNest(at, op))
      return false;
  }
  at->v = pv.b;
  at->dv = dimOf(pv.c, bd + 1);
  return dimOf(pv.a, bd + 1) == at->n && dimOf(pv.c, bd) == at->m &&
         (!bd || dimOf(pv.c, 0) == at->batch) &&
         pbcChainBuffersPrivate(at->buffers, at->nBuffers, at->nests, at->nNests, at->pv);
}
