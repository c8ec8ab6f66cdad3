/*===- pbc/marks.h - The marks passes leave for later passes -------------===*\
|* Passes talk through discardable attributes on ops (mostly affine.for).    *|
|* Every mark is declared here with its value, who sets it and who reads     *|
|* it; code names marks only through these macros, so `grep PBC_MARK_X`     *|
|* finds every party to one. The S2 and S3 contracts (pbc-verify-stage)      *|
|* require pbc.kind on every root loop.                                      *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_MARKS_H
#define PBC_MARKS_H

/* String: a loop nest's kind (matmul, conv, pointwise, reduction, copy...),
 * on the nest's root loop.
 * Set: pbc-classify-nests (S2), pbcNestSetKind (passes that build nests),
 * pbc-fuse-attention (in the text of the nests it parses: `attention`).
 * Moved to a nest's new root by pbc-tile, pbc-register-tile,
 * pbc-parallelize, pbc-vectorize-reductions; dropped by pbc-fuse-epilogue
 * on a fused slice. Read: pbcNestKindIs (most S3 passes), pbc-tile,
 * pbc-parallelize, pbc-vectorize-reductions, pbc-verify-stage. */
#define PBC_MARK_KIND "pbc.kind"

/* Unit: a loop over static blocks of a run-time size (a sequence in
 * blocks of 64 rows); its body is a static nest. Set: pbc-block-symbolic.
 * Read: pbc-tile (tiles the nest in it), pbc-parallelize (descends into
 * it, to the static nest's parallel loops). */
#define PBC_MARK_BLOCKS "pbc.blocks"

/* Unit: this loop's iterations are independent (proved by the pass that
 * marks it, so later passes need not prove it again).
 * Set: pbc-tile, pbc-register-tile, pbc-fuse-slices, pbc-fuse-rows,
 * pbc-fuse-attention.
 * Read: pbc-parallelize (removes it), pbc-absorb-fill. */
#define PBC_MARK_PARALLEL "pbc.parallel"

/* Unit: a nest that only copies (packing, transposed inputs, interleaved
 * channels), parallelized and cost-modelled as a copy.
 * Set: pbc-pack (through pbcExtAffineDataCopy), pbc-transpose-input (of
 * pbc-tile), pbc-interleave, pbc-dot-i8 (its panel relayout),
 * pbc-parallelize (on the parallel loop it makes). Read: pbc-transpose-copies, pbc-parallelize, pbc-pack,
 * affine_access.c (a copy's loops are not the key nest's). */
#define PBC_MARK_COPY "pbc.copy"

/* Unit: vectorize this loop. Set: pbc-tile, pbc-register-tile,
 * pbc-interleave. Read: pbc-vectorize (removes it), pbc-register-tile,
 * pbc-interleave. */
#define PBC_MARK_VECTORIZE "pbc.vectorize"

/* Integer: the register tile (rows on the I loop, columns on the J loop)
 * pbc-tile chose. Set: pbc-tile. Read: pbc-register-tile (removes it). */
#define PBC_MARK_REGISTER_TILE "pbc.register_tile"

/* Unit: pack the operands of the key nest that vary in this loop, here.
 * Set: pbc-tile. Read: pbc-pack (removes it). */
#define PBC_MARK_PACK_SITE "pbc.pack_site"

/* On a load: pack its memref transposed (B read across the vector loop).
 * Set: pbc-tile (removes it again where it transposes the input itself).
 * Read: pbc-pack (removes it). */
#define PBC_MARK_PACK_TRANSPOSED "pbc.pack_transposed"

/* Unit: unroll and jam this loop. Set: pbc-register-tile.
 * Read: pbc-unroll-jam (removes it). */
#define PBC_MARK_UNROLL_JAM "pbc.unroll_jam"

#endif
