/* pbc-fold-constant-transposes: a linalg.transpose of a constant becomes the
 * transposed constant, computed at compile time.
 *
 * Why: torch-mlir's FX importer lowers a linear layer's `aten.t` of its
 * weight (a dense_resource constant) to a linalg.transpose, and MLIR's
 * canonicalizer folds neither that nor one of a resource blob: every call
 * transposed every weight matrix again (pbc-channels-last moves
 * convolution filters at compile time for the same reason). */
#include "mlir-c/BuiltinAttributes.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/op_list.h"
#include "passes/passes.h"
#include "passes/s1/layout.h"

enum { kMaxRank = 8 };

static void fold(MlirOperation transpose) {
  MlirAttribute perm = mlirOperationGetAttributeByName(transpose, pbcStr("permutation"));
  if (mlirAttributeIsNull(perm) || !mlirAttributeIsADenseI64Array(perm) ||
      mlirOperationGetNumOperands(transpose) < 1 || mlirOperationGetNumResults(transpose) != 1)
    return;
  int rank = (int)mlirDenseArrayGetNumElements(perm);
  if (rank > kMaxRank)
    return;
  int64_t p[kMaxRank];
  for (int d = 0; d < rank; ++d)
    p[d] = mlirDenseI64ArrayGetElement(perm, d);
  MlirValue folded =
      pbcTransposedConstant(transpose, mlirOperationGetOperand(transpose, 0), p, rank);
  if (mlirValueIsNull(folded))
    return;
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(transpose, 0), folded);
  mlirOperationDestroy(transpose);
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  pbcOpListRewriteEach(func, "linalg.transpose", fold);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcFoldConstantTransposesPass, "pbc-fold-constant-transposes",
                           "func.func", "linalg.transpose of a constant computed at compile time",
                           run);
