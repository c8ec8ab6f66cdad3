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

#include "matrix_units.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"

enum { kMaxFills = 4, kMaxHeadDim = 128 };

static bool isAlloc(MlirValue v) {
  return mlirValueIsAOpResult(v) && pbcOpIsA(mlirOpResultGetOwner(v), "memref.alloc");
}

static MlirType elemOf(MlirValue memref) {
  return mlirShapedTypeGetElementType(mlirValueGetType(memref));
}

/* Scores and the softmax's buffers: f32, or f16 as the program keeps them. */
static bool isScoreType(MlirType t) { return mlirTypeIsAF32(t) || mlirTypeIsAF16(t); }

/* Whether a and b are static memrefs of one shape (b's first `rank` dims
 * when rank < a's). */
static bool sameShape(MlirValue a, MlirValue b, int rank) {
  MlirType ta = mlirValueGetType(a), tb = mlirValueGetType(b);
  if (!mlirShapedTypeHasStaticShape(ta) || !mlirShapedTypeHasStaticShape(tb) ||
      mlirShapedTypeGetRank(ta) != rank)
    return false;
  for (int d = 0; d < rank; ++d)
    if (mlirShapedTypeGetDimSize(ta, d) != mlirShapedTypeGetDimSize(tb, d))
      return false;
  return true;
}

static int rankOf(MlirValue memref) { return (int)mlirShapedTypeGetRank(mlirValueGetType(memref)); }

/* The body of a perfect band of `depth` loops from 0, step 1, over the
 * first `depth` dims of `over`: its ops but the terminator into ops[]
 * (at most max); returns their number, or -1. */
static int bandBody(MlirOperation nest, int depth, MlirValue over, MlirOperation band[],
                    MlirOperation ops[], int max) {
  if (!pbcOpIsA(nest, "affine.for") || pbcLoopBand(nest, band, kPbcMaxBand) != depth)
    return -1;
  MlirType t = mlirValueGetType(over);
  for (int l = 0; l < depth; ++l)
    if (pbcLoopZeroBasedTrip(band[l]) != mlirShapedTypeGetDimSize(t, l))
      return -1;
  int n = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(pbcLoopBody(band[depth - 1]));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (pbcOpIsA(op, "affine.yield"))
      continue;
    if (n == max)
      return -1;
    ops[n++] = op;
  }
  return n;
}

/* Whether op is an access of `memref` whose subscripts are band[0..rank)'s
 * indices, in order. */
static bool accessByBand(MlirOperation op, MlirValue memref, bool write, MlirOperation band[]) {
  PbcAccess acc;
  if (!pbcAccessGet(op, &acc) || acc.isWrite != write || acc.lanes || acc.memref.ptr != memref.ptr)
    return false;
  for (int d = 0; d < acc.rank; ++d)
    if (!pbcGpuSubscriptIsIv(&acc.subscripts[d], band[d]))
      return false;
  return true;
}

static bool operandsAre(MlirOperation op, MlirOperation a, MlirOperation b, bool commutes) {
  MlirValue x = mlirOperationGetOperand(op, 0), y = mlirOperationGetOperand(op, 1);
  MlirValue ra = mlirOperationGetResult(a, 0), rb = mlirOperationGetResult(b, 0);
  return (x.ptr == ra.ptr && y.ptr == rb.ptr) || (commutes && x.ptr == rb.ptr && y.ptr == ra.ptr);
}

/* What a row reduction combines with. */
typedef enum { kCombSum, kCombMaxNum, kCombMaximum, kCombOther } Combiner;

/* R[rows] = comb(X[rows, j], R[rows]) over all of X, j innermost, comb a
 * sum (`max` false) or a max (maxnumf or maximumf, which *comb tells). */
static bool matchRowReduce(MlirOperation nest, MlirValue x, MlirValue r, bool max,
                           Combiner *comb) {
  MlirOperation band[kPbcMaxBand], op[4];
  int rank = rankOf(x);
  if (mlirValueIsNull(r) || rankOf(r) != rank - 1 || bandBody(nest, rank, x, band, op, 4) != 4)
    return false;
  *comb = pbcOpIsA(op[2], "arith.addf")       ? kCombSum
          : pbcOpIsA(op[2], "arith.maxnumf")  ? kCombMaxNum
          : pbcOpIsA(op[2], "arith.maximumf") ? kCombMaximum
                                              : kCombOther;
  return (max ? *comb == kCombMaxNum || *comb == kCombMaximum : *comb == kCombSum) &&
         accessByBand(op[0], x, false, band) && accessByBand(op[1], r, false, band) &&
         operandsAre(op[2], op[0], op[1], true) && accessByBand(op[3], r, true, band) &&
         mlirOperationGetOperand(op[3], 0).ptr == mlirOperationGetResult(op[2], 0).ptr;
}

/* Y = unary?(binary(X, R[rows])) over all of X into a fresh buffer *y. */
static bool matchRowBroadcast(MlirOperation nest, MlirValue x, MlirValue r, const char *binary,
                              const char *unary, MlirValue *y) {
  MlirOperation band[kPbcMaxBand], op[5];
  int rank = rankOf(x), n = unary ? 5 : 4;
  if (bandBody(nest, rank, x, band, op, 5) != n || !accessByBand(op[0], x, false, band) ||
      !accessByBand(op[1], r, false, band) || !pbcOpIsA(op[2], binary) ||
      !operandsAre(op[2], op[0], op[1], false))
    return false;
  MlirOperation last = op[2];
  if (unary) {
    if (!pbcOpIsA(op[3], unary) || mlirOperationGetOperand(op[3], 0).ptr !=
                                       mlirOperationGetResult(op[2], 0).ptr)
      return false;
    last = op[3];
  }
  PbcAccess st;
  if (!pbcAccessGet(op[n - 1], &st) || !st.isWrite ||
      mlirOperationGetOperand(op[n - 1], 0).ptr != mlirOperationGetResult(last, 0).ptr)
    return false;
  *y = st.memref;
  return accessByBand(op[n - 1], *y, true, band) && isAlloc(*y) &&
         mlirTypeEqual(elemOf(*y), elemOf(x)) && sameShape(*y, x, rank);
}

/* P16 = truncf(P) to `half` (f16 or bf16) over all of P. */
static bool matchTruncation(MlirOperation nest, MlirValue p, bool bf16, MlirValue *out) {
  MlirOperation band[kPbcMaxBand], op[3];
  int rank = rankOf(p);
  if (bandBody(nest, rank, p, band, op, 3) != 3 || !accessByBand(op[0], p, false, band) ||
      !pbcOpIsA(op[1], "arith.truncf") ||
      !(bf16 ? mlirTypeIsABF16 : mlirTypeIsAF16)(mlirValueGetType(mlirOperationGetResult(op[1], 0))))
    return false;
  PbcAccess st;
  if (!pbcAccessGet(op[2], &st) || !st.isWrite ||
      mlirOperationGetOperand(op[2], 0).ptr != mlirOperationGetResult(op[1], 0).ptr)
    return false;
  *out = st.memref;
  return accessByBand(op[2], *out, true, band) && isAlloc(*out) && sameShape(*out, p, rank);
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

/* The float constant v holds, or NaN (with *ok false) when it is none. */
static double floatConstant(MlirValue v, bool *ok) {
  *ok = false;
  if (!mlirValueIsAOpResult(v) || !pbcOpIsA(mlirOpResultGetOwner(v), "arith.constant"))
    return NAN;
  MlirAttribute a = mlirOperationGetAttributeByName(mlirOpResultGetOwner(v), pbcStr("value"));
  if (!mlirAttributeIsAFloat(a))
    return NAN;
  *ok = true;
  return mlirFloatAttrGetValueDouble(a);
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
static bool filledFor(const Fill *fills, int n, MlirValue r, Combiner comb) {
  for (int i = 0; i < n; ++i)
    if (fills[i].buffer.ptr == r.ptr) {
      double v = fills[i].value;
      if (comb == kCombSum)
        return v == 0.0;
      return (isinf(v) && v < 0) || (comb == kCombMaxNum && isnan(v));
    }
  return false;
}

/* Whether every use of each chain buffer lies in the chain's nests, the
 * P V gemm or a deallocation. */
static bool buffersPrivate(const PbcAttention *at) {
  for (int i = 0; i < at->nBuffers; ++i)
    for (MlirOpOperand u = mlirValueGetFirstUse(at->buffers[i]); !mlirOpOperandIsNull(u);
         u = mlirOpOperandGetNextUse(u)) {
      MlirOperation user = mlirOpOperandGetOwner(u);
      bool inside = pbcOpIsA(user, "memref.dealloc") || pbcOpIsInside(user, at->pv.root);
      for (int k = 0; k < at->nNests && !inside; ++k)
        inside = pbcOpIsInside(user, at->nests[k]);
      if (!inside)
        return false;
    }
  return true;
}

static bool headDimOk(long long d) { return d % kPbcFrag == 0 && d <= kMaxHeadDim; }

/* Kᵀ materialized just before the gemm: a copy nest kt[b, d, j] = K[b, j, d]
 * (the last two subscripts swapped) into a buffer of the function's own,
 * from an identity-layout K. Returns K, or null. */
static MlirValue transposedFrom(MlirOperation nest, MlirValue kt) {
  MlirOperation band[kPbcMaxBand], op[2];
  int rank = rankOf(kt);
  MlirValue none = {NULL};
  if (rank < 2 || !isAlloc(kt) || bandBody(nest, rank, kt, band, op, 2) != 2 ||
      !accessByBand(op[1], kt, true, band) ||
      mlirOperationGetOperand(op[1], 0).ptr != mlirOperationGetResult(op[0], 0).ptr)
    return none;
  PbcAccess ld;
  if (!pbcAccessGet(op[0], &ld) || ld.isWrite || ld.lanes || ld.rank != rank ||
      !pbcMemrefHasIdentityLayout(mlirValueGetType(ld.memref)) ||
      !mlirShapedTypeHasStaticShape(mlirValueGetType(ld.memref)))
    return none;
  for (int d = 0; d < rank; ++d) {
    int from = d < rank - 2 ? d : 2 * rank - 3 - d; /* ..., j, d <- ..., d, j */
    if (!pbcGpuSubscriptIsIv(&ld.subscripts[d], band[from]))
      return none;
  }
  return ld.memref;
}

bool pbcGpuMatchAttention(MlirOperation qkRoot, PbcAttention *at) {
  at->nScore = at->nNests = at->nBuffers = 0;
  PbcGemm *qk = &at->qk, *pv = &at->pv;
  if (!pbcGpuMatchGemm(qkRoot, qk) || !qk->plain || qk->aT || !isScoreType(elemOf(qk->c.memref)) ||
      !headDimOk(qk->k) || !isAlloc(qk->c.memref) || !addBuffer(at, qk->c.memref))
    return false;
  /* S starts from 0 (the kernel's scores are the products alone); Kᵀ,
   * when the gemm reads it, is copied just before or just before the fill
   * (past constants and allocations). */
  MlirOperation fill = pbcGpuNeighbour(qkRoot, false), copy = {NULL};
  at->k = qk->b.memref;
  if (!qk->bT) {
    copy = fill;
    if (mlirOperationIsNull(copy) || mlirValueIsNull(transposedFrom(copy, qk->b.memref)))
      copy = pbcGpuNeighbour(fill, false);
    else
      fill = pbcGpuNeighbour(copy, false);
    if (mlirOperationIsNull(copy) ||
        mlirValueIsNull(at->k = transposedFrom(copy, qk->b.memref)) ||
        !addBuffer(at, qk->b.memref))
      return false;
    addNest(at, copy);
  }
  MlirValue init;
  bool ok;
  if (mlirOperationIsNull(fill) || !pbcGpuMatchFill(fill, qk->c.memref, &init) ||
      floatConstant(init, &ok) != 0.0 || !ok)
    return false;
  addNest(at, fill);
  addNest(at, qkRoot);

  enum { kScores, kExp, kSum, kDiv, kTrunc, kGemm } state = kScores;
  MlirValue x = qk->c.memref, m = {NULL}, e = {NULL}, l = {NULL}, p = {NULL};
  Fill fills[kMaxFills];
  int nFills = 0;
  for (MlirOperation op = mlirOperationGetNextInBlock(qkRoot);; op = mlirOperationGetNextInBlock(op)) {
    if (mlirOperationIsNull(op) || at->nNests + 2 > kPbcMaxChain ||
        at->nBuffers + 1 > kPbcMaxChain)
      return false;
    if (pbcGpuMovable(op))
      continue;
    if (pbcOpIsA(op, "memref.dealloc")) {
      if (!isChainBuffer(at, mlirOperationGetOperand(op, 0)))
        return false;
      continue;
    }
    if (!pbcOpIsA(op, "affine.for"))
      return false;
    MlirValue out, v, filled = storedBuffer(op);
    PbcAccess st;
    if (state == kGemm) {
      /* P V, after its own fill (the kernel absorbs it as any gemm's). */
      if (pbcGpuMatchGemm(op, pv) && pv->a.memref.ptr == p.ptr)
        break;
      if (!mlirValueIsNull(filled) && !isChainBuffer(at, filled) &&
          pbcGpuMatchFill(op, filled, &v) && pbcGpuNeighbour(op, true).ptr != NULL &&
          pbcGpuMatchGemm(pbcGpuNeighbour(op, true), pv) && pv->a.memref.ptr == p.ptr &&
          pv->c.memref.ptr == filled.ptr)
        continue;
      return false;
    }
    if (!mlirValueIsNull(filled) && rankOf(filled) == rankOf(x) - 1 && isAlloc(filled) &&
        mlirTypeEqual(elemOf(filled), elemOf(x)) && sameShape(filled, x, rankOf(x) - 1) &&
        nFills < kMaxFills &&
        pbcGpuMatchFill(op, filled, &v)) {
      fills[nFills].buffer = filled;
      fills[nFills++].value = floatConstant(v, &ok);
      if (!ok || !addBuffer(at, filled))
        return false;
      addNest(at, op);
      continue;
    }
    if (state == kScores && at->nScore < kPbcMaxScoreNests && pbcGpuMatchPointwise(op, x, &st) &&
        isAlloc(st.memref) && mlirTypeEqual(elemOf(st.memref), elemOf(x)) &&
        sameShape(st.memref, x, rankOf(x))) {
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
    Combiner comb;
    if (state == kScores && matchRowReduce(op, x, filled, true, &comb) &&
        filledFor(fills, nFills, filled, comb)) {
      m = filled;
      state = kExp;
    } else if (state == kExp && matchRowBroadcast(op, x, m, "arith.subf", "math.exp", &out)) {
      e = fresh = out;
      state = kSum;
    } else if (state == kSum && matchRowReduce(op, e, filled, false, &comb) &&
               filledFor(fills, nFills, filled, comb)) {
      l = filled;
      state = kDiv;
    } else if (state == kDiv && matchRowBroadcast(op, e, l, "arith.divf", NULL, &out)) {
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
      pv->m != qk->m || pv->k != qk->n || !headDimOk(pv->n) || !buffersPrivate(at))
    return false;
  pbcGpuMatchNeighbours(pv);
  return true;
}
