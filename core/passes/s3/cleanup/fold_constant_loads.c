/* pbc-fold-constant-loads: a read at constant subscripts of a value known at
 * compile time becomes that constant. The values are those of a constant
 * global (a filter given as arith.constant), read directly or through the
 * copies pbc makes of it (pbc-interleave's per-channel replicas: a
 * pbc.copy nest that writes each element once, R[i] = G[f(i)]).
 *
 * Why: pbc-hoist-invariant-loads keeps a stencil's filter vectors in
 * registers, but read from a replica they are opaque to LLVM. The fused
 * blur holds 30 of them (5 taps x 3 phases, two stencils) and spilled every
 * iteration; as constants they are 3 distinct splats (1/16, 1/4, 3/8), which
 * LLVM keeps in 3 registers, and the fused loop no longer spills. A replica
 * left without readers is erased with its copy nest. */
#include <stdlib.h>

#include "mlir-c/BuiltinAttributes.h"
#include "pbc/c_pass.h"
#include "analysis/constant_value.h"
#include "pbc/ir_build.h"
#include "pbc/op_list.h"
#include "passes/passes.h"

/* Replaces a load at constant subscripts with its value; true if folded. */
static bool fold(MlirOperation load, MlirSymbolTable globals) {
  PbcIvValues none = {.n = 0};
  MlirAttribute value;
  if (!pbcLoadConstantValue(load, &none, globals, &value))
    return false;
  MlirType type = mlirValueGetType(mlirOperationGetResult(load, 0));
  MlirNamedAttribute attr =
      mlirNamedAttributeGet(mlirIdentifierGet(mlirOperationGetContext(load), pbcStr("value")), value);
  MlirOperation c = pbcBuildOp(load, "arith.constant", 0, NULL, type, 1, &attr);
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(load, 0), mlirOperationGetResult(c, 0));
  mlirOperationDestroy(load);
  return true;
}

/* The affine loads of a function (fold() skips those it can't resolve). */
static MlirWalkResult gather(MlirOperation op, void *data) {
  if (pbcOpIsA(op, "affine.load") || pbcOpIsA(op, "affine.vector_load"))
    pbcOpListPush(data, op);
  return MlirWalkResultAdvance;
}

/* A copy buffer nobody reads any more: its nest, frees and allocation go. */
static void eraseIfUnread(MlirValue buffer) {
  MlirOperation store = pbcCopyBufferStore(buffer);
  if (mlirOperationIsNull(store))
    return;
  for (MlirOpOperand u = mlirValueGetFirstUse(buffer); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u))
    if (!pbcOpIsA(mlirOpOperandGetOwner(u), "memref.dealloc") &&
        !mlirOperationEqual(mlirOpOperandGetOwner(u), store))
      return;
  mlirOperationDestroy(pbcCopyNestOf(store));
  pbcEraseWithUsers(mlirOpResultGetOwner(buffer));
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  MlirSymbolTable globals = pbcModuleGlobals(func);
  if (mlirSymbolTableIsNull(globals))
    return true;
  PbcOpList loads = {0};
  mlirOperationWalk(func, gather, &loads, MlirWalkPreOrder);
  MlirValue *buffers = malloc((size_t)(loads.n + 1) * sizeof(MlirValue));
  int nBuffers = 0;
  for (int i = 0; i < loads.n; ++i) {
    MlirValue memref = mlirOperationGetOperand(loads.ops[i], 0);
    if (!fold(loads.ops[i], globals) || !mlirValueIsAOpResult(memref) ||
        !pbcOpIsA(mlirOpResultGetOwner(memref), "memref.alloc"))
      continue;
    bool seen = false;
    for (int k = 0; k < nBuffers; ++k)
      seen |= mlirValueEqual(buffers[k], memref);
    if (!seen)
      buffers[nBuffers++] = memref;
  }
  for (int k = 0; k < nBuffers; ++k)
    eraseIfUnread(buffers[k]);
  free(buffers);
  pbcOpListDestroy(&loads);
  mlirSymbolTableDestroy(globals);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcFoldConstantLoadsPass, "pbc-fold-constant-loads", "func.func",
                           "Fold reads of compile-time constants at constant subscripts", run);
