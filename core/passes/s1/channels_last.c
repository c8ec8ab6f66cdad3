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

/* `v` transposed: at compile time if it is a constant; else a
 * linalg.transpose, marked for pbc-sink-transposes if `mark`. */
static MlirValue transpose(MlirOperation before, MlirValue v, const int64_t *perm, int rank,
                           bool mark) {
  MlirValue folded = pbcTransposedConstant(before, v, perm, rank);
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
