/* pbc-fuse-slices{l2-bytes=N}: slicing-based fusion of a stencil consumer
 * with the producers of the buffer it reads (PolyBlocks §4.2, the blur of
 * Fig. 6), the case pbc-fuse leaves: the consumer reads neighbouring
 * elements of the intermediate X (X[h + kh] along one dimension d).
 *
 * The consumer's loop along d (trip N) is tiled by T. For each tile, the
 * slice of X it reads, rows [t0, t0 + T + halo), is computed first by the
 * producers, restricted to those rows, into a private buffer of T + halo
 * rows; the consumer's tile then reads the private buffer. X, the global
 * intermediate, disappears. Cost model: the producers recompute halo rows
 * per tile, so T is the smallest power of two dividing N that keeps that
 * redundant work within 10%; the private buffer must fit in the L2 cache
 * (one per core: the tile loop is parallel, each iteration allocates its
 * own buffer).
 *
 * Legal when:
 *  - X is a local allocation used only by its producers, the consumer and
 *    deallocations;
 *  - every access of X in a producer indexes dimension d by exactly one
 *    loop's index (lp) and a producer writes nothing else, so row r of X
 *    depends only on row r of what earlier producers wrote: restricting lp
 *    to the slice computes those rows exactly;
 *  - the consumer reads X at iv(lc) + non-negative multiples of inner loops'
 *    indices + a non-negative constant along d (halo = the largest offset),
 *    and lc is a parallel loop;
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
#include "pbc/passes.h"

enum { kMaxProducers = 4, kMaxRedundancyPct = 10, kMaxOps = 4096 };

typedef struct {
  long long l2Bytes;
} State;

static MlirStringRef str(const char *s) { return mlirStringRefCreateFromCString(s); }

/* A perfect band of loops from 0, step 1, constant trips, whose innermost
 * body has no regions. Returns the depth, or 0. */
static int simpleBand(MlirOperation root, MlirOperation band[], long long trip[]) {
  if (!pbcOpIsA(root, "affine.for"))
    return 0;
  int depth = pbcLoopBand(root, band, PBC_MAX_BAND);
  for (int l = 0; l < depth; ++l)
    if ((trip[l] = pbcLoopZeroBasedTrip(band[l])) < 0)
      return 0;
  MlirBlock body = pbcLoopBody(band[depth - 1]);
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (mlirOperationGetNumRegions(op))
      return 0;
  return depth;
}

static int bandLoopOf(MlirValue v, MlirOperation band[], int depth) {
  for (int l = 0; l < depth; ++l)
    if (pbcLoopIv(band[l]).ptr == v.ptr)
      return l;
  return -1;
}

/* What the consumer's read of X looks like along dimension d. */
typedef struct {
  MlirValue x;
  int d, lc;
  long long halo;
} Stencil;

/* Whether `acc` reads X as a stencil along some dimension: subscript d is
 * iv(lc) + sum c_i iv(l_i) + k, with l_i inner to lc, c_i >= 0, k >= 0 and
 * some offset; iv(lc) in no other subscript. */
static bool stencilRead(const PbcAccess *acc, MlirOperation band[], const long long trip[],
                        int depth, Stencil *s) {
  for (int d = 0; d < acc->rank; ++d) {
    const PbcLinearForm *f = &acc->subscripts[d];
    int lc = -1;
    for (int t = 0; t < f->nTerms; ++t)
      if (f->coeffs[t] == 1 && bandLoopOf(f->values[t], band, depth) >= 0 &&
          (lc < 0 || bandLoopOf(f->values[t], band, depth) < lc))
        lc = bandLoopOf(f->values[t], band, depth);
    if (lc < 0 || !f->linear || f->constant < 0)
      continue;
    long long halo = f->constant;
    bool ok = true;
    for (int t = 0; t < f->nTerms && ok; ++t) {
      int l = bandLoopOf(f->values[t], band, depth);
      if (l == lc)
        continue;
      ok = l > lc && f->coeffs[t] >= 0;
      halo += ok ? f->coeffs[t] * (trip[l] - 1) : 0;
    }
    for (int e = 0; e < acc->rank && ok; ++e)
      ok = e == d || pbcLinearCoeff(&acc->subscripts[e], pbcLoopIv(band[lc])) == 0;
    if (ok && halo > 0) {
      s->x = acc->memref, s->d = d, s->lc = lc, s->halo = halo;
      return true;
    }
  }
  return false;
}

static bool isLocalAlloc(MlirValue m) {
  return mlirValueIsAOpResult(m) && pbcOpIsA(mlirOpResultGetOwner(m), "memref.alloc") &&
         mlirShapedTypeHasStaticShape(mlirValueGetType(m));
}

/* The consumer's stencil: all its reads of X agree on d and lc (largest
 * halo), it does not write X, and lc is parallel. */
static bool findStencil(MlirOperation c, MlirOperation band[], long long trip[], int depth,
                        Stencil *s) {
  MlirBlock body = pbcLoopBody(band[depth - 1]);
  s->x = (MlirValue){NULL};
  PbcAccess acc;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    Stencil t;
    if (!pbcAccessGet(op, &acc) || acc.isWrite || acc.lanes || !isLocalAlloc(acc.memref) ||
        (!mlirValueIsNull(s->x) && acc.memref.ptr != s->x.ptr))
      continue;
    if (!stencilRead(&acc, band, trip, depth, &t))
      return false;
    if (mlirValueIsNull(s->x))
      *s = t;
    else if (t.d != s->d || t.lc != s->lc)
      return false;
    else if (t.halo > s->halo)
      s->halo = t.halo;
  }
  if (mlirValueIsNull(s->x))
    return false;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (pbcAccessGet(op, &acc) && acc.isWrite && pbcMemrefsMayAlias(acc.memref, s->x))
      return false;
  return pbcExtAffineIsLoopParallel(band[s->lc]);
}

/* A producer of X: writes only X, and every access of X indexes d by
 * exactly one loop's index, the same loop (returned in *lp) throughout. */
static bool producerOf(MlirOperation nest, const Stencil *s, long long needRows, int *lp) {
  MlirOperation band[PBC_MAX_BAND];
  long long trip[PBC_MAX_BAND];
  int depth = simpleBand(nest, band, trip);
  if (!depth)
    return false;
  *lp = -1;
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
    writes |= acc.isWrite;
    const PbcLinearForm *f = &acc.subscripts[s->d];
    int l = f->nTerms == 1 && f->coeffs[0] == 1 && f->constant == 0
                ? bandLoopOf(f->values[0], band, depth)
                : -1;
    if (l < 0 || (*lp >= 0 && l != *lp) || acc.lanes)
      return false;
    *lp = l;
    for (int e = 0; e < acc.rank; ++e)
      if (e != s->d && pbcLinearCoeff(&acc.subscripts[e], pbcLoopIv(band[l])) != 0)
        return false;
  }
  return writes && *lp >= 0 && trip[*lp] >= needRows;
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

/* affine.apply (d0 + d1)(a, b), before `before`. */
static MlirValue applySum(MlirOperation before, MlirValue a, MlirValue b) {
  MlirContext ctx = mlirOperationGetContext(before);
  MlirAffineExpr sum =
      mlirAffineAddExprGet(mlirAffineDimExprGet(ctx, 0), mlirAffineDimExprGet(ctx, 1));
  MlirValue ops[2] = {a, b};
  return pbcBuildAffineApply(before, mlirAffineMapGet(ctx, 2, 0, 1, &sum), ops, 2,
                             mlirOperationGetLocation(before));
}

/* Loop l of the nest runs over rows [t0, t0 + rows): its trip becomes
 * `rows`, and its index, wherever used, t0 + index. */
static void restrictLoop(MlirOperation nest, int l, long long rows, MlirValue t0) {
  MlirOperation band[PBC_MAX_BAND];
  pbcLoopBand(nest, band, PBC_MAX_BAND);
  MlirContext ctx = mlirOperationGetContext(nest);
  mlirOperationSetAttributeByName(band[l], str("upperBoundMap"),
                                  mlirAffineMapAttrGet(mlirAffineMapConstantGet(ctx, rows)));
  MlirValue iv = pbcLoopIv(band[l]);
  MlirValue row = applySum(mlirBlockGetFirstOperation(pbcLoopBody(band[l])), t0, iv);
  MlirOperation apply = mlirOpResultGetOwner(row);
  mlirValueReplaceAllUsesExcept(iv, row, 1, &apply);
}

/* Accesses of X in the nest go to the private buffer xp, whose row 0 is
 * X's row t0 along d: subscript d becomes (subscript d) - t0. */
static void rebase(MlirOperation nest, MlirValue x, MlirValue xp, int d, MlirValue t0) {
  MlirOperation band[PBC_MAX_BAND];
  int depth = pbcLoopBand(nest, band, PBC_MAX_BAND);
  MlirContext ctx = mlirOperationGetContext(nest);
  for (MlirOperation op = mlirBlockGetFirstOperation(pbcLoopBody(band[depth - 1]));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    bool load = pbcOpIsA(op, "affine.load"), store = pbcOpIsA(op, "affine.store");
    int m = store ? 1 : 0; /* the memref's operand position */
    if ((!load && !store) || mlirOperationGetOperand(op, m).ptr != x.ptr)
      continue;
    MlirAffineMap map = mlirAffineMapAttrGetValue(mlirOperationGetAttributeByName(op, str("map")));
    intptr_t dims = mlirAffineMapGetNumDims(map), syms = mlirAffineMapGetNumSymbols(map);
    intptr_t results = mlirAffineMapGetNumResults(map);
    MlirAffineExpr exprs[PBC_MAX_RANK];
    for (intptr_t r = 0; r < results; ++r)
      exprs[r] = mlirAffineMapGetResult(map, r);
    exprs[d] =
        mlirAffineAddExprGet(exprs[d], mlirAffineMulExprGet(mlirAffineDimExprGet(ctx, dims),
                                                            mlirAffineConstantExprGet(ctx, -1)));
    MlirAffineMap shifted = mlirAffineMapGet(ctx, dims + 1, syms, results, exprs);
    /* Operands: [value,] memref, dims..., t0, symbols... */
    MlirValue *ops = malloc(sizeof(MlirValue) * (size_t)(mlirOperationGetNumOperands(op) + 1));
    intptr_t n = 0;
    for (int i = 0; i < m; ++i)
      ops[n++] = mlirOperationGetOperand(op, i);
    ops[n++] = xp;
    for (intptr_t i = 0; i < dims; ++i)
      ops[n++] = mlirOperationGetOperand(op, m + 1 + i);
    ops[n++] = t0;
    for (intptr_t i = 0; i < syms; ++i)
      ops[n++] = mlirOperationGetOperand(op, m + 1 + dims + i);
    mlirOperationSetOperands(op, n, ops);
    free(ops);
    mlirOperationSetAttributeByName(op, str("map"), mlirAffineMapAttrGet(shifted));
  }
}

static MlirOperation cloneInto(MlirOperation nest, MlirOperation before) {
  MlirOperation c = mlirOperationClone(nest);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(before), before, c);
  return c;
}

/* The tile of the consumer's loop: the smallest power of two dividing the
 * trip whose halo is at most kMaxRedundancyPct of it; 0 if none (or the
 * whole loop). */
static long long chooseTile(long long trip, long long halo) {
  for (long long t = 1; t < trip; t *= 2)
    if (trip % t == 0 && halo * 100 <= t * kMaxRedundancyPct)
      return t;
  return 0;
}

static bool fuseInto(MlirOperation c, MlirOperation *ops, int nOps, int at, const State *st) {
  MlirOperation band[PBC_MAX_BAND];
  long long trip[PBC_MAX_BAND];
  int depth = simpleBand(c, band, trip);
  Stencil s;
  if (!depth || !findStencil(c, band, trip, depth, &s))
    return false;
  long long rows = trip[s.lc], tile = chooseTile(rows, s.halo);
  MlirType xt = mlirValueGetType(s.x);
  long long bytes = pbcElementBits(xt) / 8 * (tile + s.halo);
  for (intptr_t e = 0; e < mlirShapedTypeGetRank(xt); ++e)
    if (e != s.d)
      bytes *= mlirShapedTypeGetDimSize(xt, e);
  if (!tile || bytes > st->l2Bytes)
    return false;
  /* The producers: the nests before c that write X, back to X's alloc;
   * nests between must leave X and the producers' inputs alone. */
  MlirOperation prod[kMaxProducers];
  int lp[kMaxProducers], nProd = 0;
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
    if (nProd == kMaxProducers || !producerOf(op, &s, rows + s.halo, &lp[nProd]))
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

  /* for t0 = 0 to rows step tile { Xp = alloc; producers on rows
   * [t0, t0 + tile + halo) into Xp; consumer on rows [t0, t0 + tile); } */
  MlirLocation loc = mlirOperationGetLocation(c);
  MlirOperation tileLoop = pbcBuildAffineFor(c, rows, loc);
  pbcLoopSetStep(tileLoop, tile);
  MlirValue t0 = pbcLoopIv(tileLoop);
  MlirOperation end = mlirBlockGetTerminator(pbcLoopBody(tileLoop));
  int64_t shape[PBC_MAX_RANK];
  intptr_t rank = mlirShapedTypeGetRank(xt);
  for (intptr_t i = 0; i < rank; ++i)
    shape[i] = i == s.d ? tile + s.halo : mlirShapedTypeGetDimSize(xt, i);
  MlirType xpt = mlirMemRefTypeContiguousGet(mlirShapedTypeGetElementType(xt), rank, shape,
                                             mlirAttributeGetNull());
  MlirOperation alloc = pbcBuildAlloc(end, xpt, loc);
  MlirValue xp = mlirOperationGetResult(alloc, 0);
  for (int i = nProd - 1; i >= 0; --i) {
    MlirOperation p = cloneInto(prod[i], end);
    rebase(p, s.x, xp, s.d, t0); /* first: restrictLoop breaks the perfect band */
    restrictLoop(p, lp[i], tile + s.halo, t0);
  }
  MlirOperation cc = cloneInto(c, end);
  rebase(cc, s.x, xp, s.d, t0);
  restrictLoop(cc, s.lc, tile, t0);
  pbcBuildDealloc(end, xp, loc);
  MlirContext ctx = mlirOperationGetContext(c);
  /* The tile loop is the root nest now: not of one kind (its nests keep
   * theirs). */
  mlirOperationSetAttributeByName(tileLoop, str("pbc.kind"), mlirStringAttrGet(ctx, str("misc")));
  /* Parallel: the consumer's loop is, and each tile computes its own slice
   * into its own buffer (MLIR's dependence test cannot see that). */
  mlirOperationSetAttributeByName(tileLoop, str("pbc.parallel"), mlirUnitAttrGet(ctx));

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
        changed = fuseInto(ops[i], ops, n, i, state);
  }
  free(ops);
  return true;
}

static const PbcCPassSpec kSpec = {"pbc-fuse-slices", "func.func",
                                   "Slicing fusion of stencil consumers with private buffers", run,
                                   sizeof(State)};

MlirPass pbcCreateFuseSlicesPass(const char *options, char *err, size_t errLen) {
  static const char *const known[] = {"l2-bytes", NULL};
  if (!pbcPassOptionsCheck(options, known, err, errLen))
    return (MlirPass){NULL};
  State st = {.l2Bytes = pbcPassOptionInt(options, "l2-bytes", 1 << 20)};
  return pbcCPassCreate(&kSpec, &st);
}
