/* skinny_gemm.h — the GEMMs pbc-tile plans as skinny: so few rows (a batch-1
 * to batch-32 linear layer, a GEMV) that B's traffic, not the FMAs, is their
 * time, or that B's copies would cost more than the GEMM. pbc-tile reads B
 * in place, unpacked, in register tiles over all rows (B as K x N) or over
 * up to 8 of them (B as N x K, read along K: dot products); pbc-pad-gemm
 * leaves their rows unpadded (padding 1 row to 8 did 8 times the work) and
 * pads only the last partial vector of columns, or nothing for dot products.
 */
#ifndef PBC_SKINNY_GEMM_H
#define PBC_SKINNY_GEMM_H

#include <stdbool.h>

#include "pbc/affine_access.h"

/* Rows of a skinny GEMM's register tile. B as K x N: all of them, up to
 * 8. With `dot` (B read along K), up to 32 rows: all of them up to 8 (one
 * tile reads each row of B once); from 9 on, rows that divide them, 2 to 8:
 * the most if A's rows fit L1 (`aFitsL1`: B's rows are then reused from
 * L1 by few tiles), else the fewest, since every tile re-reads A from L2 and
 * a tile is best few rows of A by many rows of B (2 x 8 vectors).
 * 16x1024x1024 (A 64 KiB): 8 rows 0.134 ms, 4 rows 0.108, 2 rows 0.100;
 * 32x1024x1024: 0.335, 0.203, 0.183; 12x1000x512 (A 24 KiB): 6 rows 0.039,
 * 2 rows 0.044. At 16-32 rows this beats the transposed copy of B 1.5-3x
 * where B is larger than L2, and is within 15% of it either way below (at
 * 64 rows it wins or loses by B's size). 0: not skinny. */
static inline int pbcSkinnyRowTile(long long rows, bool dot, bool aFitsL1) {
  if (rows <= 8)
    return (int)rows;
  for (int i = 0; dot && rows <= 32 && i <= 6; ++i)
    if (rows % (aFitsL1 ? 8 - i : 2 + i) == 0)
      return aFitsL1 ? 8 - i : 2 + i;
  return 0;
}

/* Rows of the register tile for dot products along K (B read along K), A
 * being rows x kTrip elements: as pbcSkinnyRowTile, if K's trip takes
 * vectors of at least 2 lanes (the dot products are vectorized along K);
 * else 0. Whether it is 0 does not depend on `l1Bytes` (0 for callers that
 * only ask whether a GEMM is skinny). */
static inline int pbcSkinnyDotRowTile(long long rows, long long kTrip, int vectorBits, int elemBits,
                                      long long l1Bytes) {
  bool aFitsL1 = rows * kTrip * (elemBits / 8) <= l1Bytes;
  return pbcVectorLanes(vectorBits, elemBits, kTrip) >= 2 ? pbcSkinnyRowTile(rows, true, aFitsL1)
                                                          : 0;
}

#endif
