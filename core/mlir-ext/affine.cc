// Thin C wrappers of MLIR's affine analysis and loop utilities (see
// pbc-ext/affine.h). No heuristics here.
#include "pbc-ext/affine.h"

#include "mlir/CAPI/IR.h"
#include "mlir/Dialect/Affine/Analysis/AffineAnalysis.h"
#include "mlir/Dialect/Affine/Analysis/LoopAnalysis.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/Utils.h"

using namespace mlir;
using namespace mlir::affine;

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
