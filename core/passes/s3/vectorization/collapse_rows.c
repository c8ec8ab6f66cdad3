/* pbc-collapse-rows: a loop W directly around an innermost loop C, where
 * every access walks whole rows of a contiguous memref ([..., w, c] with
 * W running over the memref's dimension r-2 and C over its last, both from
 * 0 with step 1), becomes one loop over the rows' Wn*Cn elements, read and
 * written through views collapsing those two dimensions. The iterations run
 * in the same order (w*Cn + c is the position in memory), so the rewrite
 * needs no dependence test. Done where C alone can't fill vectors (a
 * 49 x 49 attention window: three vectors and a scalar element per row):
 * the collapsed loop is one run of whole vectors with at most one tail, and
 * applied again the nest above (16 windows of 49 x 49) becomes one loop of
 * 38,416 elements. LLVM otherwise unrolled such rows and expanded each into
 * a block of stores whose scheduling grew with the square of its size (one
 * zero fill of that shape took 2.5 s of code generation).
 * Accesses that use neither w nor c (a scalar operand) stay as they are;
 * any other access, or a use of w or c other than as such a subscript,
 * leaves the pair alone. Runs before pbc-interleave, which handles the
 * short rows this pass can't (a row that is not the memref's whole
 * dimension, a per-channel operand). */
#include <stdlib.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/marks.h"
#include "passes/passes.h"

typedef struct {
  int vectorBits;
} State;

#define MAX_ACC 64

typedef struct {
  MlirOperation w, c;
  long long wn, cn;
  PbcAccess acc[MAX_ACC];
  bool walks[MAX_ACC]; /* [..., w, c]; else uses neither */
  int n;
} Plan;

static bool isExactly(const PbcLinearForm *f, MlirValue iv) {
  return f->nTerms == 1 && f->constant == 0 && pbcLinearCoeff(f, iv) == 1;
}

/* True if the access walks the rows ([..., w, c] over whole dimensions of a
 * contiguous memref) or uses neither iv (set in *walks). */
static bool classify(const Plan *p, const PbcAccess *a, bool *walks) {
  MlirValue wIv = pbcLoopIv(p->w), cIv = pbcLoopIv(p->c);
  int r = a->rank;
  int uses = 0;
  for (int d = 0; d < r; ++d)
    uses += pbcLinearCoeff(&a->subscripts[d], wIv) != 0 || pbcLinearCoeff(&a->subscripts[d], cIv) != 0;
  if (uses == 0) {
    *walks = false;
    return true;
  }
  MlirType t = mlirValueGetType(a->memref);
  if (uses != 2 || r < 2 || a->lanes || !pbcMemrefHasIdentityLayout(t) ||
      !mlirShapedTypeHasStaticShape(t) || mlirShapedTypeGetDimSize(t, r - 1) != p->cn ||
      mlirShapedTypeGetDimSize(t, r - 2) != p->wn)
    return false;
  *walks = true;
  return isExactly(&a->subscripts[r - 2], wIv) && isExactly(&a->subscripts[r - 1], cIv);
}

static bool hasScheduleMark(MlirOperation loop) {
  static const char *const kMarks[] = {PBC_MARK_COPY, PBC_MARK_VECTORIZE, PBC_MARK_REGISTER_TILE,
                                       PBC_MARK_PACK_SITE, PBC_MARK_UNROLL_JAM};
  for (size_t i = 0; i < sizeof(kMarks) / sizeof(kMarks[0]); ++i)
    if (pbcOpHasAttr(loop, kMarks[i]))
      return true;
  return false;
}

static bool plan(Plan *p, MlirOperation w, int vectorBits) {
  p->w = w;
  p->c = pbcOnlyLoopIn(w);
  p->n = 0;
  if (mlirOperationIsNull(p->c) || !pbcLoopBodyIsFlat(p->c) || hasScheduleMark(w) ||
      hasScheduleMark(p->c) || mlirOperationGetNumResults(w) || mlirOperationGetNumResults(p->c))
    return false;
  p->wn = pbcLoopZeroBasedTrip(w);
  p->cn = pbcLoopZeroBasedTrip(p->c);
  if (p->wn < 2 || p->cn < 1 || !pbcIvOnlySubscripts(pbcLoopIv(w)) ||
      !pbcIvOnlySubscripts(pbcLoopIv(p->c)) ||
      !pbcGatherAccesses(p->c, p->acc, MAX_ACC, &p->n) || p->n == 0)
    return false;
  int bits = 0;
  bool anyWalks = false;
  for (int i = 0; i < p->n; ++i) {
    if (!classify(p, &p->acc[i], &p->walks[i]))
      return false;
    int b = pbcElementBits(mlirValueGetType(p->acc[i].memref));
    bits = b > bits ? b : bits;
    anyWalks |= p->walks[i];
  }
  if (!anyWalks || bits < 8)
    return false;
  /* Only where C can't fill vectors itself. */
  int lanes = vectorBits / bits;
  return lanes >= 2 && pbcVectorLanes(vectorBits, bits, p->cn) < lanes;
}

/* Subscripts [..., w, c] -> [..., w]: W's iv then runs over both. */
static void dropLastSubscript(MlirOperation op) {
  MlirAffineMap map = mlirAffineMapAttrGetValue(mlirOperationGetAttributeByName(op, pbcStr("map")));
  intptr_t n = mlirAffineMapGetNumResults(map);
  MlirAffineExpr res[PBC_MAX_RANK];
  for (intptr_t i = 0; i < n - 1; ++i)
    res[i] = mlirAffineMapGetResult(map, i);
  MlirAffineMap shorter = mlirAffineMapGet(mlirAffineMapGetContext(map), mlirAffineMapGetNumDims(map),
                                           mlirAffineMapGetNumSymbols(map), n - 1, res);
  mlirOperationSetAttributeByName(op, pbcStr("map"), mlirAffineMapAttrGet(shorter));
}

static void rewrite(Plan *p) {
  MlirValue from[MAX_ACC], to[MAX_ACC];
  int nViews = 0;
  for (int i = 0; i < p->n; ++i) {
    const PbcAccess *a = &p->acc[i];
    if (!p->walks[i])
      continue;
    MlirValue view = {NULL};
    for (int k = 0; k < nViews; ++k)
      if (mlirValueEqual(from[k], a->memref))
        view = to[k];
    if (mlirValueIsNull(view)) {
      view = pbcBuildCollapseLastTwo(pbcMemrefHoistPoint(p->w, a->memref, false), a->memref);
      from[nViews] = a->memref;
      to[nViews++] = view;
    }
    mlirOperationSetOperand(a->op, a->isWrite ? 1 : 0, view);
    dropLastSubscript(a->op);
  }
  /* C's iv is now an unused operand of the maps: any value that dominates
   * them will do until canonicalize drops it. */
  mlirValueReplaceAllUsesOfWith(pbcLoopIv(p->c), pbcLoopIv(p->w));
  /* Independent iterations only if both loops' were. */
  if (pbcOpHasAttr(p->w, PBC_MARK_PARALLEL) && !pbcOpHasAttr(p->c, PBC_MARK_PARALLEL))
    mlirOperationRemoveAttributeByName(p->w, pbcStr(PBC_MARK_PARALLEL));
  pbcMoveBodyBefore(pbcLoopBody(p->c), p->c);
  mlirOperationDestroy(p->c);
  pbcLoopSetUpperBound(p->w, p->wn * p->cn);
}

static bool run(MlirOperation func, void *state) {
  const State *st = state;
  int n;
  MlirOperation *loops = pbcLoopsInnerFirstAll(func, &n);
  Plan *p = malloc(sizeof(Plan));
  /* Inner first: C comes before W in the list, so erasing it leaves the
   * loops still to visit intact, and W, now innermost, may merge with the
   * loop around it in turn. */
  for (int i = 0; i < n; ++i)
    if (plan(p, loops[i], st->vectorBits))
      rewrite(p);
  free(p);
  free(loops);
  return true;
}

PBC_C_PASS_WITH_VECTOR_BITS(pbcCollapseRowsPass, "pbc-collapse-rows", "func.func",
                            "Merge loops over whole contiguous rows into one loop", run);
