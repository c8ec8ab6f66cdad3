/*===- pbc/loops.h - Loops -------------------------------------------------===*\
|* Loop helpers: an affine.for's iv, body, step, trip count and bounds,     *|
|* bands of perfectly nested loops, loops in order, copy nests.             *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_LOOPS_H
#define PBC_LOOPS_H

#include <stdbool.h>

#include "mlir-c/IR.h"

MlirValue pbcLoopIv(MlirOperation forOp);
/* Position in loops[0 .. n) of the loop whose induction variable v is, or -1. */
int pbcLoopIndexOf(MlirValue v, const MlirOperation loops[], int n);
MlirBlock pbcLoopBody(MlirOperation forOp);
long long pbcLoopStep(MlirOperation forOp);
/* The trip count of a loop from 0 with step 1 and a constant upper bound
 * (no bound operands), else -1: what tiles indexing from the origin need. */
long long pbcLoopZeroBasedTrip(MlirOperation forOp);
/* True for an affine.for with a constant trip count of at least one: what
 * an op hoisted out of it may assume ran anyway. */
bool pbcLoopRunsAtLeastOnce(MlirOperation forOp);
/* The constant upper bound (> 0) of a loop from 0 (no bound operands), any
 * step, else -1. */
long long pbcLoopUpperFromZero(MlirOperation forOp);
void pbcLoopSetStep(MlirOperation forOp, long long step);
/* Makes the loop's upper bound the constant `ub` (a loop whose bounds
 * have no operands: pbcLoopHasBoundOperands). */
void pbcLoopSetUpperBound(MlirOperation forOp, long long ub);
/* The same for the lower bound. */
void pbcLoopSetLowerBound(MlirOperation forOp, long long lb);
/* True if a bound map of the affine.for takes operands (outer ivs). */
bool pbcLoopHasBoundOperands(MlirOperation forOp);
/* True if op is `ancestor` or nested inside it. */
bool pbcOpIsInside(MlirOperation op, MlirOperation ancestor);
/* True if op is inside a loop marked pbc.copy (a copy nest that
 * pbc-pack, pbc-interleave or a transposed-input copy made). A copy nest's
 * iterations each write elements of its buffer no other iteration writes
 * (its loops walk the buffer's index space, or blocks of it), a contract
 * every pass that makes or rewrites one keeps. */
bool pbcOpIsInCopyNest(MlirOperation op);
/* The outermost pbc.copy loop around `op`, or null. */
MlirOperation pbcCopyNestOf(MlirOperation op);
/* True if `op` comes after `anchor` in anchor's block. */
bool pbcOpFollowsInBlock(MlirOperation op, MlirOperation anchor);
/* True if value is defined (as op result or block argument) inside `op`. */
bool pbcValueIsDefinedInside(MlirValue v, MlirOperation op);
/* Collects the perfectly nested band from `root` (affine.for ops whose body
 * holds one loop and the terminator); returns its depth (<= max). */
int pbcLoopBand(MlirOperation root, MlirOperation *band, int max);
/* Iterations of the perfect band under `root` (the product of its loops'
 * constant trip counts, tile point loops included), or -1 if one is unknown. */
long long pbcBandIterations(MlirOperation root);
/* True if no op in the loop's body has regions (an innermost loop with a
 * straight-line body). */
bool pbcLoopBodyIsFlat(MlirOperation loop);
/* True if the loop's body's only non-terminator op is an affine.for. */
MlirOperation pbcOnlyLoopIn(MlirOperation forOp);
/* Every affine.for under `root`, inner loops first (post-order: a pass may
 * replace a loop when its turn comes; its ancestors come later and stay
 * valid). Returns how many (at most max). */
int pbcLoopsInnerFirst(MlirOperation root, MlirOperation *loops, int max);
/* The same for every loop, however many: a calloc'd array the caller frees,
 * *n loops long (a fixed bound would silently skip a large model's last
 * nests). */
MlirOperation *pbcLoopsInnerFirstAll(MlirOperation root, int *n);

#endif
