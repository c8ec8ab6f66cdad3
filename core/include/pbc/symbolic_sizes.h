/*===- pbc/symbolic_sizes.h - One compile for every size, by symbols -----===*\
|* An entry with dynamic sizes that the batch loop does not take (a         *|
|* sequence length, a batch that attention or a reduction mixes) is        *|
|* compiled with its sizes left open: the stages see `tensor<?x...>` and    *|
|* later `memref<?x...>`, and the code reads the sizes from the call's      *|
|* descriptors.                                                             *|
|*                                                                          *|
|* Each `?` of the inputs gets a size symbol: one per `?` when the program  *|
|* holds at any sizes, else one per dimension position (every input's      *|
|* dimension 1 is the sequence), else one for all. Which holds is proven on *|
|* the program specialized at two sets of probe sizes (a distinct prime per *|
|* symbol; large ones first, smaller where the program's tables bound its   *|
|* sizes): it must fold to static shapes at both, and every result's `?`    *|
|* must be a symbol's size at both (a result whose size is computed from    *|
|* the inputs' is refused: its caller could not allocate it).              *|
|*                                                                          *|
|* Every read of a symbol's size is then one value, max(size, 1) (a size is *|
|* at least 1), so importers' checks between sizes fold. A symbol that     *|
|* slices a static table (BERT's 512 positions) gets that largest size; a  *|
|* slice of a static dimension by a size computed otherwise is refused (no *|
|* largest size known). Importers' checks that have not folded are decided *|
|* over every size up to the largest ones: erased if they hold at all,     *|
|* else refused (naming the size where one fails).                          *|
|*                                                                          *|
|* The signature reports each `?` as PBC_SIZE_SYMBOL(s) and the largest    *|
|* sizes (pbc/entry_sig.h); the entry F is renamed F__pbc_sym and the       *|
|* library's glue defines F: it checks that the sizes of one symbol agree, *|
|* that each is from 1 to its largest and that every dynamic argument is    *|
|* row-major at offset 0 (traps otherwise), then calls it.                  *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_SYMBOLIC_SIZES_H
#define PBC_SYMBOLIC_SIZES_H

#include <stdbool.h>

#include "mlir-c/IR.h"
#include "pbc/entry_sig.h"

/* The suffix of the symbolic function the glue calls. */
#define PBC_SYMBOLIC_SUFFIX "__pbc_sym"

/* Gives every public function of m with dynamic sizes its size symbols (see
 * above), marks them (PBC_SIGNATURE_SIZES_ATTR) and renames each F to
 * F__pbc_sym; sigs (capacity max) receive every entry as callers see it,
 * *numSigs their count. False after a located error for the first entry
 * that has no symbols that hold (m may then be partly prepared). */
bool pbcSymbolicSizesPrepare(MlirModule m, PbcEntrySig *sigs, int max, int *numSigs);

#endif
