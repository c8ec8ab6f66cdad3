/*===- split_gemv.h - A GEMV's reduction split between the cores -----===*\
|* A GEMV (one row of A; B as K x N) whose B streams from L3 or memory is   *|
|* bound by reading B. Split by columns, each core reads its half of every  *|
|* row of B: runs of N/2 elements a row apart, one prefetch stream ending   *|
|* and another starting on every row. Split by rows of B instead, each core *|
|* reads one contiguous block (K/cores whole rows, in order) into a partial *|
|* row of C of its own; the partial rows are summed into C afterwards.      *|
|* Used by pbc-tile, which decides where it pays.                           *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_SPLIT_GEMV_H
#define PBC_SPLIT_GEMV_H

#include <stdbool.h>

#include "mlir-c/IR.h"

/* Rewrites the GEMV nest band[0..3) = [i j k] (band[0] its root, i of trip
 * 1, one floating-point accumulation C[i, j] += ... in the body, loaded and
 * stored at identity subscripts (i, j); k's trip a multiple of parts *
 * kRows) into
 *   P = alloc(parts x 1 x N', N' = N rounded up to whole vectors)
 *   for t in [0, parts) (pbc.parallel; the root, of band[0]'s kind):
 *     P[t] = 0
 *     for kT in rows [t * K / parts, (t + 1) * K / parts) by kRows:
 *       for i, j (pbc.vectorize; whole vectors of `lanes`, then the rest
 *                 in a second j loop): for k in kT's kRows rows:
 *         P[t, i, j] += ...
 *   C[i, j] += P[0, i, j] + ... + P[parts - 1, i, j]  (kind pointwise)
 *   dealloc P
 * Each kT step then loads and stores a vector of P once per kRows rows of
 * B. False (nothing changed) if the nest does not have that form, or C's
 * elements are narrower than f32 (their sums depend too much on order). */
bool pbcSplitGemvK(MlirOperation band[3], int parts, int kRows, int lanes);

#endif
