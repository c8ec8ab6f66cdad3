/* Loop helpers: an affine.for's iv, body, step, trip count and bounds,
 * bands of perfectly nested loops, loops in order, copy nests (see pbc/loops.h). */
#include "pbc/loops.h"

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

MlirOperation pbcCopyNestOf(MlirOperation op) {
  MlirOperation nest = {NULL};
  for (MlirOperation p = mlirOperationGetParentOperation(op); !mlirOperationIsNull(p);
       p = mlirOperationGetParentOperation(p))
    if (pbcOpHasAttr(p, PBC_MARK_COPY)) /* an affine.for, or parallel once parallelized */
      nest = p;
  return nest;
}

bool pbcOpIsInCopyNest(MlirOperation op) { return !mlirOperationIsNull(pbcCopyNestOf(op)); }

bool pbcOpFollowsInBlock(MlirOperation op, MlirOperation anchor) {
  for (MlirOperation o = mlirOperationGetNextInBlock(anchor); !mlirOperationIsNull(o);
       o = mlirOperationGetNextInBlock(o))
    if (mlirOperationEqual(o, op))
      return true;
  return false;
}

MlirValue pbcLoopIv(MlirOperation forOp) { return mlirBlockGetArgument(pbcLoopBody(forOp), 0); }

MlirBlock pbcLoopBody(MlirOperation forOp) {
  return mlirRegionGetFirstBlock(mlirOperationGetRegion(forOp, 0));
}

bool pbcLoopRunsAtLeastOnce(MlirOperation forOp) {
  return pbcOpIsA(forOp, "affine.for") && pbcExtAffineConstantTripCount(forOp) >= 1;
}

void pbcLoopSetStep(MlirOperation forOp, long long step) {
  MlirContext ctx = mlirOperationGetContext(forOp);
  mlirOperationSetInherentAttributeByName(forOp, pbcStr("step"),
                                          mlirIntegerAttrGet(mlirIndexTypeGet(ctx), step));
}

void pbcLoopSetUpperBound(MlirOperation forOp, long long ub) {
  MlirContext ctx = mlirOperationGetContext(forOp);
  mlirOperationSetAttributeByName(forOp, pbcStr("upperBoundMap"),
                                  mlirAffineMapAttrGet(mlirAffineMapConstantGet(ctx, ub)));
}

void pbcLoopSetLowerBound(MlirOperation forOp, long long lb) {
  MlirContext ctx = mlirOperationGetContext(forOp);
  mlirOperationSetAttributeByName(forOp, pbcStr("lowerBoundMap"),
                                  mlirAffineMapAttrGet(mlirAffineMapConstantGet(ctx, lb)));
}

static bool mapHasInputs(MlirOperation forOp, const char *map) {
  return mlirAffineMapGetNumInputs(
             mlirAffineMapAttrGetValue(mlirOperationGetAttributeByName(forOp, pbcStr(map)))) != 0;
}

bool pbcLoopHasBoundOperands(MlirOperation forOp) {
  return mapHasInputs(forOp, "lowerBoundMap") || mapHasInputs(forOp, "upperBoundMap");
}

int pbcLoopIndexOf(MlirValue v, const MlirOperation loops[], int n) {
  for (int l = 0; l < n; ++l)
    if (mlirValueEqual(pbcLoopIv(loops[l]), v))
      return l;
  return -1;
}

bool pbcOpIsInside(MlirOperation op, MlirOperation ancestor) {
  for (; !mlirOperationIsNull(op); op = mlirOperationGetParentOperation(op))
    if (mlirOperationEqual(op, ancestor))
      return true;
  return false;
}

bool pbcValueIsDefinedInside(MlirValue v, MlirOperation op) {
  MlirOperation def;
  if (mlirValueIsABlockArgument(v))
    def = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v));
  else
    def = mlirOpResultGetOwner(v);
  return pbcOpIsInside(def, op);
}

MlirOperation pbcOnlyLoopIn(MlirOperation forOp) {
  MlirOperation first = mlirBlockGetFirstOperation(pbcLoopBody(forOp));
  if (mlirOperationIsNull(first) || !pbcOpIsA(first, "affine.for"))
    return (MlirOperation){NULL};
  MlirOperation next = mlirOperationGetNextInBlock(first);
  if (!pbcOpIsA(next, "affine.yield") || mlirOperationGetNumOperands(next) != 0)
    return (MlirOperation){NULL};
  return first;
}

int pbcLoopBand(MlirOperation root, MlirOperation *band, int max) {
  int n = 0;
  for (MlirOperation l = root; !mlirOperationIsNull(l) && n < max; l = pbcOnlyLoopIn(l))
    band[n++] = l;
  return n;
}

typedef struct {
  MlirOperation *loops;
  int n, max;
} LoopList;

static MlirWalkResult appendLoop(MlirOperation op, void *data) {
  LoopList *l = data;
  if (pbcOpIsA(op, "affine.for") && l->n < l->max)
    l->loops[l->n++] = op;
  return MlirWalkResultAdvance;
}

bool pbcLoopBodyIsFlat(MlirOperation loop) {
  for (MlirOperation op = mlirBlockGetFirstOperation(pbcLoopBody(loop)); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (mlirOperationGetNumRegions(op))
      return false;
  return true;
}

int pbcLoopsInnerFirst(MlirOperation root, MlirOperation *loops, int max) {
  LoopList l = {loops, 0, max};
  mlirOperationWalk(root, appendLoop, &l, MlirWalkPostOrder);
  return l.n;
}

static MlirWalkResult countLoop(MlirOperation op, void *data) {
  *(int *)data += pbcOpIsA(op, "affine.for");
  return MlirWalkResultAdvance;
}

MlirOperation *pbcLoopsInnerFirstAll(MlirOperation root, int *n) {
  int count = 0;
  mlirOperationWalk(root, countLoop, &count, MlirWalkPostOrder);
  MlirOperation *loops = calloc((size_t)(count ? count : 1), sizeof(MlirOperation));
  *n = pbcLoopsInnerFirst(root, loops, count);
  return loops;
}
