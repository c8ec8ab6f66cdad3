/* skinny_gemm.h — the GEMMs pbc-tile plans as skinny: so few rows (a batch-1
 * to batch-32 linear layer, a GEMV) that B's traffic, not the FMAs, is their
 * time, or that B's copies would cost more than the GEMM. pbc-tile reads B
 * in place, unpacked, in register tiles over all rows (B as K x N) or over
 * 4 to 8 of them (B as N x K, read along K: dot products); pbc-pad-gemm
 * leaves their rows unpadded (padding 1 row to 8 did 8 times the work) and
 * pads only the last partial vector of columns, or nothing for dot products.
 */
#ifndef PBC_SKINNY_GEMM_H
#define PBC_SKINNY_GEMM_H

#include <stdbool.h>

#include "pbc/affine_access.h"

/* Rows of a skinny GEMM's register tile (B as K x N: all of them, up to 8);
 * with `dot` (B read along K) up to 32 rows in tiles of 4 to 8, which reuse
 * the tile's rows of B from L1 (transposed B at 16-32 rows: 2-10x faster
 * than a transposed copy of B; at 64, 128 rows the copy won). 0: not
 * skinny. */
static inline int pbcSkinnyRowTile(long long rows, bool dot) {
  if (rows <= 8)
    return (int)rows;
  for (int m = 8; dot && rows <= 32 && m >= 4; --m)
    if (rows % m == 0)
      return m;
  return 0;
}

/* Rows of the register tile for dot products along K (B read along K):
 * as pbcSkinnyRowTile, if K's trip takes vectors of at least 2 lanes (the
 * dot products are vectorized along K); else 0. */
static inline int pbcSkinnyDotRowTile(long long rows, long long kTrip, int vectorBits,
                                      int elemBits) {
  return pbcVectorLanes(vectorBits, elemBits, kTrip) >= 2 ? pbcSkinnyRowTile(rows, true) : 0;
}

#endif
