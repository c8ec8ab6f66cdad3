/* Builders S1's rewrites share: see passes/s1/layout.h. */
#include "passes/s1/layout.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/Linalg.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"

#include <stdlib.h>

enum { kMaxRank = 8 };

/* A destination-style linalg op; its body is `body` if not null, else the
 * named op's own. */
static MlirOperation buildStructured(MlirOperation before, const char *name, int nIns,
                                     const MlirValue *operands, MlirType result, int nAttrs,
                                     const MlirNamedAttribute *attrs, bool segments,
                                     MlirRegion body) {
  MlirContext ctx = mlirOperationGetContext(before);
  MlirOperationState st = mlirOperationStateGet(pbcStr(name), mlirOperationGetLocation(before));
  mlirOperationStateAddOperands(&st, nIns + 1, operands);
  mlirOperationStateAddResults(&st, 1, &result);
  mlirOperationStateAddAttributes(&st, nAttrs, attrs);
  int32_t sizes[2] = {nIns, 1};
  if (segments) {
    MlirNamedAttribute seg = pbcNamedAttr(ctx, "operandSegmentSizes", mlirDenseI32ArrayGet(ctx, 2, sizes));
    mlirOperationStateAddAttributes(&st, 1, &seg);
  }
  bool named = mlirRegionIsNull(body);
  MlirRegion region = named ? mlirRegionCreate() : body;
  mlirOperationStateAddOwnedRegions(&st, 1, &region);
  MlirOperation op = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(before), before, op);
  if (named)
    mlirLinalgFillBuiltinNamedOpRegion(op);
  return op;
}

MlirOperation pbcBuildNamedLinalg(MlirOperation before, const char *name, int nIns,
                                  const MlirValue *operands, MlirType result, int nAttrs,
                                  const MlirNamedAttribute *attrs) {
  return buildStructured(before, name, nIns, operands, result, nAttrs, attrs, true,
                         (MlirRegion){NULL});
}

MlirOperation pbcBuildLinalgGeneric(MlirOperation before, int nIns, const MlirValue *operands,
                                    MlirType result, MlirAttribute maps, MlirAttribute iterators,
                                    MlirRegion body) {
  MlirContext ctx = mlirOperationGetContext(before);
  MlirNamedAttribute attrs[2] = {pbcNamedAttr(ctx, "indexing_maps", maps),
                                 pbcNamedAttr(ctx, "iterator_types", iterators)};
  return buildStructured(before, "linalg.generic", nIns, operands, result, 2, attrs, true, body);
}

MlirType pbcPermutedTensorType(MlirType t, const int64_t *perm, int rank) {
  int64_t shape[kMaxRank];
  for (int i = 0; i < rank; ++i)
    shape[i] = mlirShapedTypeGetDimSize(t, perm[i]);
  return mlirRankedTensorTypeGet(rank, shape, mlirShapedTypeGetElementType(t),
                                 mlirAttributeGetNull());
}

MlirValue pbcBuildTranspose(MlirOperation before, MlirValue v, const int64_t *perm, int rank,
                            bool mark) {
  MlirContext ctx = mlirOperationGetContext(before);
  MlirType rt = pbcPermutedTensorType(mlirValueGetType(v), perm, rank);
  MlirValue operands[2] = {
      v, mlirOperationGetResult(pbcBuildOp(before, "tensor.empty", 0, NULL, rt, 0, NULL), 0)};
  MlirNamedAttribute attr = pbcNamedAttr(ctx, "permutation", mlirDenseI64ArrayGet(ctx, rank, perm));
  /* linalg.transpose has exactly one input and one init: no segments. */
  MlirOperation t =
      buildStructured(before, "linalg.transpose", 1, operands, rt, 1, &attr, false, (MlirRegion){NULL});
  if (mark)
    pbcOpSetUnitAttr(t, PBC_SINK_MARK);
  return mlirOperationGetResult(t, 0);
}
