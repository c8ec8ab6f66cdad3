/* pbc-free-after-last-use: a buffer allocated at the top level of a
 * function is freed right after the last top-level op that uses it (or a
 * view of it), instead of by MLIR's ownership-based deallocation.
 *
 * Why: for straight-line code that pipeline frees every buffer at the end of
 * the function, in one bufferization.dealloc over all of them, which its
 * simplification then takes time about quadratic in the number of buffers
 * to split (a 4,000-op program spent 2.6 s there), and a whole model's
 * activations stay allocated until it returns. Freed after its last use, a
 * buffer goes back to the runtime's buffer cache, where the next allocation
 * of that size reuses it while it is still in cache.
 *
 * Only what is plainly safe is taken: an alloc in the function's only block
 * whose uses, through views (subview, reshapes, casts, transpose), are ops
 * that produce no buffer and neither return nor pass it on. Those allocs and
 * their deallocs carry `bufferization.manual_deallocation`, so that
 * buffer-deallocation-pipeline, which runs next, leaves them to this pass and
 * handles every other buffer as before. */
#include <stdint.h>
#include <stdlib.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/ptr_map.h"
#include "passes/passes.h"

static const char kManual[] = "bufferization.manual_deallocation";

static bool isView(MlirOperation op) {
  static const char *const kViews[] = {"memref.subview",   "memref.expand_shape",
                                       "memref.collapse_shape", "memref.cast",
                                       "memref.reinterpret_cast", "memref.transpose",
                                       "memref.view"};
  for (size_t i = 0; i < sizeof(kViews) / sizeof(kViews[0]); ++i)
    if (pbcOpIsA(op, kViews[i]))
      return true;
  return false;
}

static bool producesBuffer(MlirOperation op) {
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i)
    if (mlirTypeIsAMemRef(mlirValueGetType(mlirOperationGetResult(op, i))))
      return true;
  return false;
}

/* The op of `body` that holds `op` (op itself at the top level). */
static MlirOperation topLevelAncestor(MlirOperation op, MlirBlock body) {
  while (!mlirOperationIsNull(op) && !mlirBlockEqual(mlirOperationGetBlock(op), body))
    op = mlirOperationGetParentOperation(op);
  return op;
}

/* The latest position of a top-level op using `v` or a view of it; -2 if
 * some use is not plainly safe. */
static int lastUse(MlirValue v, MlirBlock body, const PbcPtrMap *pos, int depth) {
  int last = -1;
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    int here;
    if (isView(user) && mlirOpOperandGetOperandNumber(u) == 0 && depth < 32) {
      int inner = lastUse(mlirOperationGetResult(user, 0), body, pos, depth + 1);
      if (inner == -2)
        return -2;
      here = pbcPtrMapGet(pos, topLevelAncestor(user, body).ptr);
      if (inner > here)
        here = inner;
    } else if (producesBuffer(user) || pbcOpIsA(user, "func.return") ||
               pbcOpIsA(user, "func.call") || pbcOpIsA(user, "memref.dealloc") ||
               mlirOperationGetNumSuccessors(user) > 0 ||
               mlirOperationIsNull(topLevelAncestor(user, body))) {
      return -2;
    } else {
      here = pbcPtrMapGet(pos, topLevelAncestor(user, body).ptr);
    }
    if (here < 0)
      return -2;
    if (here > last)
      last = here;
  }
  return last;
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  MlirRegion region = mlirOperationGetRegion(func, 0);
  MlirBlock body = mlirRegionGetFirstBlock(region);
  if (mlirBlockIsNull(body) || !mlirBlockIsNull(mlirBlockGetNextInRegion(body)))
    return true;
  int n = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    ++n;
  MlirOperation *ops = malloc((size_t)(n + 1) * sizeof(MlirOperation));
  PbcPtrMap pos;
  pbcPtrMapInit(&pos, (size_t)n);
  int i = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op), ++i) {
    ops[i] = op;
    pbcPtrMapPut(&pos, op.ptr, i);
  }
  MlirContext ctx = mlirOperationGetContext(func);
  for (i = 0; i < n; ++i) {
    MlirOperation alloc = ops[i];
    if (!pbcOpIsA(alloc, "memref.alloc") || pbcOpHasAttr(alloc, kManual))
      continue;
    int last = lastUse(mlirOperationGetResult(alloc, 0), body, &pos, 0);
    if (last == -2 || last + 1 >= n) /* unsafe, or used by the terminator */
      continue;
    MlirOperation after = ops[last < i ? i : last];
    MlirOperation dealloc = pbcBuildDealloc(mlirOperationGetNextInBlock(after),
                                            mlirOperationGetResult(alloc, 0),
                                            mlirOperationGetLocation(alloc));
    mlirOperationSetAttributeByName(alloc, pbcStr(kManual), mlirUnitAttrGet(ctx));
    mlirOperationSetAttributeByName(dealloc, pbcStr(kManual), mlirUnitAttrGet(ctx));
  }
  pbcPtrMapDestroy(&pos);
  free(ops);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcFreeAfterLastUsePass, "pbc-free-after-last-use", "func.func",
                           "Top-level buffers freed right after their last use", run);
