/*===- pbc/nests.h - Nests -------------------------------------------------===*\
|* Root nests and their kind (the pbc.kind mark S2 sets on each).           *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_NESTS_H
#define PBC_NESTS_H

#include <stdbool.h>

#include "mlir-c/IR.h"
#include "pbc/op_list.h"

/* True for arith.constant and memref.alloc: ops between two nests that
 * touch none of the nests' memory (fusion looks past them). */
bool pbcOpIsConstantOrAlloc(MlirOperation op);
/* True if op carries pbc.kind == kind (the S2 classification). */
bool pbcNestKindIs(MlirOperation op, const char *kind);
/* Marks op with pbc.kind = kind (a nest a pass built, or a new root). */
void pbcNestSetKind(MlirOperation op, const char *kind);
/* The root nest holding op: its outermost enclosing op below the function
 * (op itself if it is one). */
MlirOperation pbcRootOf(MlirOperation op);
/* Appends the root affine.for nests of a function's body to *roots, in
 * order (of that kind only, if kind is not NULL). */
void pbcRootNests(MlirOperation func, const char *kind, PbcOpList *roots);

#endif
