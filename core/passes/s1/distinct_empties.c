/* pbc-distinct-empties: a tensor.empty with several uses becomes one per
 * use, each placed just before its user. Canonicalization and CSE leave one
 * tensor.empty as the destination of every op of a shape, and MLIR 22's
 * eliminate-empty-tensors and one-shot-bufferize then take time about cubic
 * in the number of those ops (their alias and conflict analysis sees one
 * value written by all of them); a model with a few hundred same-shaped ops
 * spent seconds there. A tensor.empty has no contents, so one per use means
 * the same program: each destination was going to be a buffer of its own
 * anyway, since the ops overwrite each other's. */
#include <stdlib.h>

#include "pbc/c_pass.h"
#include "pbc/op_list.h"
#include "passes/passes.h"

/* Every use after the first gets a copy of `empty` before its user. */
static void distribute(MlirOperation empty) {
  MlirValue v = mlirOperationGetResult(empty, 0);
  int n = 0;
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u))
    ++n;
  if (n < 2)
    return;
  MlirOperation *users = malloc((size_t)n * sizeof(MlirOperation));
  unsigned *positions = malloc((size_t)n * sizeof(unsigned));
  n = 0;
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u)) {
    users[n] = mlirOpOperandGetOwner(u);
    positions[n++] = mlirOpOperandGetOperandNumber(u);
  }
  for (int i = 1; i < n; ++i) {
    MlirOperation copy = mlirOperationClone(empty);
    mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(users[i]), users[i], copy);
    mlirOperationSetOperand(users[i], positions[i], mlirOperationGetResult(copy, 0));
  }
  free(positions);
  free(users);
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  pbcOpListRewriteEach(func, "tensor.empty", distribute);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcDistinctEmptiesPass, "pbc-distinct-empties", "func.func",
                           "A tensor.empty with several uses becomes one per use", run);
