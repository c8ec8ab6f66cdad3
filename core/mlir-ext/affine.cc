// Thin C wrappers of MLIR's affine analysis and loop utilities (see
// pbc-ext/affine.h). No heuristics here.
#include "pbc-ext/affine.h"

#include "mlir/CAPI/IR.h"
#include "mlir/Dialect/Affine/Analysis/AffineAnalysis.h"
#include "mlir/Dialect/Affine/Analysis/LoopAnalysis.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/LoopUtils.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::affine;

static SmallVector<AffineForOp> unwrapBand(MlirOperation *band, int n) {
  SmallVector<AffineForOp> loops;
  for (int i = 0; i < n; ++i) {
    auto loop = dyn_cast_or_null<AffineForOp>(unwrap(band[i]));
    if (!loop)
      return {};
    loops.push_back(loop);
  }
  return loops;
}

bool pbcExtAffineIsLoopParallel(MlirOperation forOp) {
  auto loop = dyn_cast<AffineForOp>(unwrap(forOp));
  return loop && isLoopParallel(loop);
}

MlirOperation pbcExtAffineParallelize(MlirOperation forOp) {
  auto loop = dyn_cast<AffineForOp>(unwrap(forOp));
  AffineParallelOp result;
  if (!loop || failed(affineParallelize(loop, {}, &result)))
    return wrap(static_cast<Operation *>(nullptr));
  return wrap(result.getOperation());
}

long long pbcExtAffineConstantTripCount(MlirOperation forOp) {
  auto loop = dyn_cast<AffineForOp>(unwrap(forOp));
  if (!loop)
    return -1;
  std::optional<uint64_t> n = getConstantTripCount(loop);
  return n ? static_cast<long long>(*n) : -1;
}

bool pbcExtAffineTile(MlirOperation *band, int n, const unsigned *sizes,
                      MlirOperation *tiled) {
  SmallVector<AffineForOp> loops = unwrapBand(band, n);
  if ((int)loops.size() != n || !isPerfectlyNested(loops))
    return false;
  SmallVector<AffineForOp> out;
  if (failed(tilePerfectlyNested(loops, ArrayRef<unsigned>(sizes, n), &out)))
    return false;
  for (size_t i = 0; i < out.size(); ++i)
    tiled[i] = wrap(out[i].getOperation());
  return true;
}

bool pbcExtAffinePermute(MlirOperation *band, int n, const unsigned *perm) {
  SmallVector<AffineForOp> loops = unwrapBand(band, n);
  if ((int)loops.size() != n || !isPerfectlyNested(loops))
    return false;
  ArrayRef<unsigned> permMap(perm, n);
  if (!isValidLoopInterchangePermutation(loops, permMap))
    return false;
  permuteLoops(loops, permMap);
  return true;
}

void pbcExtAffinePermuteLegal(MlirOperation *band, int n, const unsigned *perm) {
  SmallVector<AffineForOp> loops = unwrapBand(band, n);
  if ((int)loops.size() == n && isPerfectlyNested(loops))
    permuteLoops(loops, ArrayRef<unsigned>(perm, n));
}

bool pbcExtAffineUnrollJam(MlirOperation forOp, uint64_t factor) {
  auto loop = dyn_cast<AffineForOp>(unwrap(forOp));
  return loop && succeeded(loopUnrollJamByFactor(loop, factor));
}

bool pbcExtAffineUnrollFull(MlirOperation forOp) {
  auto loop = dyn_cast<AffineForOp>(unwrap(forOp));
  return loop && succeeded(loopUnrollFull(loop));
}

bool pbcExtAffineDataCopy(MlirOperation forOp, MlirValue memref,
                          unsigned slowSpace, unsigned fastSpace,
                          const char *markAttr) {
  auto loop = dyn_cast<AffineForOp>(unwrap(forOp));
  if (!loop)
    return false;
  AffineCopyOptions options = {/*generateDma=*/false, slowSpace, fastSpace,
                               /*tagMemorySpace=*/0,
                               /*fastMemCapacityBytes=*/UINT64_MAX};
  DenseSet<Operation *> copyNests;
  if (failed(affineDataCopyGenerate(loop, options, unwrap(memref), copyNests)))
    return false;
  if (markAttr)
    for (Operation *nest : copyNests)
      nest->setAttr(markAttr, UnitAttr::get(nest->getContext()));
  return true;
}

MlirOperation pbcExtAffineForAddIterArgs(MlirOperation forOp, int n,
                                         const MlirValue *inits,
                                         const MlirValue *yields) {
  auto loop = dyn_cast<AffineForOp>(unwrap(forOp));
  if (!loop)
    return wrap(static_cast<Operation *>(nullptr));
  SmallVector<Value> initValues, yieldValues;
  for (int i = 0; i < n; ++i) {
    initValues.push_back(unwrap(inits[i]));
    yieldValues.push_back(unwrap(yields[i]));
  }
  IRRewriter rewriter(loop->getContext());
  rewriter.setInsertionPoint(loop);
  FailureOr<LoopLikeOpInterface> result = loop.replaceWithAdditionalYields(
      rewriter, initValues, /*replaceInitOperandUsesInLoop=*/false,
      [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
        return yieldValues;
      });
  if (failed(result))
    return wrap(static_cast<Operation *>(nullptr));
  return wrap(result->getOperation());
}

bool pbcExtAffineVectorizeReduction(MlirOperation forOp, int64_t lanes) {
  auto loop = dyn_cast<AffineForOp>(unwrap(forOp));
  SmallVector<LoopReduction> reductions;
  if (!loop || loop.getNumIterOperands() == 0 || !isLoopParallel(loop, &reductions) ||
      reductions.size() != loop.getNumIterOperands())
    return false;
  VectorizationStrategy strategy;
  strategy.vectorSizes.push_back(lanes);
  strategy.loopToVectorDim[loop] = 0;
  strategy.reductionLoops[loop] = reductions;
  std::vector<SmallVector<AffineForOp, 2>> loops = {{loop}};
  return succeeded(vectorizeAffineLoopNest(loops, strategy));
}
