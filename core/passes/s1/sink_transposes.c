/* pbc-sink-transposes: moves the NHWC -> NCHW transposes that
 * pbc-channels-last puts after each convolution below the elementwise ops
 * and pads that read them (bias, batch norm, activation, residual add, the
 * next convolution's padding), so that
 * those run channels-last too and the transpose meets the next layer's
 * NCHW -> NHWC one, with which canonicalize cancels it.
 *
 * An elementwise linalg.generic G (parallel iterators only, one result, no
 * linalg.index, an init it doesn't read) with an input y = T(x) (T one of
 * those transposes, permutation P, y read through a permutation map)
 * becomes G' reading x directly, every other input of G that is a T(x')
 * with the same P likewise, and writing z' with z = T(z'): each of those
 * maps M becomes M'(d)[m] = M(d)[P^-1[m]] (the element of x that y's
 * element is), and G' then renumbers its loops so that it writes z' in
 * order (its output map the identity). Other inputs keep their elements
 * (their maps renumbered alike). Only T that read a whole tensor through a
 * permutation are taken: one an op broadcasts would grow, not move.
 * The transposes this pass makes carry the same mark (PBC_SINK_MARK), so
 * each moves on down the chain; transposes a frontend wrote are left to
 * its cost model (none yet). */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/op_list.h"
#include "passes/passes.h"
#include "passes/s1/layout.h"

enum { kMaxOperands = 16, kMaxRank = 8 };

/* The permutation of a marked transpose producing `v`, or 0. */
static int markedPermutation(MlirValue v, int64_t *perm) {
  if (!mlirValueIsAOpResult(v))
    return 0;
  MlirOperation t = mlirOpResultGetOwner(v);
  if (!pbcOpIsA(t, "linalg.transpose") || !pbcOpHasAttr(t, PBC_SINK_MARK))
    return 0;
  MlirAttribute p = mlirOperationGetAttributeByName(t, pbcStr("permutation"));
  int r = (int)mlirDenseArrayGetNumElements(p);
  if (r > kMaxRank)
    return 0;
  for (int i = 0; i < r; ++i)
    perm[i] = mlirDenseI64ArrayGetElement(p, i);
  return r;
}

static bool samePermutation(const int64_t *a, const int64_t *b, int r) {
  return memcmp(a, b, (size_t)r * sizeof(int64_t)) == 0;
}

typedef struct {
  MlirOperation op;
  int nIns, rank;
  MlirAffineMap maps[kMaxOperands];
  bool moved[kMaxOperands]; /* input read through a marked transpose */
  int64_t perm[kMaxRank];
} Plan;

static MlirWalkResult findIndex(MlirOperation op, void *data) {
  if (pbcOpIsA(op, "linalg.index")) {
    *(bool *)data = true;
    return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

static bool outputUnread(MlirOperation g, int nIns) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(g, 0));
  return !mlirValueIsNull(mlirBlockGetArgument(body, nIns)) &&
         mlirOpOperandIsNull(mlirValueGetFirstUse(mlirBlockGetArgument(body, nIns)));
}

static bool plan(Plan *p, MlirOperation g, MlirAttribute parallel) {
  memset(p, 0, sizeof(*p));
  p->op = g;
  MlirAttribute seg = mlirOperationGetAttributeByName(g, pbcStr("operandSegmentSizes"));
  MlirAttribute maps = mlirOperationGetAttributeByName(g, pbcStr("indexing_maps"));
  MlirAttribute iters = mlirOperationGetAttributeByName(g, pbcStr("iterator_types"));
  if (mlirAttributeIsNull(seg) || mlirAttributeIsNull(maps) || mlirAttributeIsNull(iters) ||
      mlirDenseI32ArrayGetElement(seg, 1) != 1 || mlirOperationGetNumResults(g) != 1)
    return false;
  p->nIns = mlirDenseI32ArrayGetElement(seg, 0);
  if (p->nIns + 1 > kMaxOperands)
    return false;
  for (intptr_t i = 0; i < mlirArrayAttrGetNumElements(iters); ++i) {
    if (!mlirAttributeEqual(mlirArrayAttrGetElement(iters, i), parallel))
      return false;
  }
  for (int i = 0; i <= p->nIns; ++i) {
    p->maps[i] = mlirAffineMapAttrGetValue(mlirArrayAttrGetElement(maps, i));
    if (mlirAffineMapGetNumResults(p->maps[i]) > kMaxRank)
      return false; /* (constant subscripts may outnumber the loops) */
  }
  MlirValue out = mlirOperationGetResult(g, 0);
  p->rank = (int)mlirShapedTypeGetRank(mlirValueGetType(out));
  if (p->rank > kMaxRank || !mlirAffineMapIsPermutation(p->maps[p->nIns]) ||
      !outputUnread(g, p->nIns))
    return false;
  bool index = false;
  mlirOperationWalk(g, findIndex, &index, MlirWalkPreOrder);
  if (index)
    return false;
  int found = 0;
  for (int i = 0; i < p->nIns; ++i) {
    int64_t perm[kMaxRank];
    int r = markedPermutation(mlirOperationGetOperand(g, i), perm);
    if (r == 0 || r != p->rank || !mlirAffineMapIsPermutation(p->maps[i]))
      continue;
    if (!found)
      memcpy(p->perm, perm, sizeof(perm));
    if (found && !samePermutation(perm, p->perm, r))
      continue;
    p->moved[i] = true;
    ++found;
  }
  return found > 0;
}

/* M'(d)[m] = M(d)[P^-1[m]]. */
static MlirAffineMap throughTranspose(MlirAffineMap m, const int64_t *perm, int r) {
  MlirAffineExpr res[kMaxRank];
  for (int i = 0; i < r; ++i)
    res[perm[i]] = mlirAffineMapGetResult(m, i);
  return mlirAffineMapGet(mlirAffineMapGetContext(m), mlirAffineMapGetNumDims(m), 0, r, res);
}

/* `m` with loop d_t renamed d'_{pos[t]}. */
static MlirAffineMap renumber(MlirAffineMap m, MlirAffineMap subst) {
  intptr_t n = mlirAffineMapGetNumResults(m);
  MlirAffineExpr res[kMaxRank];
  for (intptr_t i = 0; i < n; ++i)
    res[i] = mlirAffineExprCompose(mlirAffineMapGetResult(m, i), subst);
  return mlirAffineMapGet(mlirAffineMapGetContext(m), mlirAffineMapGetNumDims(subst), 0, n, res);
}

static void rewrite(Plan *p) {
  MlirOperation g = p->op;
  MlirContext ctx = mlirOperationGetContext(g);
  int r = p->rank;
  MlirValue operands[kMaxOperands];
  for (int i = 0; i < p->nIns; ++i) {
    MlirValue v = mlirOperationGetOperand(g, i);
    if (p->moved[i]) {
      operands[i] = mlirOperationGetOperand(mlirOpResultGetOwner(v), 0);
      p->maps[i] = throughTranspose(p->maps[i], p->perm, r);
    }
    else
      operands[i] = v;
  }
  p->maps[p->nIns] = throughTranspose(p->maps[p->nIns], p->perm, r);
  /* The output map is now d -> (d_s0, ..., d_s(r-1)): loop s_m becomes loop
   * m (d_t -> d'_pos[t], pos[s_m] = m), the output map the identity. */
  MlirAffineExpr subst[kMaxRank];
  for (int m = 0; m < r; ++m) {
    int t = (int)mlirAffineDimExprGetPosition(mlirAffineMapGetResult(p->maps[p->nIns], m));
    subst[t] = mlirAffineDimExprGet(ctx, m);
  }
  MlirAffineMap substMap = mlirAffineMapGet(ctx, r, 0, r, subst);
  MlirAttribute maps[kMaxOperands];
  for (int i = 0; i <= p->nIns; ++i)
    maps[i] = mlirAffineMapAttrGet(renumber(p->maps[i], substMap));
  /* z'.dim[m] = z.dim[P^-1[m]]. */
  MlirType zt = mlirValueGetType(mlirOperationGetResult(g, 0));
  int64_t shape[kMaxRank];
  for (int i = 0; i < r; ++i)
    shape[p->perm[i]] = mlirShapedTypeGetDimSize(zt, i);
  MlirType zpt = mlirRankedTensorTypeGet(r, shape, mlirShapedTypeGetElementType(zt),
                                         mlirAttributeGetNull());
  operands[p->nIns] =
      mlirOperationGetResult(pbcBuildOp(g, "tensor.empty", 0, NULL, zpt, 0, NULL), 0);
  MlirRegion region = mlirRegionCreate();
  mlirRegionTakeBody(region, mlirOperationGetRegion(g, 0));
  MlirOperation moved = pbcBuildLinalgGeneric(
      g, p->nIns, operands, zpt, mlirArrayAttrGet(ctx, p->nIns + 1, maps),
      mlirOperationGetAttributeByName(g, pbcStr("iterator_types")), region);
  MlirValue back = pbcBuildTranspose(g, mlirOperationGetResult(moved, 0), p->perm, r, true);
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(g, 0), back);
  mlirOperationDestroy(g);
}

/* A value the pad's body yields that doesn't depend on the position. */
static bool padValueConstant(MlirOperation pad) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(pad, 0));
  for (intptr_t i = 0; i < mlirBlockGetNumArguments(body); ++i)
    if (!mlirOpOperandIsNull(mlirValueGetFirstUse(mlirBlockGetArgument(body, i))))
      return false;
  return true;
}

/* tensor.pad of T(x) (static amounts, a constant value) -> T(pad of x),
 * amount low'[P[i]] = low[i]. */
static bool sinkThroughPad(MlirOperation pad) {
  int64_t perm[kMaxRank];
  MlirValue y = mlirOperationGetOperand(pad, 0);
  int r = markedPermutation(y, perm);
  if (!r || mlirOperationGetNumOperands(pad) != 1 || !padValueConstant(pad))
    return false;
  MlirContext ctx = mlirOperationGetContext(pad);
  static const char *const kAmounts[2] = {"static_low", "static_high"};
  MlirNamedAttribute attrs[4];
  int n = 0;
  for (int k = 0; k < 2; ++k) {
    MlirAttribute a = mlirOperationGetAttributeByName(pad, pbcStr(kAmounts[k]));
    int64_t moved[kMaxRank];
    for (int i = 0; i < r; ++i)
      moved[perm[i]] = mlirDenseI64ArrayGetElement(a, i);
    attrs[n++] = pbcNamedAttr(ctx, kAmounts[k], mlirDenseI64ArrayGet(ctx, r, moved));
  }
  int32_t segments[3] = {1, 0, 0};
  attrs[n++] = pbcNamedAttr(ctx, "operandSegmentSizes", mlirDenseI32ArrayGet(ctx, 3, segments));
  MlirAttribute nofold = mlirOperationGetAttributeByName(pad, pbcStr("nofold"));
  if (!mlirAttributeIsNull(nofold))
    attrs[n++] = pbcNamedAttr(ctx, "nofold", nofold);
  MlirValue x = mlirOperationGetOperand(mlirOpResultGetOwner(y), 0);
  /* The padded x is the padded y's shape with T undone. */
  MlirType yt = mlirValueGetType(mlirOperationGetResult(pad, 0));
  int64_t shape[kMaxRank];
  for (int i = 0; i < r; ++i)
    shape[perm[i]] = mlirShapedTypeGetDimSize(yt, i);
  MlirType xt = mlirRankedTensorTypeGet(r, shape, mlirShapedTypeGetElementType(yt),
                                        mlirAttributeGetNull());
  MlirOperationState st = mlirOperationStateGet(pbcStr("tensor.pad"), mlirOperationGetLocation(pad));
  mlirOperationStateAddOperands(&st, 1, &x);
  mlirOperationStateAddResults(&st, 1, &xt);
  mlirOperationStateAddAttributes(&st, n, attrs);
  MlirRegion region = mlirRegionCreate();
  mlirRegionTakeBody(region, mlirOperationGetRegion(pad, 0));
  mlirOperationStateAddOwnedRegions(&st, 1, &region);
  MlirOperation padded = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(pad), pad, padded);
  MlirValue back = pbcBuildTranspose(pad, mlirOperationGetResult(padded, 0), perm, r, true);
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(pad, 0), back);
  mlirOperationDestroy(pad);
  return true;
}

static MlirWalkResult collectMovable(MlirOperation op, void *data) {
  if (pbcOpIsA(op, "linalg.generic") || pbcOpIsA(op, "tensor.pad"))
    pbcOpListPush(data, op);
  return MlirWalkResultAdvance;
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  MlirAttribute parallel = pbcLinalgParallelIterator(mlirOperationGetContext(func));
  Plan *p = malloc(sizeof(Plan));
  /* In program order a transpose moved below one op reaches the next in
   * the same sweep; each rewrite moves one later, so the sweeps end. */
  for (bool changed = true; changed;) {
    changed = false;
    PbcOpList l = {0};
    mlirOperationWalk(func, collectMovable, &l, MlirWalkPreOrder);
    for (int i = 0; i < l.n; ++i) {
      if (pbcOpIsA(l.ops[i], "tensor.pad")) {
        changed |= sinkThroughPad(l.ops[i]);
      } else if (plan(p, l.ops[i], parallel)) {
        rewrite(p);
        changed = true;
      }
    }
    pbcOpListDestroy(&l);
  }
  free(p);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcSinkTransposesPass, "pbc-sink-transposes", "func.func",
                           "Move channels-last transposes below the elementwise ops after them",
                           run);
