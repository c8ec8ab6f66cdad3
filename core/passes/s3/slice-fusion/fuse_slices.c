/* pbc-fuse-slices{l2-bytes=N}: slicing-based fusion of a stencil consumer
 * with the producers of the buffer it reads (PolyBlocks §4.2, the blur of
 * Fig. 6), the case pbc-fuse leaves: the consumer reads neighbouring
 * elements of the intermediate X (X[h + kh] along one dimension d).
 *
 * The consumer's loop along d (trip N) is tiled by T, and, when the rows of
 * a tile would not fit, the loop along a second dimension of X too (a 2-D
 * tile, as the paper's 124 x 6 one). For each tile, the slice of X it reads,
 * [t0, t0 + T + halo) along d, is computed first by the producers,
 * restricted to that slice, into a private buffer of the slice's shape; the
 * consumer's tile then reads the private buffer. X, the global intermediate,
 * disappears. Cost model (chooseTiling): the producers recompute the halo
 * per tile, so T is the smallest power of two dividing N that keeps that
 * redundant work within 10%; the private buffer must fit in half of L2 (one
 * per core: the tile loops are parallel, each iteration allocates its own
 * buffer; the other half holds the input and output streaming through).
 * (Half of L2 against all of it and a quarter: tools/bench/README.md.)
 *
 * Legal when:
 *  - X is a local allocation used only by its producers, the consumer and
 *    deallocations;
 *  - every access of X in a producer indexes each tiled dimension by exactly
 *    one loop's index (lp) and a producer writes nothing else, so element r
 *    of X along it depends only on element r of what earlier producers
 *    wrote: restricting lp to the slice computes that slice exactly;
 *  - the consumer reads X at iv(lc) + non-negative multiples of inner loops'
 *    indices + a non-negative constant along each tiled dimension (halo =
 *    the largest offset; 0 along the second one is fine), and lc is a
 *    parallel loop;
 *  - the nests between the producers and the consumer do not touch X nor
 *    write what the producers read (the producers move past them). */
#include <stdlib.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/marks.h"
#include "passes/passes.h"

enum {
  kMaxProducers = 4,
  kMaxRedundancyPct = 10,
  kMaxOps = 4096,
  kMaxTiledDims = 2,
  kMinRunBytes = 256
};

typedef struct {
  long long l2Bytes;
} State;


/* A perfect band of loops from 0, step 1, constant trips, whose innermost
 * body has no regions. Returns the depth, or 0. */
static int simpleBand(MlirOperation root, MlirOperation band[], long long trip[]) {
  if (!pbcOpIsA(root, "affine.for"))
    return 0;
  int depth = pbcLoopBand(root, band, PBC_MAX_BAND);
  for (int l = 0; l < depth; ++l)
    if ((trip[l] = pbcLoopZeroBasedTrip(band[l])) < 0)
      return 0;
  return pbcLoopBodyIsFlat(band[depth - 1]) ? depth : 0;
}

/* How the consumer reads X: per dimension e, the consumer loop whose index
 * subscript e follows (lc[e]; -1 if none, or if its reads disagree) and the
 * widest window beyond that index (halo[e]). */
typedef struct {
  MlirValue x;
  int rank;
  int lc[PBC_MAX_RANK];
  long long halo[PBC_MAX_RANK];
} Stencil;

/* Subscript e of `acc` as iv(lc) + sum c_i iv(l_i) + k, with l_i inner to lc,
 * c_i >= 0, k >= 0, and iv(lc) in no other subscript: returns lc and sets
 * *halo = k + sum c_i (trip_i - 1); -1 otherwise. */
static int windowOf(const PbcAccess *acc, int e, MlirOperation band[], const long long trip[],
                    int depth, long long *halo) {
  const PbcLinearForm *f = &acc->subscripts[e];
  int lc = -1;
  for (int t = 0; t < f->nTerms; ++t)
    if (f->coeffs[t] == 1 && pbcLoopIndexOf(f->values[t], band, depth) >= 0 &&
        (lc < 0 || pbcLoopIndexOf(f->values[t], band, depth) < lc))
      lc = pbcLoopIndexOf(f->values[t], band, depth);
  if (lc < 0 || !f->linear || f->constant < 0)
    return -1;
  *halo = f->constant;
  for (int t = 0; t < f->nTerms; ++t) {
    int l = pbcLoopIndexOf(f->values[t], band, depth);
    if (l == lc)
      continue;
    if (l < lc || f->coeffs[t] < 0)
      return -1;
    *halo += f->coeffs[t] * (trip[l] - 1);
  }
  for (int o = 0; o < acc->rank; ++o)
    if (o != e && pbcLinearCoeff(&acc->subscripts[o], pbcLoopIv(band[lc])) != 0)
      return -1;
  return lc;
}

static bool isLocalAlloc(MlirValue m) {
  return mlirValueIsAOpResult(m) && pbcOpIsA(mlirOpResultGetOwner(m), "memref.alloc") &&
         mlirShapedTypeHasStaticShape(mlirValueGetType(m));
}

/* The consumer's reads of the first local buffer it reads (X), merged per
 * dimension; it must not write X. (chooseTiling then needs a halo.) */
static bool findStencil(MlirOperation c, MlirOperation band[], long long trip[], int depth,
                        Stencil *s) {
  MlirBlock body = pbcLoopBody(band[depth - 1]);
  s->x = (MlirValue){NULL};
  PbcAccess acc;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!pbcAccessGet(op, &acc) || acc.isWrite || acc.lanes || !isLocalAlloc(acc.memref) ||
        (!mlirValueIsNull(s->x) && acc.memref.ptr != s->x.ptr))
      continue;
    bool first = mlirValueIsNull(s->x);
    s->x = acc.memref, s->rank = acc.rank;
    for (int e = 0; e < acc.rank; ++e) {
      long long halo = 0;
      int lc = windowOf(&acc, e, band, trip, depth, &halo);
      if (first)
        s->lc[e] = lc, s->halo[e] = halo;
      else if (lc != s->lc[e])
        s->lc[e] = -1;
      else if (halo > s->halo[e])
        s->halo[e] = halo;
    }
  }
  if (mlirValueIsNull(s->x))
    return false;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (pbcAccessGet(op, &acc) && acc.isWrite && pbcMemrefsMayAlias(acc.memref, s->x))
      return false;
  return true;
}

/* The dimensions of X the fusion tiles: dims[i] is tiled by `tile[i]`, and
 * the consumer reads halo[dims[i]] more along it. */
typedef struct {
  int n;
  int dims[kMaxTiledDims];
  long long tile[kMaxTiledDims];
} Tiling;

/* A producer of X: writes only X, and every access of X indexes each tiled
 * dimension by exactly one loop's index, the same loop (returned in lp[i])
 * throughout, whose trip covers what the consumer reads (need[i]). */
static bool producerOf(MlirOperation nest, const Stencil *s, const Tiling *t,
                       const long long need[], int lp[]) {
  MlirOperation band[PBC_MAX_BAND];
  long long trip[PBC_MAX_BAND];
  int depth = simpleBand(nest, band, trip);
  if (!depth)
    return false;
  for (int i = 0; i < t->n; ++i)
    lp[i] = -1;
  PbcAccess acc;
  bool writes = false;
  for (MlirOperation op = mlirBlockGetFirstOperation(pbcLoopBody(band[depth - 1]));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (!pbcAccessGet(op, &acc)) {
      if (pbcOpIsA(op, "memref.load") || pbcOpIsA(op, "memref.store") || pbcOpIsA(op, "func.call"))
        return false;
      continue;
    }
    if (acc.isWrite && acc.memref.ptr != s->x.ptr)
      return false;
    if (acc.memref.ptr != s->x.ptr)
      continue; /* X is only accessed directly (usesConfined) */
    if (acc.lanes)
      return false;
    writes |= acc.isWrite;
    for (int i = 0; i < t->n; ++i) {
      const PbcLinearForm *f = &acc.subscripts[t->dims[i]];
      int l = f->nTerms == 1 && f->coeffs[0] == 1 && f->constant == 0
                  ? pbcLoopIndexOf(f->values[0], band, depth)
                  : -1;
      if (l < 0 || (lp[i] >= 0 && l != lp[i]))
        return false;
      lp[i] = l;
      for (int e = 0; e < acc.rank; ++e)
        if (e != t->dims[i] && pbcLinearCoeff(&acc.subscripts[e], pbcLoopIv(band[l])) != 0)
          return false;
    }
  }
  for (int i = 0; i < t->n; ++i)
    if (lp[i] < 0 || trip[lp[i]] < need[i])
      return false;
  return writes;
}

/* Does `nest` read or write X? Which memrefs does it write / read? */
typedef struct {
  MlirValue x;
  bool touchesX;
  int nW, nR;
  MlirValue written[64], read[64];
  bool overflow;
} Effects;

static MlirWalkResult collect(MlirOperation op, void *user) {
  Effects *e = user;
  PbcAccess acc;
  if (pbcAccessGet(op, &acc)) {
    e->touchesX |= acc.memref.ptr == e->x.ptr;
    if (acc.isWrite && e->nW < 64)
      e->written[e->nW++] = acc.memref;
    else if (!acc.isWrite && e->nR < 64)
      e->read[e->nR++] = acc.memref;
    else
      e->overflow = true;
  } else if (pbcOpIsA(op, "memref.load") || pbcOpIsA(op, "memref.store") ||
             pbcOpIsA(op, "func.call") || pbcOpIsA(op, "memref.copy")) {
    e->overflow = true; /* effects this scan does not model */
  }
  return MlirWalkResultAdvance;
}

static void effectsOf(MlirOperation nest, MlirValue x, Effects *e) {
  e->x = x, e->touchesX = false, e->nW = e->nR = 0, e->overflow = false;
  mlirOperationWalk(nest, collect, e, MlirWalkPreOrder);
}

static bool mayAliasAny(MlirValue m, const MlirValue *set, int n) {
  for (int i = 0; i < n; ++i)
    if (pbcMemrefsMayAlias(m, set[i]))
      return true;
  return false;
}

/* Every use of X is a dealloc or an affine load or store of X itself (with
 * linear subscripts) in the producers or the consumer: no view or call
 * reaches X, so the accesses the checks above read are all its accesses. */
static bool usesConfined(MlirValue x, MlirOperation *nests, int n) {
  for (MlirOpOperand u = mlirValueGetFirstUse(x); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    if (pbcOpIsA(user, "memref.dealloc"))
      continue;
    bool load = pbcOpIsA(user, "affine.load"), store = pbcOpIsA(user, "affine.store");
    PbcAccess acc; /* and analyzable: the checks above skip what is not */
    if (!(load || store) || (int)mlirOpOperandGetOperandNumber(u) != (store ? 1 : 0) ||
        !pbcAccessGet(user, &acc))
      return false;
    bool inside = false;
    for (int i = 0; i < n && !inside; ++i)
      inside = pbcOpIsInside(user, nests[i]);
    if (!inside)
      return false;
  }
  return true;
}

/* Accesses of X in the nest go to the private buffer xp, whose origin is
 * X's element t0[i] along each tiled dimension dims[i]: subscript dims[i]
 * becomes (subscript dims[i]) - t0[i]. */
static void rebase(MlirOperation nest, MlirValue x, MlirValue xp, const Tiling *t,
                   const MlirValue t0[]) {
  MlirOperation band[PBC_MAX_BAND];
  int depth = pbcLoopBand(nest, band, PBC_MAX_BAND);
  MlirContext ctx = mlirOperationGetContext(nest);
  for (MlirOperation op = mlirBlockGetFirstOperation(pbcLoopBody(band[depth - 1]));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    bool load = pbcOpIsA(op, "affine.load"), store = pbcOpIsA(op, "affine.store");
    int m = store ? 1 : 0; /* the memref's operand position */
    if ((!load && !store) || mlirOperationGetOperand(op, m).ptr != x.ptr)
      continue;
    MlirAffineMap map = mlirAffineMapAttrGetValue(mlirOperationGetAttributeByName(op, pbcStr("map")));
    intptr_t dims = mlirAffineMapGetNumDims(map), syms = mlirAffineMapGetNumSymbols(map);
    intptr_t results = mlirAffineMapGetNumResults(map);
    MlirAffineExpr exprs[PBC_MAX_RANK];
    for (intptr_t r = 0; r < results; ++r)
      exprs[r] = mlirAffineMapGetResult(map, r);
    for (int i = 0; i < t->n; ++i)
      exprs[t->dims[i]] = mlirAffineAddExprGet(
          exprs[t->dims[i]], mlirAffineMulExprGet(mlirAffineDimExprGet(ctx, dims + i),
                                                  mlirAffineConstantExprGet(ctx, -1)));
    MlirAffineMap shifted = mlirAffineMapGet(ctx, dims + t->n, syms, results, exprs);
    /* Operands: [value,] memref, dims..., t0..., symbols... */
    MlirValue *ops = malloc(sizeof(MlirValue) * (size_t)(mlirOperationGetNumOperands(op) + t->n));
    intptr_t n = 0;
    for (int i = 0; i < m; ++i)
      ops[n++] = mlirOperationGetOperand(op, i);
    ops[n++] = xp;
    for (intptr_t i = 0; i < dims; ++i)
      ops[n++] = mlirOperationGetOperand(op, m + 1 + i);
    for (int i = 0; i < t->n; ++i)
      ops[n++] = t0[i];
    for (intptr_t i = 0; i < syms; ++i)
      ops[n++] = mlirOperationGetOperand(op, m + 1 + dims + i);
    mlirOperationSetOperands(op, n, ops);
    free(ops);
    mlirOperationSetAttributeByName(op, pbcStr("map"), mlirAffineMapAttrGet(shifted));
  }
}

/* Clones `nest` before `before`, its X accesses rebased onto xp, and loop
 * lp[i] restricted to extent[i] elements from t0[i]. */
static void cloneSlice(MlirOperation nest, MlirOperation before, MlirValue x, MlirValue xp,
                       const Tiling *t, const MlirValue t0[], const int lp[],
                       const long long extent[]) {
  rebase(pbcCloneNestRestricted(nest, before, t->n, lp, extent, t0, NULL), x, xp, t, t0);
}

/* The private buffer's shape: X's, each tiled dimension cut to its tile
 * plus halo. */
static void sliceShape(const Stencil *s, const Tiling *t, int64_t shape[]) {
  MlirType xt = mlirValueGetType(s->x);
  for (int e = 0; e < s->rank; ++e)
    shape[e] = mlirShapedTypeGetDimSize(xt, e);
  for (int i = 0; i < t->n; ++i)
    shape[t->dims[i]] = t->tile[i] + s->halo[t->dims[i]];
}

static long long sliceBytes(const Stencil *s, const Tiling *t) {
  int64_t shape[PBC_MAX_RANK];
  sliceShape(s, t, shape);
  long long bytes = pbcElementBits(mlirValueGetType(s->x)) / 8;
  for (int e = 0; e < s->rank; ++e)
    bytes *= shape[e];
  return bytes;
}

/* Bytes of a slice row contiguous in memory: from the innermost tiled
 * dimension (its tile plus halo) through the whole trailing ones. */
static long long sliceRunBytes(const Stencil *s, const Tiling *t) {
  int64_t shape[PBC_MAX_RANK];
  sliceShape(s, t, shape);
  int inner = 0;
  for (int i = 0; i < t->n; ++i)
    inner = t->dims[i] > inner ? t->dims[i] : inner;
  long long run = pbcElementBits(mlirValueGetType(s->x)) / 8;
  for (int e = inner; e < s->rank; ++e)
    run *= shape[e];
  return run;
}

/* Whether the producers' redundant work, prod (tile + halo) / prod tile - 1,
 * is within kMaxRedundancyPct. */
static bool redundancyOk(const Stencil *s, const Tiling *t) {
  double computed = 1, used = 1;
  for (int i = 0; i < t->n; ++i)
    computed *= (double)(t->tile[i] + s->halo[t->dims[i]]), used *= (double)t->tile[i];
  return computed * 100 <= used * (100 + kMaxRedundancyPct);
}

/* The cost model. The stencil dimension (a halo, the outermost consumer
 * loop among such) gets the smallest power-of-two tile dividing its trip
 * whose redundant work is within bounds: the private buffer's rows. If
 * those rows exceed the budget (half of L2: each core's tile keeps its
 * buffer there), the widest other dimension is tiled too, by the largest power of
 * two dividing its trip that fits, as long as a tile's run of contiguous
 * elements stays at least kMinRunBytes (shorter runs waste partial cache
 * lines at every tile edge and give the prefetchers little to follow) and
 * the redundant work within bounds. Returns false if nothing fits. */
static bool chooseTiling(const Stencil *s, MlirOperation band[], const long long trip[],
                         long long budget, Tiling *t) {
  MlirType xt = mlirValueGetType(s->x);
  int d = -1;
  for (int e = 0; e < s->rank; ++e)
    if (s->lc[e] >= 0 && s->halo[e] > 0 && (d < 0 || s->lc[e] < s->lc[d]) &&
        pbcLoopIsParallel(band[s->lc[e]]))
      d = e;
  if (d < 0)
    return false;
  t->n = 1, t->dims[0] = d;
  long long n1 = trip[s->lc[d]];
  for (t->tile[0] = 1; t->tile[0] < n1; t->tile[0] *= 2)
    if (n1 % t->tile[0] == 0 && redundancyOk(s, t))
      break;
  if (t->tile[0] >= n1)
    return false;
  if (sliceBytes(s, t) <= budget)
    return true;
  int d2 = -1;
  for (int e = 0; e < s->rank; ++e)
    if (e != d && s->lc[e] >= 0 && trip[s->lc[e]] > 1 &&
        (d2 < 0 || mlirShapedTypeGetDimSize(xt, e) > mlirShapedTypeGetDimSize(xt, d2)) &&
        pbcLoopIsParallel(band[s->lc[e]]))
      d2 = e;
  if (d2 < 0)
    return false;
  t->n = 2, t->dims[1] = d2;
  long long n2 = trip[s->lc[d2]], k = 1;
  while (2 * k < n2)
    k *= 2;
  for (; k >= 1; k /= 2) {
    t->tile[1] = k;
    if (sliceRunBytes(s, t) < kMinRunBytes) /* (with d inner, d2's tile is not the run) */
      return false;
    if (n2 % k == 0 && sliceBytes(s, t) <= budget && redundancyOk(s, t))
      return true;
  }
  return false;
}

static bool fuseInto(MlirOperation c, MlirOperation *ops, int at, const State *st) {
  MlirOperation band[PBC_MAX_BAND];
  long long trip[PBC_MAX_BAND];
  int depth = simpleBand(c, band, trip);
  Stencil s;
  Tiling t;
  if (!depth || !findStencil(c, band, trip, depth, &s) ||
      !chooseTiling(&s, band, trip, st->l2Bytes / 2, &t))
    return false;
  /* What the producers compute per tile (extent) and in all (need). */
  long long extent[kMaxTiledDims], need[kMaxTiledDims];
  int lc[kMaxTiledDims];
  for (int i = 0; i < t.n; ++i) {
    lc[i] = s.lc[t.dims[i]];
    extent[i] = t.tile[i] + s.halo[t.dims[i]], need[i] = trip[lc[i]] + s.halo[t.dims[i]];
  }
  /* The producers: the nests before c that write X, back to X's alloc;
   * nests between must leave X and the producers' inputs alone. */
  MlirOperation prod[kMaxProducers];
  int lp[kMaxProducers][kMaxTiledDims], nProd = 0;
  MlirValue between[64];
  int nBetween = 0;
  Effects e;
  for (int i = at - 1; i >= 0; --i) {
    MlirOperation op = ops[i];
    if (mlirValueIsAOpResult(s.x) && op.ptr == mlirOpResultGetOwner(s.x).ptr)
      break;
    if (pbcOpIsConstantOrAlloc(op))
      continue;
    if (!pbcOpIsA(op, "affine.for"))
      return false;
    effectsOf(op, s.x, &e);
    if (e.overflow)
      return false;
    if (!e.touchesX) {
      if (nBetween + e.nW > 64)
        return false;
      for (int w = 0; w < e.nW; ++w)
        between[nBetween++] = e.written[w];
      continue;
    }
    if (nProd == kMaxProducers || !producerOf(op, &s, &t, need, lp[nProd]))
      return false;
    for (int r = 0; r < e.nR; ++r)
      if (mayAliasAny(e.read[r], between, nBetween))
        return false;
    prod[nProd++] = op;
  }
  if (!nProd)
    return false;
  MlirOperation all[kMaxProducers + 1];
  for (int i = 0; i < nProd; ++i)
    all[i] = prod[i];
  all[nProd] = c;
  if (!usesConfined(s.x, all, nProd + 1))
    return false;

  /* for t0 = 0 to N0 step T0 {      (parallel)
   *   for t1 = 0 to N1 step T1 {    (parallel; a second tiled dimension only)
   *     Xp = alloc
   *     producers on [t0, t0 + T0 + halo0) x [t1, t1 + T1 + halo1) into Xp
   *     consumer on [t0, t0 + T0) x [t1, t1 + T1)
   *     dealloc Xp } } */
  MlirLocation loc = mlirOperationGetLocation(c);
  MlirContext ctx = mlirOperationGetContext(c);
  MlirOperation tileLoop[kMaxTiledDims];
  MlirValue t0[kMaxTiledDims];
  MlirOperation end = c;
  for (int i = 0; i < t.n; ++i) {
    tileLoop[i] = pbcBuildAffineFor(end, trip[lc[i]], loc);
    pbcLoopSetStep(tileLoop[i], t.tile[i]);
    t0[i] = pbcLoopIv(tileLoop[i]);
    end = mlirBlockGetTerminator(pbcLoopBody(tileLoop[i]));
    /* Parallel: the consumer's loops are, and each tile computes its own
     * slice into its own buffer (MLIR's dependence test cannot see that).
     * pbc-parallelize takes the outermost. */
    mlirOperationSetAttributeByName(tileLoop[i], pbcStr(PBC_MARK_PARALLEL), mlirUnitAttrGet(ctx));
  }
  MlirType xt = mlirValueGetType(s.x);
  int64_t shape[PBC_MAX_RANK];
  sliceShape(&s, &t, shape);
  MlirType xpt = mlirMemRefTypeContiguousGet(mlirShapedTypeGetElementType(xt), s.rank, shape,
                                             mlirAttributeGetNull());
  MlirValue xp = mlirOperationGetResult(pbcBuildAlloc(end, xpt, loc), 0);
  for (int i = nProd - 1; i >= 0; --i)
    cloneSlice(prod[i], end, s.x, xp, &t, t0, lp[i], extent);
  cloneSlice(c, end, s.x, xp, &t, t0, lc, t.tile);
  pbcBuildDealloc(end, xp, loc);
  /* The tile loop is the root nest now: not of one kind (its nests keep
   * theirs). */
  pbcNestSetKind(tileLoop[0], "misc");

  /* X is gone: the originals, its deallocs, its alloc. */
  mlirOperationDestroy(c);
  for (int i = 0; i < nProd; ++i)
    mlirOperationDestroy(prod[i]);
  pbcEraseWithUsers(mlirOpResultGetOwner(s.x)); /* its deallocs */
  return true;
}

static bool run(MlirOperation func, void *state) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockIsNull(body))
    return true;
  MlirOperation *ops = malloc(sizeof(MlirOperation) * kMaxOps);
  bool changed = true;
  while (changed) { /* one fusion per scan: it replaces ops of the list */
    changed = false;
    int n = 0;
    for (MlirOperation op = mlirBlockGetFirstOperation(body);
         !mlirOperationIsNull(op) && n < kMaxOps; op = mlirOperationGetNextInBlock(op))
      ops[n++] = op;
    for (int i = 0; i < n && !changed; ++i)
      if (pbcOpIsA(ops[i], "affine.for"))
        changed = fuseInto(ops[i], ops, i, state);
  }
  free(ops);
  return true;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcFuseSlicesPass = {
    "pbc-fuse-slices", "func.func", "Slicing fusion of stencil consumers with private buffers", run,
    sizeof(State),     createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  enum { L2_BYTES, NUM_OPTIONS };
  static const PbcCountOption kOptions[] = {
      [L2_BYTES] = {"l2-bytes", 1 << 20},
      [NUM_OPTIONS] = {NULL, 0}};
  long long v[NUM_OPTIONS];
  if (!pbcPassCountOptions(options, kOptions, v, err, errLen))
    return (MlirPass){NULL};
  State st = {.l2Bytes = v[L2_BYTES]};
  return pbcCPassCreate(&pbcFuseSlicesPass, &st);
}
