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
 * through a vector.broadcast. */
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

/* Rewrites the divisions in `loop`'s body (not in nested loops). */
static void rewriteLoop(MlirOperation loop) {
  MlirBlock body = pbcLoopBody(loop);
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);) {
    MlirOperation next = mlirOperationGetNextInBlock(op);
    MlirValue s;
    if (pbcOpIsA(op, "arith.divf") &&
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
