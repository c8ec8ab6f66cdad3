/* pbc-interleave: vectors across a small innermost dimension and its outer
 * neighbour (the PolyBlocks paper's "contiguity in intervals", §4.1). An
 * image's 3 channels innermost give no vector of their own, but the pixels'
 * (w, c) pairs are contiguous in memory: a vector of 16 floats holds 16/3
 * pixels. For a parallel loop W directly around a parallel loop C of Cn < lanes
 * iterations, with every access either
 *  - interleaved: [..., w + e, c] on a row-major memref whose last dimension
 *    is Cn (w and c nowhere else): read through a memref.collapse_shape of
 *    the last two dimensions at Cn*(w + e) + c, or
 *  - replicated: a read-only [..., c] that W doesn't move (a per-channel
 *    filter or bias): read from a copy whose last dimension repeats the Cn
 *    values V times,
 * W steps by V = lanes / gcd(lanes, Cn) and C runs over V*Cn = lcm(lanes, Cn)
 * elements: the same subscripts now cover V pixels' channels contiguously, so
 * C is marked for pbc-vectorize (outer-loop vectorization when reductions are
 * inside, as in a depthwise convolution); the blur example's 5-tap stencils
 * are bound by memory bandwidth and gain nothing. A single channel (Cn = 1, a
 * grayscale image's trip-1 loop) is the same rewrite: C then covers V pixels
 * of W, which ran scalar before. pbc-tile leaves such nests to this pass
 * (interleave.h): its register tile along c alone gives 2-, 4- or 8-lane
 * vectors. */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/marks.h"
#include "passes/s3/vectorization/interleave.h"
#include "pbc/ir_build.h"
#include "passes/passes.h"

typedef struct {
  int vectorBits;
} State;

#define MAX_ACC 64

typedef enum { INTERLEAVED, REPLICATED } Role;

typedef struct {
  MlirOperation w, c;
  long long cn, v;
  PbcAccess acc[MAX_ACC];
  Role role[MAX_ACC];
  int n;
  bool ok;
} Plan;


static MlirWalkResult gather(MlirOperation op, void *data) {
  Plan *p = data;
  PbcAccess acc;
  if (pbcAccessGet(op, &acc)) {
    if (p->n == MAX_ACC || acc.lanes)
      p->ok = false;
    else
      p->acc[p->n++] = acc;
  } else if (pbcOpIsA(op, "affine.load") || pbcOpIsA(op, "affine.store") ||
             pbcOpIsA(op, "memref.load") || pbcOpIsA(op, "memref.store") ||
             pbcOpIsA(op, "affine.parallel") || pbcOpIsA(op, "affine.if")) {
    p->ok = false;
  }
  return MlirWalkResultAdvance;
}

static bool writtenIn(const Plan *p, MlirValue memref) {
  for (int i = 0; i < p->n; ++i)
    if (p->acc[i].isWrite && pbcMemrefsMayAlias(p->acc[i].memref, memref))
      return true;
  return false;
}

/* Classifies one access; false if it fits neither role. */
static bool classify(Plan *p, int i) {
  const PbcAccess *a = &p->acc[i];
  MlirValue wIv = pbcLoopIv(p->w), cIv = pbcLoopIv(p->c);
  MlirType t = mlirValueGetType(a->memref);
  int r = a->rank;
  if (r < 1 || !pbcMemrefHasIdentityLayout(t) || !mlirShapedTypeHasStaticShape(t) ||
      mlirShapedTypeGetDimSize(t, r - 1) != p->cn)
    return false;
  const PbcLinearForm *last = &a->subscripts[r - 1];
  if (last->nTerms != 1 || last->constant != 0 || pbcLinearCoeff(last, cIv) != 1)
    return false;
  for (int d = 0; d < r - 1; ++d)
    if (pbcLinearCoeff(&a->subscripts[d], cIv))
      return false;
  bool wElsewhere = false;
  for (int d = 0; d < r - 2; ++d)
    wElsewhere |= pbcLinearCoeff(&a->subscripts[d], wIv) != 0;
  long long wCoeff = r >= 2 ? pbcLinearCoeff(&a->subscripts[r - 2], wIv) : 0;
  if (wElsewhere)
    return false;
  if (wCoeff == 1) {
    p->role[i] = INTERLEAVED;
    return true;
  }
  if (wCoeff == 0 && !a->isWrite && !writtenIn(p, a->memref)) {
    p->role[i] = REPLICATED;
    return true;
  }
  return false;
}

static bool plan(Plan *p, MlirOperation w, int lanesBits) {
  memset(p, 0, sizeof(*p));
  p->w = w;
  p->c = pbcOnlyLoopIn(w);
  if (mlirOperationIsNull(p->c) || pbcLoopStep(w) != 1 || pbcLoopStep(p->c) != 1)
    return false;
  long long wTrip = pbcLoopZeroBasedTrip(w);
  p->cn = pbcLoopZeroBasedTrip(p->c);
  if (wTrip <= 0 || p->cn < 1)
    return false;
  p->ok = true;
  mlirOperationWalk(p->c, gather, p, MlirWalkPreOrder);
  if (!p->ok || p->n == 0)
    return false;
  int bits = 0;
  for (int i = 0; i < p->n; ++i) {
    int b = pbcElementBits(mlirValueGetType(p->acc[i].memref));
    bits = b > bits ? b : bits;
  }
  if (bits < 8)
    return false;
  long long lanes = lanesBits / bits;
  /* Only where C can't fill vectors itself. */
  if (lanes < 2 || pbcVectorLanes(lanesBits, bits, p->cn) == lanes)
    return false;
  long long g = lanes, b = p->cn;
  while (b) {
    long long t = g % b;
    g = b;
    b = t;
  }
  p->v = lanes / g;
  if (wTrip % p->v || !pbcIvOnlySubscripts(pbcLoopIv(w)) || !pbcIvOnlySubscripts(pbcLoopIv(p->c)))
    return false;
  bool interleaved = false;
  for (int i = 0; i < p->n; ++i) {
    if (!classify(p, i))
      return false;
    interleaved |= p->role[i] == INTERLEAVED;
  }
  /* MLIR's dependence test last: it is the expensive one. */
  return interleaved && pbcLoopIsParallel(w) && pbcLoopIsParallel(p->c);
}

bool pbcInterleaveApplies(MlirOperation w, int vectorBits) {
  Plan *p = malloc(sizeof(Plan));
  bool ok = plan(p, w, vectorBits);
  free(p);
  return ok;
}

/* A copy of `memref` whose last dimension holds its Cn values `times` times
 * (R[..., g] = M[..., g mod Cn]), allocated before `at` and freed after it. */
static MlirValue replicate(MlirValue memref, long long times, MlirOperation at) {
  MlirType t = mlirValueGetType(memref);
  MlirContext ctx = mlirTypeGetContext(t);
  MlirLocation loc = mlirOperationGetLocation(at);
  int r = (int)mlirShapedTypeGetRank(t);
  int64_t shape[PBC_MAX_RANK];
  for (int d = 0; d < r; ++d)
    shape[d] = mlirShapedTypeGetDimSize(t, d);
  long long cn = shape[r - 1];
  shape[r - 1] *= times;
  MlirType rt = mlirMemRefTypeGet(mlirShapedTypeGetElementType(t), r, shape, mlirAttributeGetNull(),
                                  mlirMemRefTypeGetMemorySpace(t));
  MlirValue buf = mlirOperationGetResult(pbcBuildAlloc(at, rt, loc), 0);
  MlirValue ivs[PBC_MAX_RANK], src[PBC_MAX_RANK];
  MlirOperation end;
  MlirOperation nest = pbcBuildAffineNest(at, shape, r, loc, ivs, &end);
  pbcOpSetUnitAttr(nest, PBC_MARK_COPY);
  pbcNestSetKind(nest, "pointwise");
  memcpy(src, ivs, sizeof(MlirValue) * (size_t)r);
  MlirAffineExpr mod =
      mlirAffineModExprGet(mlirAffineDimExprGet(ctx, 0), mlirAffineConstantExprGet(ctx, cn));
  src[r - 1] = pbcBuildAffineApply(end, mlirAffineMapGet(ctx, 1, 0, 1, &mod), &ivs[r - 1], 1, loc);
  MlirOperation load = pbcBuildAffineLoad(end, memref, src, r, loc);
  pbcBuildAffineStore(end, mlirOperationGetResult(load, 0), buf, ivs, r, loc);
  pbcBuildDealloc(mlirOperationGetNextInBlock(at), buf, loc);
  return buf;
}

/* Subscripts [..., s(r-2), s(r-1)] -> [..., Cn * s(r-2) + s(r-1)]. */
static void collapseSubscripts(MlirOperation op, long long cn) {
  MlirAttribute attr = mlirOperationGetAttributeByName(op, pbcStr("map"));
  MlirAffineMap map = mlirAffineMapAttrGetValue(attr);
  MlirContext ctx = mlirAffineMapGetContext(map);
  intptr_t n = mlirAffineMapGetNumResults(map);
  MlirAffineExpr res[PBC_MAX_RANK];
  for (intptr_t i = 0; i < n - 1; ++i)
    res[i] = mlirAffineMapGetResult(map, i);
  res[n - 2] =
      mlirAffineAddExprGet(mlirAffineMulExprGet(res[n - 2], mlirAffineConstantExprGet(ctx, cn)),
                           mlirAffineMapGetResult(map, n - 1));
  MlirAffineMap collapsed = mlirAffineMapGet(ctx, mlirAffineMapGetNumDims(map),
                                             mlirAffineMapGetNumSymbols(map), n - 1, res);
  mlirOperationSetAttributeByName(op, pbcStr("map"), mlirAffineMapAttrGet(collapsed));
}

static void rewrite(Plan *p) {
  /* One view or copy per memref and role (a memref may have both roles). */
  MlirValue from[MAX_ACC], to[MAX_ACC];
  Role roleOf[MAX_ACC];
  int nMapped = 0;
  for (int i = 0; i < p->n; ++i) {
    const PbcAccess *a = &p->acc[i];
    MlirValue repl = {NULL};
    for (int k = 0; k < nMapped; ++k)
      if (mlirValueEqual(from[k], a->memref) && roleOf[k] == p->role[i])
        repl = to[k];
    if (mlirValueIsNull(repl)) {
      bool copy = p->role[i] == REPLICATED;
      MlirOperation at = pbcMemrefHoistPoint(p->w, a->memref, copy);
      repl = copy ? replicate(a->memref, p->v, at) : pbcBuildCollapseLastTwo(at, a->memref);
      from[nMapped] = a->memref;
      roleOf[nMapped] = p->role[i];
      to[nMapped++] = repl;
    }
    mlirOperationSetOperand(a->op, a->isWrite ? 1 : 0, repl);
    if (p->role[i] == INTERLEAVED)
      collapseSubscripts(a->op, p->cn);
  }
  MlirContext ctx = mlirOperationGetContext(p->c);
  pbcLoopSetStep(p->w, p->v);
  mlirOperationSetAttributeByName(
      p->c, pbcStr("upperBoundMap"),
      mlirAffineMapAttrGet(mlirAffineMapConstantGet(ctx, p->v * p->cn)));
  pbcOpSetUnitAttr(p->c, PBC_MARK_VECTORIZE);
}

static bool run(MlirOperation func, void *state) {
  const State *st = state;
  int n;
  MlirOperation *loops = pbcLoopsInnerFirstAll(func, &n);
  Plan *p = malloc(sizeof(Plan));
  /* Inner first: a rewritten W's C is marked and no longer a candidate's W. */
  for (int i = 0; i < n; ++i)
    if (!pbcOpHasAttr(loops[i], PBC_MARK_VECTORIZE) && plan(p, loops[i], st->vectorBits))
      rewrite(p);
  free(p);
  free(loops);
  return true;
}

PBC_C_PASS_WITH_VECTOR_BITS(pbcInterleavePass, "pbc-interleave", "func.func",
                            "Vectorize a small innermost dimension with its neighbour", run);
