/* pbc-fold-unit-operand-dims: an input of a linalg.generic that has
 * dimensions of size 1 read at index 0 is collapsed to the others
 * (tensor.collapse_shape, a view once bufferized), and its indexing map
 * loses those results.
 *
 * Why: frontends broadcast per-channel parameters in NCHW's shape, `Cx1x1`
 * (PyTorch's batch norm through the bridge, TOSA's rank-matched operands),
 * and read them as `%p[%c, 0, 0]` once the tensors are channels-last. The
 * channel subscript is then not in the innermost dimension, so S3's
 * contiguity analysis sees a strided access and leaves the whole nest scalar
 * (DenseNet-121: 66 of its nests, left to LLVM's own vectorizer, about 40%
 * of its LLVM time). Collapsed, the parameter is `%p[%c]`.
 *
 * Only operands from outside the computation are folded: the function's
 * arguments and constants, through reshapes (torch-mlir expands a `C`
 * parameter to `Cx1x1`), and values computed from constants alone. A value
 * computed from the inputs (a keepdim reduction's `Nx1`) would be read
 * through a view of its producer's buffer, and S3's fusion then kept
 * producer and consumer apart (ViT-B/16: 582 -> 657 nests). */
#include <stdlib.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/op_list.h"
#include "passes/passes.h"

enum { kMaxRank = 16 };

enum { kMaxConstantDepth = 8 };

static bool isReshape(MlirOperation op) {
  return pbcOpIsA(op, "tensor.expand_shape") || pbcOpIsA(op, "tensor.collapse_shape");
}

/* A constant, or computed from constants alone: a reshape of one, a fill,
 * or a generic over them (torch-mlir's inference batch norm computes
 * rsqrt(var + eps) from its constants at run time). */
static bool fromConstants(MlirValue v, int depth) {
  if (depth > kMaxConstantDepth || mlirValueIsABlockArgument(v))
    return false;
  MlirOperation def = mlirOpResultGetOwner(v);
  if (pbcOpIsA(def, "arith.constant") || pbcOpIsA(def, "tensor.empty"))
    return true;
  if (isReshape(def))
    return fromConstants(mlirOperationGetOperand(def, 0), depth + 1);
  if (!pbcOpIsA(def, "linalg.generic") && !pbcOpIsA(def, "linalg.fill"))
    return false;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(def); ++i) {
    MlirValue operand = mlirOperationGetOperand(def, i);
    if (mlirTypeIsARankedTensor(mlirValueGetType(operand)) && !fromConstants(operand, depth + 1))
      return false;
  }
  return true;
}

/* A function argument or constants (through reshapes): nothing a nest of
 * this function computes from its inputs. */
static bool fromOutside(MlirValue v) {
  while (!mlirValueIsABlockArgument(v) && isReshape(mlirOpResultGetOwner(v)))
    v = mlirOperationGetOperand(mlirOpResultGetOwner(v), 0);
  if (mlirValueIsABlockArgument(v))
    return pbcOpIsA(mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v)), "func.func");
  return fromConstants(v, 0);
}

static bool isZero(MlirAffineExpr e) {
  return mlirAffineExprIsAConstant(e) && mlirAffineConstantExprGetValue(e) == 0;
}

/* `v` collapsed to the dimensions not in `drop`, before `user`. */
static MlirValue collapse(MlirOperation user, MlirValue v, const bool *drop, int rank) {
  MlirContext ctx = mlirOperationGetContext(user);
  MlirType type = mlirValueGetType(v);
  MlirType i64 = mlirIntegerTypeGet(ctx, 64);
  int64_t shape[kMaxRank];
  MlirAttribute groups[kMaxRank], members[kMaxRank];
  int numGroups = 0, numMembers = 0, pendingDropped = 0;
  for (int d = 0; d < rank; ++d) {
    if (drop[d]) {
      if (numGroups == 0) {
        ++pendingDropped; /* leading unit dims join the first kept one */
        continue;
      }
      members[numMembers++] = mlirIntegerAttrGet(i64, d);
      continue;
    }
    if (numGroups > 0)
      groups[numGroups - 1] = mlirArrayAttrGet(ctx, numMembers, members);
    numMembers = 0;
    for (int p = 0; p < pendingDropped; ++p)
      members[numMembers++] = mlirIntegerAttrGet(i64, p);
    pendingDropped = 0;
    members[numMembers++] = mlirIntegerAttrGet(i64, d);
    shape[numGroups] = mlirShapedTypeGetDimSize(type, d);
    ++numGroups; /* groups[numGroups - 1] is set when it is complete */
  }
  if (numGroups > 0)
    groups[numGroups - 1] = mlirArrayAttrGet(ctx, numMembers, members);
  MlirType result = mlirRankedTensorTypeGet(numGroups, shape, mlirShapedTypeGetElementType(type),
                                            mlirAttributeGetNull());
  MlirNamedAttribute reassociation = mlirNamedAttributeGet(
      mlirIdentifierGet(ctx, pbcStr("reassociation")), mlirArrayAttrGet(ctx, numGroups, groups));
  MlirOperation op = pbcBuildOp(user, "tensor.collapse_shape", 1, &v, result, 1, &reassociation);
  return mlirOperationGetResult(op, 0);
}

static void fold(MlirOperation generic) {
  MlirAttribute maps = mlirOperationGetAttributeByName(generic, pbcStr("indexing_maps"));
  MlirAttribute segments = mlirOperationGetAttributeByName(generic, pbcStr("operandSegmentSizes"));
  if (mlirAttributeIsNull(maps) || mlirAttributeIsNull(segments))
    return;
  int numInputs = mlirDenseI32ArrayGetElement(segments, 0);
  intptr_t numMaps = mlirArrayAttrGetNumElements(maps);
  MlirAttribute *newMaps = malloc((size_t)numMaps * sizeof(MlirAttribute));
  bool changed = false;
  for (intptr_t i = 0; i < numMaps; ++i) {
    newMaps[i] = mlirArrayAttrGetElement(maps, i);
    if (i >= numInputs)
      continue;
    MlirValue v = mlirOperationGetOperand(generic, i);
    MlirType t = mlirValueGetType(v);
    MlirAffineMap map = mlirAffineMapAttrGetValue(newMaps[i]);
    if (!mlirTypeIsARankedTensor(t) || !mlirShapedTypeHasStaticShape(t) || !fromOutside(v))
      continue;
    int rank = (int)mlirShapedTypeGetRank(t);
    if (rank > kMaxRank || (int)mlirAffineMapGetNumResults(map) != rank)
      continue;
    bool drop[kMaxRank];
    MlirAffineExpr kept[kMaxRank];
    int numKept = 0;
    for (int d = 0; d < rank; ++d) {
      MlirAffineExpr e = mlirAffineMapGetResult(map, d);
      drop[d] = mlirShapedTypeGetDimSize(t, d) == 1 && isZero(e);
      if (!drop[d])
        kept[numKept++] = e;
    }
    if (numKept == rank)
      continue;
    mlirOperationSetOperand(generic, i, collapse(generic, v, drop, rank));
    newMaps[i] = mlirAffineMapAttrGet(mlirAffineMapGet(
        mlirOperationGetContext(generic), mlirAffineMapGetNumDims(map),
        mlirAffineMapGetNumSymbols(map), numKept, kept));
    changed = true;
  }
  if (changed)
    mlirOperationSetAttributeByName(
        generic, pbcStr("indexing_maps"),
        mlirArrayAttrGet(mlirOperationGetContext(generic), numMaps, newMaps));
  free(newMaps);
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  pbcOpListRewriteEach(func, "linalg.generic", fold);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcFoldUnitOperandDimsPass, "pbc-fold-unit-operand-dims", "func.func",
                           "Unit dimensions read at 0 dropped from linalg.generic inputs", run);
