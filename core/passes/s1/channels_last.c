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
#include "pbc/memrefs.h"
#include "pbc/op_list.h"
#include "passes/passes.h"
#include "passes/s1/layout.h"

enum { kMaxRank = 4 };

static const int64_t kToNhwc[4] = {0, 2, 3, 1};
static const int64_t kToNchw[4] = {0, 3, 1, 2};

/* What each channels-first op becomes; its filter (second input) permuted
 * by filterPerm, or passed as is (a pooling's window) if filterRank is 0. */
typedef struct {
  const char *nchw, *nhwc;
  int filterRank;
  int64_t filterPerm[kMaxRank];
} Conversion;

static const Conversion kConversions[] = {
    {"linalg.conv_2d_nchw_fchw", "linalg.conv_2d_nhwc_hwcf", 4, {2, 3, 1, 0}},
    {"linalg.depthwise_conv_2d_nchw_chw", "linalg.depthwise_conv_2d_nhwc_hwc", 3, {1, 2, 0}},
    {"linalg.pooling_nchw_max", "linalg.pooling_nhwc_max", 0, {0}},
    {"linalg.pooling_nchw_sum", "linalg.pooling_nhwc_sum", 0, {0}},
};

/* A dense constant transposed at compile time, or null if `v` is not one
 * this can read (a raw-data dense elements attribute of whole bytes). */
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
    const char *src = mlirDenseElementsAttrGetRawData(value);
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

/* op (channels-first: input, filter or window, one init) -> c->nhwc on
 * transposed operands, its result transposed back. */
static void toChannelsLast(MlirOperation op, const Conversion *c) {
  if (mlirOperationGetNumOperands(op) != 3)
    return;
  MlirValue x = mlirOperationGetOperand(op, 0), w = mlirOperationGetOperand(op, 1),
            init = mlirOperationGetOperand(op, 2);
  if (!staticOfRank(x, 4) || !staticOfRank(init, 4) ||
      (c->filterRank && !staticOfRank(w, c->filterRank)))
    return;
  MlirValue operands[3] = {transpose(op, x, kToNhwc, 4, false),
                           c->filterRank ? transpose(op, w, c->filterPerm, c->filterRank, false) : w,
                           transpose(op, init, kToNhwc, 4, false)};
  MlirContext ctx = mlirOperationGetContext(op);
  MlirNamedAttribute attrs[2];
  int n = 0;
  static const char *const kKept[] = {"strides", "dilations"};
  for (int i = 0; i < 2; ++i) {
    MlirAttribute a = mlirOperationGetAttributeByName(op, pbcStr(kKept[i]));
    if (!mlirAttributeIsNull(a))
      attrs[n++] = pbcNamedAttr(ctx, kKept[i], a);
  }
  MlirType rt = mlirValueGetType(operands[2]);
  MlirOperation nhwc = pbcBuildNamedLinalg(op, c->nhwc, 2, operands, rt, n, attrs);
  MlirValue back = transpose(op, mlirOperationGetResult(nhwc, 0), kToNchw, 4, true);
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), back);
  mlirOperationDestroy(op);
}

static void convert(MlirOperation op) {
  for (size_t i = 0; i < sizeof(kConversions) / sizeof(kConversions[0]); ++i)
    if (pbcOpIsA(op, kConversions[i].nchw)) {
      toChannelsLast(op, &kConversions[i]);
      return;
    }
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  for (size_t i = 0; i < sizeof(kConversions) / sizeof(kConversions[0]); ++i)
    pbcOpListRewriteEach(func, kConversions[i].nchw, convert);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcChannelsLastPass, "pbc-channels-last", "func.func",
                           "Run channels-first convolutions and poolings channels-last", run);
