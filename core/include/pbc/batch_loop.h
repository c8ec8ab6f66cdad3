/*===- pbc/batch_loop.h - One compile for every batch size ---------------===*\
|* An entry whose inputs have a dynamic leading size (tensor<?x...>: the    *|
|* batch) and whose program computes each batch element from that element  *|
|* alone (convolutions, matmuls over rows, elementwise ops, poolings,      *|
|* reductions over other dimensions; nothing reduces over the batch, mixes *|
|* batch elements, or reads the batch's size or index) is compiled once,   *|
|* for a batch of one, and called once per element by a loop in the        *|
|* library's glue: `_mlir_ciface_F` takes descriptors of any batch size n   *|
|* (the same for every `?`, checked: a mismatch traps) and its results have *|
|* n as their leading size too. Its signature reports the batch as         *|
|* PBC_DYNAMIC_SIZE.                                                        *|
|*                                                                          *|
|* Whether a program separates so is proven on the program specialized at  *|
|* a size no other dimension has, by following the batch dimension through *|
|* every op (linalg's indexing maps after generalization, the reshapes,    *|
|* slices, pads, concatenations, softmax; the batch merged with the        *|
|* dimensions after it keeps a factor); the dynamic program may read the   *|
|* batch's size only for shapes, and the program specialized at batch one  *|
|* must be the probe's but for that size. Anything else is a located error *|
|* naming the op: `--shape` or `--dim` then compiles it for given sizes.   *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_BATCH_LOOP_H
#define PBC_BATCH_LOOP_H

#include <stdbool.h>

#include "mlir-c/IR.h"
#include "pbc/entry_sig.h"

/* The suffix of the batch-of-one function the glue calls per element. */
#define PBC_BATCH_SLICE_SUFFIX "__pbc_slice"

/* Makes every public function of m with dynamic sizes a batch-looped entry:
 * proves it separates (else a located error and false), specializes m at a
 * batch of one and renames each such function F to F__pbc_slice. sigs
 * (capacity max) receive the entries as callers see them, the batch as
 * PBC_DYNAMIC_SIZE; *numSigs their count. A module without dynamic entries
 * is untouched (its sigs collected). */
bool pbcBatchLoopPrepare(MlirModule m, PbcEntrySig *sigs, int max, int *numSigs);

/* Whether sig is a batch-looped entry (a PBC_DYNAMIC_SIZE in it). */
bool pbcEntrySigIsBatched(const PbcEntrySig *sig);

#endif
