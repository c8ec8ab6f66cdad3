/*===- pbc/chain_match.h - Matching chains of nests, nest by nest ----------===*\
|* The pieces the fused-kernel matchers share (the cpu target's attention   *|
|* fusion, analysis/attention_chain.c; the GPU targets' matrix-unit          *|
|* attention, targets/gpu/match_attention.c): each checks one nest of a    *|
|* chain for exactly the computation a fused kernel performs.               *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_CHAIN_MATCH_H
#define PBC_CHAIN_MATCH_H

#include <stdbool.h>

#include "mlir-c/IR.h"

/* The body of a perfect band of `depth` loops from 0, step 1, over the
 * first `depth` dims of the static memref `over`: its band into band[],
 * the innermost body's ops but the terminator into ops[] (at most max);
 * returns their number, or -1. */
int pbcChainBandBody(MlirOperation nest, int depth, MlirValue over, MlirOperation band[],
                     MlirOperation ops[], int max);
/* Whether op is a scalar access (a load, or a store if `write`) of
 * `memref` whose subscripts are band[0..rank)'s indices, in order. */
bool pbcChainAccessByBand(MlirOperation op, MlirValue memref, bool write,
                          const MlirOperation band[]);
/* Whether op's two operands are a's and b's results (either order if
 * `commutes`). */
bool pbcChainOperandsAre(MlirOperation op, MlirOperation a, MlirOperation b, bool commutes);
/* The float constant v holds; NaN with *ok false where it is none. */
double pbcChainFloatConstant(MlirValue v, bool *ok);
/* Whether a and b are static memrefs of one shape (b's first `rank` dims
 * when rank is less than b's rank). */
bool pbcChainSameShape(MlirValue a, MlirValue b, int rank);
/* Ops that may sit between the nests of a chain a kernel fuses: constants
 * and allocations, which take no operands and touch no memory (they can
 * move above the kernel). The op after (or before) `op` in its block, past
 * those; null at the block's end (start). */
bool pbcChainMovable(MlirOperation op);
MlirOperation pbcChainNeighbour(MlirOperation op, bool after);
/* The chain's next nest: the affine.for after `op`, past movable ops and
 * deallocations of the chain's own buffers[0..n) (of any buffer if
 * `buffers` is NULL: a kernel that replaces the chain at its last nest then
 * moves the other frees after itself, pbcChainMoveFreesAfter); null if
 * anything else (or the block's end) comes first. */
MlirOperation pbcChainNextNest(MlirOperation op, const MlirValue *buffers, int n);
/* The deallocations between the first of nests[0..n) and `last` move after
 * `last` (a query block freed after Q Kᵀ, read by the kernel that replaces
 * the chain at `last`; the chain's own buffers go with the chain). */
void pbcChainMoveFreesAfter(const MlirOperation *nests, int n, MlirOperation last);
/* Whether every use of each buffers[i] (the chain's intermediates) lies in
 * one of nests[0..nNests), in `last`, or deallocates it: the kernel that
 * replaces those nests may drop them. */
bool pbcChainBuffersPrivate(const MlirValue *buffers, int n, const MlirOperation *nests,
                            int nNests, MlirOperation last);
/* Whether v is the result of a memref.alloc (a buffer of the function's
 * own). */
bool pbcChainIsAlloc(MlirValue v);

/* What a row reduction combines with. */
typedef enum { kPbcCombSum, kPbcCombMaxNum, kPbcCombMaximum, kPbcCombOther } PbcRowCombiner;
/* R[rows] = comb(X[rows, j], R[rows]) over all of X, j innermost: the
 * combiner into *comb (a sum where !max, else maxnumf or maximumf). */
bool pbcChainRowReduce(MlirOperation nest, MlirValue x, MlirValue r, bool max,
                       PbcRowCombiner *comb);
/* Y = unary?(binary(X, R[rows])) over all of X into a buffer *y of the
 * function's own, of X's element type and shape. */
bool pbcChainRowBroadcast(MlirOperation nest, MlirValue x, MlirValue r, const char *binary,
                          const char *unary, MlirValue *y);
/* A copy nest kt[b, d, j] = K[b, j, d] (the last two subscripts swapped)
 * into an allocation kt, from a static identity-layout K. Returns K, or
 * null. */
MlirValue pbcChainTransposedFrom(MlirOperation nest, MlirValue kt);

#endif
