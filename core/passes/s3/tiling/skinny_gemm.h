/* skinny_gemm.h — the GEMMs pbc-tile plans as skinny: so few rows (a batch-1
 * to batch-32 linear layer, a GEMV; to batch-64 with a large weight) that B's traffic, not the
 * FMAs, is their time, or that B's copies would cost more than the GEMM. pbc-tile reads B in place,
 * unpacked, in register tiles over up to 8 rows (all of them up to 8), B as K x N or as N x K
 * (read along K: dot products); pbc-pad-gemm leaves their rows unpadded (padding 1 row to 8 did 8
 * times the work) and pads only the last partial vector of columns, or nothing for dot products.
 */
#ifndef PBC_SKINNY_GEMM_H
#define PBC_SKINNY_GEMM_H

#include <stdbool.h>

#include "pbc/affine_access.h"

/* Rows of a skinny GEMM's register tile. B as K x N (`dotRows` 0): all of
 * them, up to 8. With B read along K (dot products), up to `dotRows` rows:
 * all of them up to 8 (one tile reads each row of B once); from 9 on, rows
 * that divide them, 2 to 8: the most if A's rows fit L1 (`aFitsL1`: B's
 * rows are then reused from L1 by few tiles), else the fewest, since every
 * tile re-reads A from L2 and a tile is best few rows of A by many rows of
 * B (2 x 8 vectors). 0: not skinny. */
static inline int pbcSkinnyRowTile(long long rows, long long dotRows, bool aFitsL1) {
  if (rows <= 8)
    return (int)rows;
  for (int i = 0; rows <= dotRows && i <= 6; ++i)
    if (rows % (aFitsL1 ? 8 - i : 2 + i) == 0)
      return aFitsL1 ? 8 - i : 2 + i;
  return 0;
}

/* Rows of the register tile for dot products along K (B, of `bBytes`, read
 * along K), A being rows x kTrip elements: as pbcSkinnyRowTile, if K's trip
 * takes vectors of at least 2 lanes (the dot products are vectorized along
 * K); else 0. Up to 32 rows, or 64 where B is larger than a quarter of L3.
 * Against packing B's blocks transposed (pbc/oneDNN time, paired): at 16-32
 * rows dot products win 1.2-2x (16x4096x1024 0.27 -> 0.13, 32x768x768 within
 * noise); at 48-64 rows they win where B streams from memory and lose where
 * it stays in L3 (64x4096x1024, 16 MiB: 0.43 -> 0.37, 48 rows 0.37 -> 0.30;
 * 64x1024x1024, 4 MiB: 0.37 both; 64x768x768, 2.3 MiB: 0.80 -> 0.92). Whether
 * it is 0 does not depend on `l1Bytes` (0 for callers that only ask whether
 * a GEMM is skinny). */
static inline int pbcSkinnyDotRowTile(long long rows, long long kTrip, long long bBytes,
                                      int vectorBits, int elemBits, long long l1Bytes,
                                      long long l3Bytes) {
  bool aFitsL1 = rows * kTrip * (elemBits / 8) <= l1Bytes;
  long long dotRows = bBytes > l3Bytes / 4 ? 64 : 32;
  return pbcVectorLanes(vectorBits, elemBits, kTrip) >= 2 ? pbcSkinnyRowTile(rows, dotRows, aFitsL1)
                                                          : 0;
}

/* Rows of the register tile for B as K x N, read across J: all rows up to
 * 8; from 9 to 32 rows, the most rows (8 down to 2) that divide them. The
 * tall tiles keep the FMA pipes busy, and each core's K x NR panel of B is
 * read from memory once and reread from L2 by its other row tiles, where
 * the blocked plan's packing of B costs a pass over B more and splits the
 * few rows over the cores, each reading all of B (pbc/oneDNN time, paired:
 * 16x1000x2048 1.84 -> 0.97, 12x1000x2048 2.1 -> 0.91, 32x3072x768 1.75
 * -> 0.95, 20x1024x1024 1.55 -> 0.88). From 48 rows on (48x4096x1024,
 * 64x1000x2048) the blocked plan wins. 0: not skinny. */
static inline int pbcSkinnyKnRowTile(long long rows) { return pbcSkinnyRowTile(rows, 32, true); }

/* Rows of B (as K x N) per load and store of a GEMV's partial vector when
 * the cores split its rows (split_gemv.h). */
enum { kPbcGemvSplitRows = 4 };

/* Whether pbc-tile splits a GEMV's reduction between the cores
 * (split_gemv.h): one row of A, B as K x N larger than L2 (it streams from
 * L3 or memory, so its traffic is the GEMV's time), C's elements of 32 bits
 * or more (`cBits`: sums in f16 or bf16 depend too much on their order), a
 * partial row of C (rowBytes) within a quarter of L1 (it is loaded and
 * stored once per kPbcGemvSplitRows rows of B while B's lines pass through
 * L1), K a multiple of cores * kPbcGemvSplitRows. pbc-pad-gemm then leaves
 * the last partial vector of columns to pbc-tile, which sweeps it within
 * each core's rows. */
static inline bool pbcGemvSplitsK(long long rows, long long kTrip, int cBits, long long rowBytes,
                                  long long bBytes, int cores, long long l1Bytes,
                                  long long l2Bytes) {
  return rows == 1 && cores >= 2 && cBits >= 32 && bBytes > l2Bytes &&
         rowBytes <= l1Bytes / 4 && kTrip % (cores * kPbcGemvSplitRows) == 0;
}

#endif
