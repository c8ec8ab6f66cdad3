/*===- output/glue.h - The entry's glue in LLVM IR ------------------------===*\
|* A model's entry is glue once its nests are outlined (S4): allocations,   *|
|* views, one call per nest, in one basic block, marked `optnone` and       *|
|* compiled at -O0. MLIR's lowering leaves it full of memref descriptors:   *|
|* each call unpacks every field of every descriptor it passes (the callee  *|
|* takes only the aligned pointer), each view builds one by insertvalue and *|
|* reads it back by extractvalue, and the C interface wrapper loads whole   *|
|* descriptors. optnone means no LLVM pass cleans this, and an insertvalue  *|
|* or aggregate load sends the rest of the block from fast instruction      *|
|* selection to SelectionDAG, far worse than linear on a block this large.  *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_OUTPUT_GLUE_H
#define PBC_OUTPUT_GLUE_H

#include "llvm-c/Core.h"

/* In every optnone function: an extractvalue from an insertvalue chain
 * becomes the inserted scalar, one from an aggregate load a load of the
 * field, and instructions without uses or effects go (last first, so that
 * chains go too). */
void pbcSimplifyGlue(LLVMModuleRef mod);

#endif
