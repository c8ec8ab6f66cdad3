/* Root nests and their kind (the pbc.kind mark S2 sets on each) (see pbc/nests.h). */
#include "pbc/nests.h"

#include <string.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/marks.h"

bool pbcOpIsConstantOrAlloc(MlirOperation op) {
  return pbcOpIsA(op, "arith.constant") || pbcOpIsA(op, "memref.alloc");
}

bool pbcNestKindIs(MlirOperation op, const char *kind) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, pbcStr(PBC_MARK_KIND));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAString(a))
    return false;
  MlirStringRef k = mlirStringAttrGetValue(a);
  return k.length == strlen(kind) && !strncmp(k.data, kind, k.length);
}

void pbcNestSetKind(MlirOperation op, const char *kind) {
  mlirOperationSetAttributeByName(
      op, pbcStr(PBC_MARK_KIND),
      mlirStringAttrGet(mlirOperationGetContext(op), mlirStringRefCreateFromCString(kind)));
}

MlirOperation pbcRootOf(MlirOperation op) {
  for (;;) {
    MlirOperation parent = mlirOperationGetParentOperation(op);
    if (mlirOperationIsNull(parent) || pbcOpIsA(parent, "func.func"))
      return op;
    op = parent;
  }
}

void pbcRootNests(MlirOperation func, const char *kind, PbcOpList *roots) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockIsNull(body))
    return;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (pbcOpIsA(op, "affine.for") && (!kind || pbcNestKindIs(op, kind)))
      pbcOpListPush(roots, op);
}

bool pbcNestIsFill(MlirOperation f, PbcAccess *store, MlirOperation *constant) {
  MlirOperation band[PBC_MAX_BAND];
  int depth = pbcLoopBand(f, band, PBC_MAX_BAND);
  if (depth == 0 || !pbcLoopStoresOnlyConstant(band[depth - 1], store, constant))
    return false;
  for (int l = 0; l < depth; ++l)
    if (!pbcLoopIsParallel(band[l]))
      return false;
  long long n = pbcBandIterations(f);
  return n > 0 && n * (store->lanes ? store->lanes : 1) ==
                      pbcMemrefElements(mlirValueGetType(store->memref));
}
