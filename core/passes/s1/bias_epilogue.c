/* pbc-bias-epilogue: a contraction (matmul, batch matmul, convolution)
 * whose accumulator starts as a broadcast B of a bias,
 *   %b = linalg.generic ins(%bias) outs(%e) { yield %in }     (broadcast)
 *   %c = linalg.conv_2d_nhwc_hwcf ins(...) outs(%b)
 * starts at zero instead, and the bias is added after it:
 *   %b = linalg.generic ins(%bias) outs(%e) { yield 0.0 }
 *   %c = linalg.conv_2d_nhwc_hwcf ins(...) outs(%b)
 *   %d = linalg.generic ins(%c, %bias) outs(%e2) { yield %c + %bias }
 * and %d replaces %c's other uses.
 *
 * Why: this is how frontends write a layer with a bias (the bridge, and
 * torch-mlir, for every convolution and linear layer). In S3 the broadcast
 * is a nest of its own that writes the whole output once more (serially: a
 * store-only nest does too little work per element for pbc-parallelize),
 * and the contraction's micro kernels load their accumulators from it, so
 * pbc-fuse-epilogue, which needs an output that the contraction only
 * writes, keeps the activation after it in another pass over the output.
 * Started at zero, the fill is absorbed into the accumulators
 * (pbc-absorb-fill), and the bias add, with the activation after it,
 * becomes the contraction's epilogue, applied to each tile while it is in
 * registers. Floating-point sums only (the named contractions accumulate
 * with addf; the order of the additions changes: bias last).
 *
 * Applies when B is an all-parallel linalg.generic with one input read
 * through a projected permutation, an identity output map and a body that
 * yields the input, B's result is used only as the contraction's init, and
 * the contraction is one of the named ops below with a float result. */
#include <string.h>

#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/op_list.h"
#include "passes/passes.h"
#include "passes/s1/layout.h"

/* Named ops that compute out += (products): the output is their last operand. */
static const char *const kContractions[] = {
    "linalg.matmul",
    "linalg.batch_matmul",
    "linalg.conv_1d_nwc_wcf",
    "linalg.conv_2d_nhwc_hwcf",
    "linalg.conv_2d_nhwc_fhwc",
    "linalg.conv_2d_nchw_fchw",
    "linalg.conv_3d_ndhwc_dhwcf",
    "linalg.depthwise_conv_2d_nhwc_hwc",
    "linalg.depthwise_conv_2d_nchw_chw",
};

static bool isContraction(MlirOperation op) {
  for (size_t i = 0; i < sizeof(kContractions) / sizeof(kContractions[0]); ++i)
    if (pbcOpIsA(op, kContractions[i]))
      return true;
  return false;
}

static MlirBlock bodyOf(MlirOperation g) {
  return mlirRegionGetFirstBlock(mlirOperationGetRegion(g, 0));
}

/* The block's terminator (linalg.yield). */
static MlirOperation yieldOf(MlirBlock b) { return mlirBlockGetTerminator(b); }

/* B: linalg.generic, all parallel, ins(x) outs(y), x through a projected
 * permutation, y through the identity, body `yield %x`. */
static bool isBroadcast(MlirOperation b, MlirAttribute parallel) {
  if (!pbcOpIsA(b, "linalg.generic") || mlirOperationGetNumOperands(b) != 2 ||
      mlirOperationGetNumResults(b) != 1)
    return false;
  MlirAttribute maps = mlirOperationGetAttributeByName(b, pbcStr("indexing_maps"));
  MlirAttribute iters = mlirOperationGetAttributeByName(b, pbcStr("iterator_types"));
  if (mlirAttributeIsNull(maps) || mlirAttributeIsNull(iters) ||
      mlirArrayAttrGetNumElements(maps) != 2)
    return false;
  for (intptr_t i = 0; i < mlirArrayAttrGetNumElements(iters); ++i)
    if (!mlirAttributeEqual(mlirArrayAttrGetElement(iters, i), parallel))
      return false;
  MlirAffineMap in = mlirAffineMapAttrGetValue(mlirArrayAttrGetElement(maps, 0));
  MlirAffineMap out = mlirAffineMapAttrGetValue(mlirArrayAttrGetElement(maps, 1));
  if (!mlirAffineMapIsProjectedPermutation(in) || !mlirAffineMapIsIdentity(out))
    return false;
  MlirBlock body = bodyOf(b);
  MlirOperation y = yieldOf(body);
  return mlirOperationEqual(mlirBlockGetFirstOperation(body), y) &&
         mlirOperationGetNumOperands(y) == 1 &&
         mlirValueEqual(mlirOperationGetOperand(y, 0), mlirBlockGetArgument(body, 0));
}

/* `v` has exactly one use, by `user`. */
static bool onlyUsedBy(MlirValue v, MlirOperation user) {
  MlirOpOperand u = mlirValueGetFirstUse(v);
  return !mlirOpOperandIsNull(u) && mlirOpOperandIsNull(mlirOpOperandGetNextUse(u)) &&
         mlirOperationEqual(mlirOpOperandGetOwner(u), user);
}

static void rewrite(MlirOperation b, MlirOperation c) {
  MlirContext ctx = mlirOperationGetContext(c);
  MlirLocation loc = mlirOperationGetLocation(c);
  MlirValue result = mlirOperationGetResult(c, 0);
  MlirType type = mlirValueGetType(result);
  MlirType elem = mlirShapedTypeGetElementType(type);
  MlirValue bias = mlirOperationGetOperand(b, 0);
  MlirType biasElem = mlirShapedTypeGetElementType(mlirValueGetType(bias));
  /* After c, into a fresh tensor (not in place: pbc-fuse then forwards the
   * sum to the activation, and the sum's buffer goes):
   *   %d = linalg.generic ins(%c, %bias) outs(%empty) { yield %c + %bias } */
  MlirOperation next = mlirOperationGetNextInBlock(c);
  /* A dynamic size (symbolic sizes) is read from c's result. */
  MlirValue sizes[8];
  MlirOperation except[9];
  int numSizes = 0;
  for (intptr_t d = 0; d < mlirShapedTypeGetRank(type) && numSizes < 8; ++d)
    if (mlirShapedTypeIsDynamicDim(type, d)) {
      MlirValue dimOps[2] = {result, pbcBuildIndexConstant(next, d)};
      except[numSizes] = pbcBuildOp(next, "tensor.dim", 2, dimOps, mlirIndexTypeGet(ctx), 0, NULL);
      sizes[numSizes] = mlirOperationGetResult(except[numSizes], 0);
      ++numSizes;
    }
  MlirValue operands[3] = {result, bias,
                           mlirOperationGetResult(pbcBuildOp(next, "tensor.empty", numSizes, sizes,
                                                             type, 0, NULL), 0)};
  MlirAttribute bMaps = mlirOperationGetAttributeByName(b, pbcStr("indexing_maps"));
  MlirAttribute identity = mlirArrayAttrGetElement(bMaps, 1);
  MlirAttribute maps[3] = {identity, mlirArrayAttrGetElement(bMaps, 0), identity};
  MlirType argTypes[3] = {elem, biasElem, elem};
  MlirLocation argLocs[3] = {loc, loc, loc};
  MlirBlock body = mlirBlockCreate(3, argTypes, argLocs);
  MlirValue sumOps[2] = {mlirBlockGetArgument(body, 0), mlirBlockGetArgument(body, 1)};
  MlirValue sum = mlirOperationGetResult(pbcAppendOp(body, "arith.addf", 2, sumOps, elem, loc), 0);
  pbcAppendOp(body, "linalg.yield", 1, &sum, (MlirType){NULL}, loc);
  MlirRegion region = mlirRegionCreate();
  mlirRegionAppendOwnedBlock(region, body);
  MlirOperation add = pbcBuildLinalgGeneric(
      next, 2, operands, type, mlirArrayAttrGet(ctx, 3, maps),
      mlirOperationGetAttributeByName(b, pbcStr("iterator_types")), region);
  except[numSizes] = add; /* and the size reads: they stay on c's result */
  mlirValueReplaceAllUsesExcept(result, mlirOperationGetResult(add, 0), numSizes + 1, except);
  /* B yields zero: a fill. */
  MlirOperation bYield = yieldOf(bodyOf(b));
  mlirOperationSetOperand(bYield, 0, pbcBuildFloatConstant(bYield, elem, 0.0));
}

static MlirWalkResult collect(MlirOperation op, void *data) {
  if (isContraction(op))
    pbcOpListPush(data, op);
  return MlirWalkResultAdvance;
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  MlirAttribute parallel = pbcLinalgParallelIterator(mlirOperationGetContext(func));
  PbcOpList l = {0};
  mlirOperationWalk(func, collect, &l, MlirWalkPreOrder);
  for (int i = 0; i < l.n; ++i) {
    MlirOperation c = l.ops[i];
    intptr_t n = mlirOperationGetNumOperands(c);
    if (n < 1 || mlirOperationGetNumResults(c) != 1)
      continue;
    MlirValue init = mlirOperationGetOperand(c, n - 1);
    MlirType t = mlirValueGetType(init);
    if (!mlirValueIsAOpResult(init) || !mlirTypeIsARankedTensor(t) ||
        !mlirTypeIsAFloat(mlirShapedTypeGetElementType(t)))
      continue;
    MlirOperation b = mlirOpResultGetOwner(init);
    if (isBroadcast(b, parallel) && onlyUsedBy(init, c))
      rewrite(b, c);
  }
  pbcOpListDestroy(&l);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcBiasEpiloguePass, "pbc-bias-epilogue", "func.func",
                           "Contractions start at zero and add their bias after", run);
