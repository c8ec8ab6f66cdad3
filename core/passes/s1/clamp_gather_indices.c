/* pbc-clamp-gather-indices: an index that a gather reads from the data (a
 * tensor.extract subscript made by arith.index_cast from an integer element:
 * an embedding's token ids, torch.gather's or TOSA's gather's indices) is
 * clamped into the tensor's dimension, [0, dim - 1]. Without the clamp an
 * index out of range loads from outside the buffer: a segfault, or another
 * buffer's data read silently. Clamped, it reads the nearest row, as XLA's
 * gather does; the PyTorch bridge checks the indices it passes in and raises
 * IndexError before the call, as eager PyTorch would. Subscripts computed
 * from loop indices (linalg.index, constants) stay as they are: the ops
 * that make them keep them in range. */
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/op_list.h"
#include "passes/passes.h"

/* True if `v` is made from an element of a tensor: an index_cast of an
 * integer (not of a linalg.index, whose range the op bounds). */
static bool readFromData(MlirValue v) {
  if (!mlirValueIsAOpResult(v))
    return false;
  MlirOperation def = mlirOpResultGetOwner(v);
  if (!pbcOpIsA(def, "arith.index_cast") && !pbcOpIsA(def, "arith.index_castui"))
    return false;
  MlirValue src = mlirOperationGetOperand(def, 0);
  return !(mlirValueIsAOpResult(src) && pbcOpIsA(mlirOpResultGetOwner(src), "linalg.index"));
}

/* min(max(idx, 0), dim - 1) : index, before `extract`. */
static MlirValue clamp(MlirOperation extract, MlirValue tensor, int d, MlirValue idx) {
  MlirType t = mlirValueGetType(tensor);
  MlirType index = mlirIndexTypeGet(mlirTypeGetContext(t));
  MlirValue zero = pbcBuildIndexConstant(extract, 0), last;
  if (mlirShapedTypeIsDynamicDim(t, d)) {
    MlirValue ops[2] = {tensor, pbcBuildIndexConstant(extract, d)};
    MlirValue dim = mlirOperationGetResult(pbcBuildOp(extract, "tensor.dim", 2, ops, index, 0, NULL), 0);
    MlirValue sub[2] = {dim, pbcBuildIndexConstant(extract, 1)};
    last = mlirOperationGetResult(pbcBuildOp(extract, "arith.subi", 2, sub, index, 0, NULL), 0);
  } else {
    last = pbcBuildIndexConstant(extract, mlirShapedTypeGetDimSize(t, d) - 1);
  }
  MlirValue lo[2] = {idx, zero};
  MlirValue above = mlirOperationGetResult(pbcBuildOp(extract, "arith.maxsi", 2, lo, index, 0, NULL), 0);
  MlirValue hi[2] = {above, last};
  return mlirOperationGetResult(pbcBuildOp(extract, "arith.minsi", 2, hi, index, 0, NULL), 0);
}

static void clampExtract(MlirOperation extract) {
  MlirValue tensor = mlirOperationGetOperand(extract, 0);
  if (!mlirTypeIsARankedTensor(mlirValueGetType(tensor)))
    return;
  for (intptr_t i = 1; i < mlirOperationGetNumOperands(extract); ++i) {
    MlirValue idx = mlirOperationGetOperand(extract, i);
    if (readFromData(idx))
      mlirOperationSetOperand(extract, i, clamp(extract, tensor, (int)i - 1, idx));
  }
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  pbcOpListRewriteEach(func, "tensor.extract", clampExtract);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcClampGatherIndicesPass, "pbc-clamp-gather-indices", "func.func",
                           "Clamp the indices a gather reads from data into the tensor's bounds",
                           run);
