/* The front door: what pbc accepts as a tensor program, checked before S1 so
 * users get one located error instead of a failure deep in a stage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/Diagnostics.h"
#include "pbc/c_pass.h"
#include "pbc/entry_sig.h"
#include "pbc/session.h"

/* Dialects a frontend's tensor program may use. */
static const char *const kAccepted[] = {"builtin", "func",  "arith", "math",
                                        "linalg",  "tensor", "tosa", NULL};

static bool accepted(MlirOperation op) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  const char *dot = memchr(n.data, '.', n.length);
  size_t ns = dot ? (size_t)(dot - n.data) : n.length;
  for (const char *const *d = kAccepted; *d; ++d)
    if (strlen(*d) == ns && strncmp(n.data, *d, ns) == 0)
      return true;
  return false;
}

typedef struct {
  bool ok;
} WalkState;

static MlirWalkResult checkOp(MlirOperation op, void *ud) {
  WalkState *st = ud;
  if (!accepted(op)) {
    char name[128];
    pbcEmitOpError(op,
                   "unsupported op '%s': pbc accepts linalg, tensor, arith, math, "
                   "func and tosa ops on tensors",
                   pbcOpName(op, name, sizeof(name)));
    st->ok = false;
    return MlirWalkResultInterrupt;
  }
  if (pbcOpIsA(op, "func.func") &&
      mlirBlockIsNull(mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0)))) {
    pbcEmitOpError(op, "external function declarations are not supported");
    st->ok = false;
    return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

/* Inputs belong to the caller: bufferization must not write results into
 * them (it may when function arguments are writable). Existing argument
 * attributes are kept; bufferization.writable is set to false in each. */
static void markInputsReadOnly(MlirOperation func, MlirContext ctx) {
  MlirBlock entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  intptr_t n = mlirBlockGetNumArguments(entry);
  if (n == 0)
    return;
  MlirStringRef argAttrsName = mlirStringRefCreateFromCString("arg_attrs");
  MlirAttribute old = mlirOperationGetAttributeByName(func, argAttrsName);
  MlirIdentifier writable =
      mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("bufferization.writable"));
  MlirAttribute dicts[n];
  for (intptr_t i = 0; i < n; ++i) {
    MlirAttribute d = mlirAttributeIsNull(old) ? (MlirAttribute){NULL}
                                               : mlirArrayAttrGetElement(old, i);
    intptr_t m = mlirAttributeIsNull(d) ? 0 : mlirDictionaryAttrGetNumElements(d);
    MlirNamedAttribute elems[m + 1];
    intptr_t k = 0;
    for (intptr_t e = 0; e < m; ++e) {
      MlirNamedAttribute na = mlirDictionaryAttrGetElement(d, e);
      if (!mlirIdentifierEqual(na.name, writable))
        elems[k++] = na;
    }
    elems[k++] = mlirNamedAttributeGet(writable, mlirBoolAttrGet(ctx, 0));
    dicts[i] = mlirDictionaryAttrGet(ctx, k, elems);
  }
  mlirOperationSetAttributeByName(func, argAttrsName, mlirArrayAttrGet(ctx, n, dicts));
}

bool pbcSessionCheckInput(PbcSession *s, MlirModule m) {
  (void)s;
  MlirOperation mod = mlirModuleGetOperation(m);
  WalkState st = {true};
  mlirOperationWalk(mod, checkOp, &st, MlirWalkPreOrder);
  if (!st.ok)
    return false;
  PbcEntrySig *sigs = calloc(64, sizeof(PbcEntrySig)); /* large: heap */
  int n = pbcEntrySigsCollect(m, sigs, 64);
  free(sigs);
  if (n < 0)
    return false;
  if (n == 0) {
    mlirEmitError(mlirOperationGetLocation(mod),
                  "no public function: nothing to compile");
    return false;
  }
  /* Entry points get MLIR's standard C interface (_mlir_ciface_NAME). */
  MlirContext ctx = mlirOperationGetContext(mod);
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(m));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (!pbcOpIsA(op, "func.func"))
      continue;
    if (!pbcFuncIsPublic(op))
      continue;
    mlirOperationSetAttributeByName(
        op, mlirStringRefCreateFromCString("llvm.emit_c_interface"),
        mlirUnitAttrGet(ctx));
    markInputsReadOnly(op, ctx);
  }
  return true;
}
