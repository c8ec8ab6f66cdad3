/*===- pbc/memrefs.h - Memrefs ---------------------------------------------===*\
|* Memref queries: layouts, sizes and element widths, the buffer a view     *|
|* shows, which memrefs may alias, and whether ops may read or write one.   *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_MEMREFS_H
#define PBC_MEMREFS_H

#include <stdbool.h>

#include "mlir-c/IR.h"

/* True if a memref value is a function argument or a fresh allocation (a
 * "root" buffer: distinct roots never alias under pbc's calling convention,
 * where outputs never alias inputs). */
bool pbcMemrefIsRoot(MlirValue memref);
/* True for an argument of a function's entry block marked `pbc.invariant`
 * (its contents do not change between calls: a model's weights). */
bool pbcMemrefIsInvariantArg(MlirValue memref);
/* True for a memref.get_global (pbc's globals are private constants). */
bool pbcMemrefIsGlobal(MlirValue memref);
/* True for a memref type with the identity (row-major, dense) layout. */
bool pbcMemrefHasIdentityLayout(MlirType type);
/* True for ops that make a view of their first operand (subview, casts,
 * reshapes, transpose): same elements, other indexing. */
bool pbcOpIsMemrefView(MlirOperation op);
/* The buffer a memref value views: follows view ops (subview, casts,
 * reshapes) to their source. */
MlirValue pbcMemrefBase(MlirValue memref);
/* False only if the two memrefs are provably different buffers: distinct
 * root bases (function arguments never alias one another under pbc's
 * calling convention; fresh allocations alias nothing). */
bool pbcMemrefsMayAlias(MlirValue a, MlirValue b);
/* True if op takes, as an operand, a memref that may alias `memref`. */
bool pbcOpUsesMemref(MlirOperation op, MlirValue memref);
/* True if some op in `op` (itself included) takes a memref that may alias
 * `memref`, or is a call: it may read or write that buffer. */
bool pbcMayAccessMemref(MlirOperation op, MlirValue memref);
/* True if some op in `op` (itself included) may write the buffer `memref`
 * views: an affine store to a memref that may alias it, another op taking
 * such a memref (other than loads, views, deallocs and prefetches), or a
 * call. */
bool pbcMayWriteMemref(MlirOperation op, MlirValue memref);
/* Elements of a statically shaped memref type, or -1. */
long long pbcMemrefElements(MlirType t);
/* Bytes of a statically shaped memref type, or a negative value. */
long long pbcMemrefBytes(MlirType t);
/* Identity layout, or strided with unit innermost stride (a subview): the
 * memref's last dimension can be read and written as vectors. */
bool pbcMemrefLastDimContiguous(MlirType memrefType);
/* Element bit width of a memref or vector/scalar type (0 if unknown). */
int pbcElementBits(MlirType t);

#endif
