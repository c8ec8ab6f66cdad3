/* The run-time checks importers write (torch-mlir's cf.assert): pbc's
 * generated code has no way to raise, so each check is decided here.
 * A check that folded to true goes; one that folded to false is the
 * program's own error for these sizes (a located error with its message);
 * a check of values inside a linalg body (torch-mlir's gather index bounds:
 * "index must be smaller than dim size") goes too, because pbc clamps
 * every index a gather reads from data into the table
 * (pbc-clamp-gather-indices): an index out of range reads the nearest row
 * instead of raising. Any other check stays, and the input check rejects
 * it as an unsupported op. */
#include "pbc/importer_checks.h"

#include <stdlib.h>

#include "mlir-c/BuiltinAttributes.h"
#include "pbc/c_pass.h"

typedef struct {
  MlirOperation ops[4096];
  int n;
  bool full;
} Asserts;

static MlirWalkResult collect(MlirOperation op, void *data) {
  Asserts *a = data;
  if (pbcOpIsA(op, "cf.assert")) {
    if (a->n < 4096)
      a->ops[a->n++] = op;
    else
      a->full = true;
  }
  return MlirWalkResultAdvance;
}

static bool insideLinalgBody(MlirOperation op) {
  for (MlirOperation p = mlirOperationGetParentOperation(op); !mlirOperationIsNull(p);
       p = mlirOperationGetParentOperation(p))
    if (pbcOpIsA(p, "linalg.generic"))
      return true;
  return false;
}

/* 1 or 0 for a condition that is an i1 constant; -1 otherwise. */
static int constantCondition(MlirValue c) {
  if (!mlirValueIsAOpResult(c) || !pbcOpIsA(mlirOpResultGetOwner(c), "arith.constant"))
    return -1;
  MlirAttribute v = mlirOperationGetAttributeByName(mlirOpResultGetOwner(c), pbcStr("value"));
  if (mlirAttributeIsABool(v))
    return mlirBoolAttrGetValue(v) ? 1 : 0;
  if (mlirAttributeIsAInteger(v))
    return mlirIntegerAttrGetValueInt(v) != 0;
  return -1;
}

bool pbcResolveImporterChecks(MlirModule m) {
  Asserts *a = calloc(1, sizeof(Asserts)); /* large: heap */
  bool ok = true, again = true;
  while (ok && again) { /* more rounds only past 4096 checks, while some go */
    a->n = 0;
    a->full = false;
    mlirOperationWalk(mlirModuleGetOperation(m), collect, a, MlirWalkPostOrder);
    int removed = 0;
    for (int i = 0; i < a->n && ok; ++i) {
      MlirOperation op = a->ops[i];
      int known = constantCondition(mlirOperationGetOperand(op, 0));
      if (known == 0) {
        MlirAttribute msg = mlirOperationGetAttributeByName(op, pbcStr("msg"));
        MlirStringRef s = mlirAttributeIsAString(msg) ? mlirStringAttrGetValue(msg)
                                                      : pbcStr("(no message)");
        pbcEmitOpError(op, "the program's own check fails for these sizes: \"%.*s\"",
                       (int)s.length, s.data);
        ok = false;
      } else if (known == 1 || insideLinalgBody(op)) {
        mlirOperationDestroy(op);
        ++removed;
      }
    }
    again = a->full && removed > 0;
  }
  free(a);
  return ok;
}
