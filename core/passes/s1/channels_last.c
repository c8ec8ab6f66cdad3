/* pbc-channels-last: channels-first convolutions and poolings (what
 * torch-mlir and NCHW StableHLO hand over) run in the channels-last form
 * that S3 tiles and vectorizes along the channels:
 *   linalg.conv_2d_nchw_fchw(x, f)  -> T(linalg.conv_2d_nhwc_hwcf(T(x), T(f)))
 *   linalg.depthwise_conv_2d_nchw_chw -> T(linalg.depthwise_conv_2d_nhwc_hwc(..))
 *   linalg.pooling_nchw_{max,sum}   -> T(linalg.pooling_nhwc_{max,sum}(T(x)))
 * where each T is a linalg.transpose (NCHW -> NHWC on the way in, NHWC ->
 * NCHW on the way out). A filter that is a constant is transposed here, at
 * compile time; a fill as the initial value becomes a fill of the new shape
 * (canonicalize). The transposes around consecutive layers meet and cancel
 * once pbc-sink-transposes has moved each NHWC -> NCHW transpose below the
 * elementwise ops after it (bias, batch norm, activation, residual add):
 * what is left is one transpose at the program's entry and one at its exit.
 * Upstream MLIR has no such rewrite (IREE keeps its own); it needs only the
 * named ops' builders, so it is written here. */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/op_list.h"
#include "passes/passes.h"
#include "passes/s1/layout.h"

static const int64_t kToNhwc[4] = {0, 2, 3, 1};
static const int64_t kToNchw[4] = {0, 3, 1, 2};
static const int64_t kFchwToHwcf[4] = {2, 3, 1, 0};
static const int64_t kChwToHwc[3] = {1, 2, 0};

static MlirNamedAttribute namedAttr(MlirContext ctx, const char *name, MlirAttribute a) {
  return mlirNamedAttributeGet(mlirIdentifierGet(ctx, pbcStr(name)), a);
}

/* A dense constant transposed at compile time, or null if `v` is not one
 * this can read (a raw-data dense elements attribute of 4-byte elements). */
static MlirValue transposedConstant(MlirOperation before, MlirValue v, const int64_t *perm,
                                    int rank) {
  if (!mlirValueIsAOpResult(v) || !pbcOpIsA(mlirOpResultGetOwner(v), "arith.constant"))
    return (MlirValue){NULL};
  MlirAttribute value = mlirOperationGetAttributeByName(mlirOpResultGetOwner(v), pbcStr("value"));
  MlirType t = mlirValueGetType(v), rt = pbcPermutedTensorType(t, perm, rank);
  if (!mlirAttributeIsADenseElements(value))
    return (MlirValue){NULL};
  MlirAttribute moved;
  if (mlirDenseElementsAttrIsSplat(value)) {
    moved = mlirDenseElementsAttrSplatGet(rt, mlirDenseElementsAttrGetSplatValue(value));
  } else {
    MlirType elem = mlirShapedTypeGetElementType(t);
    int bits = mlirTypeIsAFloat(elem) ? (int)mlirFloatTypeGetWidth(elem)
               : mlirTypeIsAInteger(elem) ? (int)mlirIntegerTypeGetWidth(elem)
                                          : 0;
    if (bits != 32)
      return (MlirValue){NULL};
    const uint32_t *src = mlirDenseElementsAttrGetRawData(value);
    /* As 4-d, with leading unit dimensions for a lower rank. */
    int lead = 4 - rank;
    int64_t in[4], out[4], perm4[4];
    for (int i = 0; i < 4; ++i) {
      in[i] = i < lead ? 1 : mlirShapedTypeGetDimSize(t, i - lead);
      perm4[i] = i < lead ? i : perm[i - lead] + lead;
    }
    for (int i = 0; i < 4; ++i)
      out[i] = in[perm4[i]];
    int64_t n = in[0] * in[1] * in[2] * in[3];
    uint32_t *dst = malloc((size_t)n * sizeof(uint32_t));
    int64_t idx[4];
    for (idx[0] = 0; idx[0] < out[0]; ++idx[0])
      for (idx[1] = 0; idx[1] < out[1]; ++idx[1])
        for (idx[2] = 0; idx[2] < out[2]; ++idx[2])
          for (idx[3] = 0; idx[3] < out[3]; ++idx[3]) {
            int64_t k[4];
            for (int i = 0; i < 4; ++i)
              k[perm4[i]] = idx[i];
            int64_t from = ((k[0] * in[1] + k[1]) * in[2] + k[2]) * in[3] + k[3];
            int64_t to = ((idx[0] * out[1] + idx[1]) * out[2] + idx[2]) * out[3] + idx[3];
            dst[to] = src[from];
          }
    moved = mlirDenseElementsAttrRawBufferGet(rt, (size_t)n * sizeof(uint32_t), dst);
    free(dst);
  }
  MlirNamedAttribute attr = namedAttr(mlirOperationGetContext(before), "value", moved);
  return mlirOperationGetResult(pbcBuildOp(before, "arith.constant", 0, NULL, rt, 1, &attr), 0);
}

/* `v` transposed: at compile time if it is a constant; else a
 * linalg.transpose, marked for pbc-sink-transposes if `mark`. */
static MlirValue transpose(MlirOperation before, MlirValue v, const int64_t *perm, int rank,
                           bool mark) {
  MlirValue folded = transposedConstant(before, v, perm, rank);
  return mlirValueIsNull(folded) ? pbcBuildTranspose(before, v, perm, rank, mark) : folded;
}

static bool staticOfRank(MlirValue v, int rank) {
  MlirType t = mlirValueGetType(v);
  return mlirTypeIsARankedTensor(t) && mlirShapedTypeHasStaticShape(t) &&
         mlirShapedTypeGetRank(t) == rank;
}

/* op (channels-first, ins then one init) -> `nhwcName` on transposed
 * operands; `filterPerm` for the second input, or NULL to pass it as is (a
 * pooling's window). */
static void toChannelsLast(MlirOperation op, const char *nhwcName, const int64_t *filterPerm,
                           int filterRank) {
  MlirValue x = mlirOperationGetOperand(op, 0), w = mlirOperationGetOperand(op, 1),
            init = mlirOperationGetOperand(op, 2);
  if (mlirOperationGetNumOperands(op) != 3 || !staticOfRank(x, 4) || !staticOfRank(init, 4) ||
      (filterPerm && !staticOfRank(w, filterRank)))
    return;
  MlirValue operands[3] = {transpose(op, x, kToNhwc, 4, false),
                           filterPerm ? transpose(op, w, filterPerm, filterRank, false) : w,
                           transpose(op, init, kToNhwc, 4, false)};
  MlirNamedAttribute attrs[2];
  int n = 0;
  static const char *const kKept[] = {"strides", "dilations"};
  for (int i = 0; i < 2; ++i) {
    MlirAttribute a = mlirOperationGetAttributeByName(op, pbcStr(kKept[i]));
    if (!mlirAttributeIsNull(a))
      attrs[n++] = namedAttr(mlirOperationGetContext(op), kKept[i], a);
  }
  MlirType rt = mlirValueGetType(operands[2]);
  MlirOperation nhwc = pbcBuildNamedLinalg(op, nhwcName, 2, operands, rt, n, attrs);
  MlirValue back = transpose(op, mlirOperationGetResult(nhwc, 0), kToNchw, 4, true);
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), back);
  mlirOperationDestroy(op);
}

static void convert(MlirOperation op) {
  if (pbcOpIsA(op, "linalg.conv_2d_nchw_fchw"))
    toChannelsLast(op, "linalg.conv_2d_nhwc_hwcf", kFchwToHwcf, 4);
  else if (pbcOpIsA(op, "linalg.depthwise_conv_2d_nchw_chw"))
    toChannelsLast(op, "linalg.depthwise_conv_2d_nhwc_hwc", kChwToHwc, 3);
  else if (pbcOpIsA(op, "linalg.pooling_nchw_max"))
    toChannelsLast(op, "linalg.pooling_nhwc_max", NULL, 0);
  else if (pbcOpIsA(op, "linalg.pooling_nchw_sum"))
    toChannelsLast(op, "linalg.pooling_nhwc_sum", NULL, 0);
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  static const char *const kOps[] = {"linalg.conv_2d_nchw_fchw", "linalg.depthwise_conv_2d_nchw_chw",
                                     "linalg.pooling_nchw_max", "linalg.pooling_nchw_sum"};
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); ++i)
    pbcOpListRewriteEach(func, kOps[i], convert);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcChannelsLastPass, "pbc-channels-last", "func.func",
                           "Run channels-first convolutions and poolings channels-last", run);
