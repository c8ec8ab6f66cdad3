/*===- transpose_input.h - Transposed copies of key-nest inputs ------===*\
|* An input a key nest reads across its vector loop (K in Q·Kᵀ) is copied    *|
|* once into a buffer whose last dimension follows that loop, so the nest    *|
|* becomes an ordinary, vectorizable matmul. Used by pbc-tile.               *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_TRANSPOSE_INPUT_H
#define PBC_TRANSPOSE_INPUT_H

#include "pbc/affine_access.h"

/* The dimension of acc's memref that `loop` (a loop of the nest `root`)
 * walks with unit stride, if a transposed copy makes acc contiguous along
 * it: acc is a scalar read of a static, row-major function argument or
 * allocation made outside root, and exactly one subscript, not the last,
 * moves with loop. Else -1. The caller checks that root never writes it. */
int pbcTransposableDim(const PbcAccess *acc, MlirOperation root, MlirOperation loop);

/* Copies acc's memref, before root, into a new buffer with dimension `dim`
 * moved last, and redirects acc to it. The copy is a scalar loop nest
 * marked pbc.copy, kind pointwise, with the input's rows outer
 * (pbc-transpose-copies moves it in blocks through registers); the buffer
 * is freed after root. */
void pbcTransposeInput(const PbcAccess *acc, int dim, MlirOperation root);

/* perm[p]: the dimension at position p once `dim` moves last. */
void pbcDimLastPermutation(int rank, int dim, int *perm);

#endif
