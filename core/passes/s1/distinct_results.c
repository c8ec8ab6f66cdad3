/* pbc-distinct-results: a function that returns one tensor value in two
 * result positions returns a copy in the later ones. MLIR 22's
 * buffer-results-to-out-params (S1) crashes on a buffer returned twice, and
 * a program returns one value twice easily (`return %y, %t` where %t, a
 * transpose by the identity, folds to %y). Each out-param must be written
 * anyway, so the copy is work the C interface asks for. Runs on tensors,
 * after canonicalization and before bufferization (alloc_tensor with a
 * `copy` operand becomes an allocation and a memref.copy). */
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "passes/passes.h"

static void copyRepeats(MlirOperation ret) {
  MlirContext ctx = mlirOperationGetContext(ret);
  int32_t segments[3] = {0, 1, 0}; /* dynamic sizes, copy, size_hint */
  MlirNamedAttribute seg = mlirNamedAttributeGet(
      mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("operandSegmentSizes")),
      mlirDenseI32ArrayGet(ctx, 3, segments));
  intptr_t n = mlirOperationGetNumOperands(ret);
  for (intptr_t i = 1; i < n; ++i) {
    MlirValue v = mlirOperationGetOperand(ret, i);
    bool repeated = false;
    for (intptr_t j = 0; j < i && !repeated; ++j)
      repeated = mlirValueEqual(v, mlirOperationGetOperand(ret, j));
    if (!repeated || !mlirTypeIsATensor(mlirValueGetType(v)))
      continue;
    MlirOperation copy =
        pbcBuildOp(ret, "bufferization.alloc_tensor", 1, &v, mlirValueGetType(v), 1, &seg);
    mlirOperationSetOperand(ret, i, mlirOperationGetResult(copy, 0));
  }
}

static MlirWalkResult visit(MlirOperation op, void *data) {
  (void)data;
  if (pbcOpIsA(op, "func.return"))
    copyRepeats(op);
  return MlirWalkResultAdvance;
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  mlirOperationWalk(func, visit, NULL, MlirWalkPreOrder);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcDistinctResultsPass, "pbc-distinct-results", "func.func",
                           "A tensor returned in several result positions is copied", run);
