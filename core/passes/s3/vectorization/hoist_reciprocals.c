/* pbc-hoist-reciprocals: a division by a value its loop does not change (a
 * softmax's row sum, a norm's scale) becomes a multiplication by the
 * reciprocal, computed once before the loop. A vector divide issues about
 * once per 5 cycles where a multiply issues twice a cycle, so the loop ran
 * at the divider's pace (softmax 64 x 1000: the division loop was a quarter
 * of the time). PyTorch's and oneDNN's softmax divide the same way; the
 * quotient may differ from a true division by an ulp, like pbc-fp-contract's
 * fused multiply-adds. The divisor qualifies when it is defined outside the
 * innermost loop, or is an affine.load there at a subscript that does not
 * move with the loop from a memref the loop does not write, in a loop that
 * runs at least once (the load is cloned before the loop), either one maybe
 * through a vector.broadcast.
 *
 * A quotient that reaches a rounding, a float-to-integer conversion, a
 * comparison, a remainder (or, conservatively, an integer power) in the
 * loop body keeps its division: there an ulp is a whole step
 * (QuantizeLinear's round(x / scale): x = 2.475, scale = 0.05 rounds to 49
 * divided but to 50 multiplied by 20), so the result must be the
 * specification's division, exactly. */
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "passes/passes.h"

#include <stdlib.h>

static bool definedOutside(MlirValue v, MlirOperation loop) {
  return !pbcValueIsDefinedInside(v, loop);
}

/* The scalar the divisor is (or broadcasts), computed before `loop`, or a
 * null value if it changes in the loop. */
static MlirValue invariantBefore(MlirValue divisor, MlirOperation loop) {
  MlirValue s = divisor;
  if (!mlirValueIsABlockArgument(s) && pbcOpIsA(mlirOpResultGetOwner(s), "vector.broadcast"))
    s = mlirOperationGetOperand(mlirOpResultGetOwner(s), 0);
  if (!mlirTypeIsAFloat(mlirValueGetType(s)))
    return (MlirValue){NULL};
  if (definedOutside(s, loop))
    return s;
  if (mlirValueIsABlockArgument(s))
    return (MlirValue){NULL};
  MlirOperation load = mlirOpResultGetOwner(s);
  PbcAccess a;
  if (!pbcOpIsA(load, "affine.load") || !pbcLoopRunsAtLeastOnce(loop) || !pbcAccessGet(load, &a) ||
      pbcAccessStrideAlong(&a, loop) != PBC_STRIDE_INVARIANT || pbcMayWriteMemref(loop, a.memref))
    return (MlirValue){NULL};
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(load); ++i)
    if (!definedOutside(mlirOperationGetOperand(load, i), loop))
      return (MlirValue){NULL};
  MlirOperation hoisted = mlirOperationClone(load);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(loop), loop, hoisted);
  return mlirOperationGetResult(hoisted, 0);
}

static bool isDiscontinuous(MlirOperation op) {
  static const char *const names[] = {"math.roundeven", "math.round",   "math.floor",
                                      "math.ceil",      "math.trunc",   "arith.fptosi",
                                      "arith.fptoui",   "arith.cmpf",   "arith.remf",
                                      "math.fpowi"};
  for (size_t i = 0; i < sizeof names / sizeof *names; ++i)
    if (pbcOpIsA(op, names[i]))
      return true;
  return false;
}

/* Whether `v` flows, through the ops of `body`, into an op where an ulp
 * changes the result by more than an ulp. Uses outside `body` (a store) end
 * the walk; `*budget` bounds the uses it visits (spent: assumed it does). */
static bool reachesDiscontinuity(MlirValue v, MlirBlock body, int *budget) {
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    if (--*budget < 0)
      return true;
    if (!mlirBlockEqual(mlirOperationGetBlock(user), body))
      continue;
    if (isDiscontinuous(user))
      return true;
    for (intptr_t r = 0; r < mlirOperationGetNumResults(user); ++r)
      if (reachesDiscontinuity(mlirOperationGetResult(user, r), body, budget))
        return true;
  }
  return false;
}

/* Rewrites the divisions in `loop`'s body (not in nested loops). */
static void rewriteLoop(MlirOperation loop) {
  MlirBlock body = pbcLoopBody(loop);
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);) {
    MlirOperation next = mlirOperationGetNextInBlock(op);
    MlirValue s;
    int budget = 256;
    if (pbcOpIsA(op, "arith.divf") &&
        !reachesDiscontinuity(mlirOperationGetResult(op, 0), body, &budget) &&
        !mlirValueIsNull(s = invariantBefore(mlirOperationGetOperand(op, 1), loop))) {
      MlirType t = mlirValueGetType(s),
               resultType = mlirValueGetType(mlirOperationGetResult(op, 0));
      MlirContext ctx = mlirTypeGetContext(t);
      MlirNamedAttribute one =
          mlirNamedAttributeGet(mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("value")),
                                mlirFloatAttrDoubleGet(ctx, t, 1.0));
      MlirValue ops[2] = {
          mlirOperationGetResult(pbcBuildOp(loop, "arith.constant", 0, NULL, t, 1, &one), 0), s};
      MlirValue r = mlirOperationGetResult(pbcBuildOp(loop, "arith.divf", 2, ops, t, 0, NULL), 0);
      if (!mlirTypeEqual(resultType, t))
        r = mlirOperationGetResult(pbcBuildOp(op, "vector.broadcast", 1, &r, resultType, 0, NULL),
                                   0);
      MlirValue mul[2] = {mlirOperationGetOperand(op, 0), r};
      MlirOperation m = pbcBuildOp(op, "arith.mulf", 2, mul, resultType, 0, NULL);
      mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), mlirOperationGetResult(m, 0));
      mlirOperationDestroy(op);
    }
    op = next;
  }
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  int n;
  MlirOperation *loops = pbcLoopsInnerFirstAll(func, &n);
  for (int i = 0; i < n; ++i)
    if (pbcLoopBodyIsFlat(loops[i]))
      rewriteLoop(loops[i]);
  free(loops);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcHoistReciprocalsPass, "pbc-hoist-reciprocals", "func.func",
                           "Divisions by a loop-invariant value as multiplications by its "
                           "reciprocal, hoisted",
                           run);
