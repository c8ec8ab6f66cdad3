/*===- pbc-ext/affine.h - MLIR affine utilities, callable from C ---------===*\
|* Thin wrappers of MLIR C++ utilities the C API lacks. No policy here: the  *|
|* decisions (which loop, which sizes, when) are made by the C passes that   *|
|* call these. Loops are `affine.for` operations; functions that take a band *|
|* want it outermost first and perfectly nested.                             *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_EXT_AFFINE_H
#define PBC_EXT_AFFINE_H

#include <stdbool.h>
#include <stdint.h>

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/* mlir::isLoopParallel on an affine.for (no reductions). */
bool pbcExtAffineIsLoopParallel(MlirOperation forOp);
/* mlir::affineParallelize: replaces a parallel affine.for by an
 * affine.parallel, which it returns (null on failure). */
MlirOperation pbcExtAffineParallelize(MlirOperation forOp);
/* Constant trip count of an affine.for, or -1 if not constant. */
long long pbcExtAffineConstantTripCount(MlirOperation forOp);

/* mlir::tilePerfectlyNested: tiles band[0..n) by sizes[0..n). On success
 * writes the 2n loops (n tile loops, then n point loops) into `tiled`. */
bool pbcExtAffineTile(MlirOperation *band, int n, const unsigned *sizes,
                      MlirOperation *tiled);
/* mlir::isValidLoopInterchangePermutation then mlir::permuteLoops: loop
 * band[i] moves to position perm[i]. Returns false (and changes nothing) if
 * dependences forbid the permutation. */
bool pbcExtAffinePermute(MlirOperation *band, int n, const unsigned *perm);
/* mlir::permuteLoops alone, for a permutation the caller has proven legal
 * (e.g. two adjacent parallel loops): MLIR's check computes every pairwise
 * dependence of the nest at every depth, most of pbc-register-tile's time. */
void pbcExtAffinePermuteLegal(MlirOperation *band, int n, const unsigned *perm);
/* mlir::affine::vectorizeAffineLoopNest on one loop whose iter_args are all
 * reductions MLIR recognizes (isLoopParallel's LoopReduction list), by
 * `lanes`: a vector accumulator and a vector.reduction after the loop.
 * Returns false (IR unchanged) if it does not apply. */
bool pbcExtAffineVectorizeReduction(MlirOperation forOp, int64_t lanes);
/* mlir::loopUnrollJamByFactor. */
bool pbcExtAffineUnrollJam(MlirOperation forOp, uint64_t factor);
/* mlir::loopUnrollFull (the loop is erased; iter_args are chained through the
 * copies). */
bool pbcExtAffineUnrollFull(MlirOperation forOp);
/* mlir::affineDataCopyGenerate on the body of `forOp` for `memref` only,
 * with point-wise copies into buffers of memory space `fastSpace` (placed at
 * the outermost position where the copied region is invariant). Each copy
 * nest's root gets the unit attribute `markAttr` (if not NULL). */
bool pbcExtAffineDataCopy(MlirOperation forOp, MlirValue memref,
                          unsigned slowSpace, unsigned fastSpace,
                          const char *markAttr);
/* LoopLikeOpInterface::replaceWithAdditionalYields on an affine.for: adds n
 * iter_args initialised with inits[i] whose yielded values are yields[i]
 * (values visible at the end of the body). Returns the new loop (the old one
 * is erased); its new region arguments and results are the last n. */
MlirOperation pbcExtAffineForAddIterArgs(MlirOperation forOp, int n,
                                         const MlirValue *inits,
                                         const MlirValue *yields);

#ifdef __cplusplus
}
#endif
#endif
