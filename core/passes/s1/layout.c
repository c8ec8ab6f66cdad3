/* Builders S1's rewrites share: see passes/s1/layout.h. */
#include "passes/s1/layout.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/Linalg.h"
#include "pbc-ext/resources.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/memrefs.h"
#include "pbc/op_list.h"

#include <stdlib.h>
#include <string.h>

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

MlirOperation pbcAppendOp(MlirBlock block, const char *name, int n, const MlirValue *operands,
                          MlirType result, MlirLocation loc) {
  MlirOperationState st = mlirOperationStateGet(pbcStr(name), loc);
  mlirOperationStateAddOperands(&st, n, operands);
  if (!mlirTypeIsNull(result))
    mlirOperationStateAddResults(&st, 1, &result);
  MlirOperation op = mlirOperationCreate(&st);
  mlirBlockAppendOwnedOperation(block, op);
  return op;
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

MlirValue pbcTransposedConstant(MlirOperation before, MlirValue v, const int64_t *perm, int rank) {
  if (rank > kMaxRank)
    return (MlirValue){NULL};
  if (!mlirValueIsAOpResult(v) || !pbcOpIsA(mlirOpResultGetOwner(v), "arith.constant"))
    return (MlirValue){NULL};
  MlirAttribute value = mlirOperationGetAttributeByName(mlirOpResultGetOwner(v), pbcStr("value"));
  MlirType t = mlirValueGetType(v), rt = pbcPermutedTensorType(t, perm, rank);
  bool resource = mlirAttributeIsADenseResourceElements(value);
  if (!mlirAttributeIsADenseElements(value) && !resource)
    return (MlirValue){NULL};
  MlirAttribute moved;
  if (!resource && mlirDenseElementsAttrIsSplat(value)) {
    moved = mlirDenseElementsAttrSplatGet(rt, mlirDenseElementsAttrGetSplatValue(value));
  } else {
    int bits = pbcElementBits(t);
    if (bits < 8 || bits % 8)
      return (MlirValue){NULL}; /* i1 is bit-packed */
    size_t bytes = (size_t)bits / 8;
    /* Element i of the result, at index (j_0 .. j_r-1), is the source's at
     * k with k[perm[d]] = j_d: the source strides taken in perm's order. */
    int64_t srcStride[kMaxRank], walk[kMaxRank], out[kMaxRank], idx[kMaxRank] = {0};
    int64_t n = 1;
    for (int d = rank - 1; d >= 0; --d) {
      srcStride[d] = n;
      n *= mlirShapedTypeGetDimSize(t, d);
    }
    for (int d = 0; d < rank; ++d) {
      walk[d] = srcStride[perm[d]];
      out[d] = mlirShapedTypeGetDimSize(rt, d);
    }
    const char *src;
    if (resource) {
      /* The blob's bytes; none if it was elided (then left to run time). */
      size_t size;
      if (!pbcExtResourceElementsData(value, &src, &size) || size != (size_t)n * bytes)
        return (MlirValue){NULL};
    } else {
      src = mlirDenseElementsAttrGetRawData(value);
    }
    char *dst = malloc((size_t)n * bytes);
    int64_t from = 0;
    for (int64_t to = 0; to < n; ++to) {
      memcpy(dst + (size_t)to * bytes, src + (size_t)from * bytes, bytes);
      for (int d = rank - 1; d >= 0; --d) { /* the next result index */
        from += walk[d];
        if (++idx[d] < out[d])
          break;
        from -= walk[d] * out[d];
        idx[d] = 0;
      }
    }
    moved = mlirDenseElementsAttrRawBufferGet(rt, (size_t)n * bytes, dst);
    free(dst);
  }
  MlirNamedAttribute attr = pbcNamedAttr(mlirOperationGetContext(before), "value", moved);
  return mlirOperationGetResult(pbcBuildOp(before, "arith.constant", 0, NULL, rt, 1, &attr), 0);
}
