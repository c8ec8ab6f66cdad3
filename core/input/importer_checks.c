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

#include "mlir-c/BuiltinAttributes.h"
#include "pbc/c_pass.h"
#include "pbc/op_list.h"

bool pbcOpIsInLinalgBody(MlirOperation op) {
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
  PbcOpList asserts = {0};
  pbcOpListCollect(&asserts, mlirModuleGetOperation(m), "cf.assert");
  bool ok = true;
  for (int i = 0; i < asserts.n && ok; ++i) {
    MlirOperation op = asserts.ops[i];
    int known = constantCondition(mlirOperationGetOperand(op, 0));
    if (known == 0) {
      MlirAttribute msg = mlirOperationGetAttributeByName(op, pbcStr("msg"));
      MlirStringRef s = mlirAttributeIsAString(msg) ? mlirStringAttrGetValue(msg)
                                                    : pbcStr("(no message)");
      pbcEmitOpError(op, "the program's own check fails for these sizes: \"%.*s\"",
                     (int)s.length, s.data);
      ok = false;
    } else if (known == 1 || pbcOpIsInLinalgBody(op)) {
      mlirOperationDestroy(op);
    }
  }
  pbcOpListDestroy(&asserts);
  return ok;
}
