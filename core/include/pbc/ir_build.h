/*===- pbc/ir_build.h - Building affine IR from C ------------------------===*\
|* The C API creates ops generically; these helpers fill in what the affine  *|
|* ops need (bound maps, segment sizes, body block and terminator).          *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_IR_BUILD_H
#define PBC_IR_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "mlir-c/AffineMap.h"
#include "mlir-c/IR.h"

/* Creates `affine.for %i = 0 to ub` (constant bounds, step 1) with an empty
 * body (just the terminator), inserted before `before`. */
MlirOperation pbcBuildAffineFor(MlirOperation before, int64_t ub, MlirLocation loc);
/* A perfect nest of `rank` such loops over `shape`, before `before`; their
 * ivs in `ivs`, outermost first. Returns the outermost loop; the innermost
 * body's terminator, where the body goes, in `*innermostEnd`. */
MlirOperation pbcBuildAffineNest(MlirOperation before, const int64_t *shape, int rank,
                                 MlirLocation loc, MlirValue *ivs, MlirOperation *innermostEnd);
/* affine.apply of a single-result `map` to `operands`, before `before`. */
MlirValue pbcBuildAffineApply(MlirOperation before, MlirAffineMap map, const MlirValue *operands,
                              int n, MlirLocation loc);
/* affine.prefetch (data cache, locality 3) of `operands` (memref, then the
 * map's operands) at `mapAttr`, before `before`. */
MlirOperation pbcBuildAffinePrefetch(MlirOperation before, const MlirValue *operands, int n,
                                     MlirAttribute mapAttr, bool isWrite, MlirLocation loc);

/* Creates an affine.load/affine.store with identity subscripts `indices`,
 * inserted before `before` (for a store, `value` is stored). */
MlirOperation pbcBuildAffineLoad(MlirOperation before, MlirValue memref, const MlirValue *indices,
                                 int rank, MlirLocation loc);
/* An affine.vector_load of `vectorType` at identity subscripts `indices`. */
MlirOperation pbcBuildAffineVectorLoad(MlirOperation before, MlirValue memref,
                                       const MlirValue *indices, int rank, MlirType vectorType,
                                       MlirLocation loc);
MlirOperation pbcBuildAffineStore(MlirOperation before, MlirValue value, MlirValue memref,
                                  const MlirValue *indices, int rank, MlirLocation loc);
/* An affine.vector_store of the vector `value` at identity subscripts. */
MlirOperation pbcBuildAffineVectorStore(MlirOperation before, MlirValue value, MlirValue memref,
                                        const MlirValue *indices, int rank, MlirLocation loc);

/* Subscript r of an affine access (load/store, vector or not) as an
 * expression of its map's operands; and that subscript replaced by `e`. */
MlirAffineExpr pbcAccessSubscriptExpr(MlirOperation op, intptr_t r);
void pbcAccessSetSubscriptExpr(MlirOperation op, intptr_t r, MlirAffineExpr e);
/* Subscript r of an affine access plus the constant `delta` (none if 0). */
void pbcAccessOffsetSubscript(MlirOperation op, intptr_t r, int64_t delta);
/* The subscripts of an affine access reordered: subscript q becomes the
 * old subscript perm[q] (the access then suits a buffer with its dimensions
 * permuted alike). */
void pbcAccessPermuteSubscripts(MlirOperation op, const int *perm);
/* memref.alloc of a static `type` (64-byte aligned) and its dealloc, each
 * inserted before `before`. */
MlirOperation pbcBuildAlloc(MlirOperation before, MlirType type, MlirLocation loc);
MlirOperation pbcBuildDealloc(MlirOperation before, MlirValue buffer, MlirLocation loc);
/* A private memref.global of `type` under `name` (or, if taken, a name the
 * symbol table makes from it), 64-byte aligned, first in `module` (where
 * globals are read); holding `init` (null: uninitialized) and `constant`
 * if asked. Returns the name given. */
MlirStringRef pbcBuildGlobal(MlirOperation module, MlirSymbolTable symbols, const char *name,
                             MlirType type, MlirAttribute init, bool constant);
/* memref.get_global of `name`, first in the function that holds `within`
 * (outside every nest: pbc-outline-nests passes it to a nest's function,
 * so nests that differ only in which global they read share one). */
MlirValue pbcBuildGetGlobal(MlirOperation within, MlirStringRef name, MlirType type);

/* The attribute `a` named `name`. */
MlirNamedAttribute pbcNamedAttr(MlirContext ctx, const char *name, MlirAttribute a);
/* linalg's `parallel` iterator type (an element of iterator_types). */
MlirAttribute pbcLinalgParallelIterator(MlirContext ctx);
/* Any op `name` with operands, attributes and at most one result (a null
 * `result` type: none), before `before` (at its location). */
MlirOperation pbcBuildOp(MlirOperation before, const char *name, int n, const MlirValue *operands,
                         MlirType result, int nAttrs, const MlirNamedAttribute *attrs);
/* memref.collapse_shape of a static, identity-layout `memref` merging its
 * last two dimensions (a view of the same elements), before `before`. */
MlirValue pbcBuildCollapseLastTwo(MlirOperation before, MlirValue memref);
/* A vector type of `t`'s shape with element `elem` if `t` is a vector
 * (null past rank 8), else `elem`. */
MlirType pbcTypeWithElement(MlirType t, MlirType elem);
/* Makes the float-to-int conversion `conv` (arith.fptosi/fptoui) read 0
 * where its operand is NaN: fptosi(NaN) is poison, and once the operand is
 * a constant LLVM folds it so and deletes what depends on it. For callers
 * whose result is NaN there anyway (the polynomial exp's 2^k). */
void pbcGuardNaNBeforeConversion(MlirOperation conv);
/* arith.constant `v` : index, before `before`. */
MlirValue pbcBuildIndexConstant(MlirOperation before, int64_t v);
/* arith.constant `v` of the float type `t`, before `before`. */
MlirValue pbcBuildFloatConstant(MlirOperation before, MlirType t, double v);
/* scf.if `cond` without results before `before`: a then block holding just
 * scf.yield and, if `withElse`, an else block like it (else no else block). */
MlirOperation pbcBuildIf(MlirOperation before, MlirValue cond, bool withElse);

/* `loop` (an affine.for from 0 with a constant upper bound, any step) runs
 * over [origin, origin + extent) instead: its upper bound becomes `extent`,
 * and its index, wherever used, origin + index (computed in the innermost
 * body of the perfect band below `loop` when all uses are in there, so the
 * band stays perfect). */
void pbcLoopRestrict(MlirOperation loop, long long extent, MlirValue origin);
/* The second half of pbcLoopRestrict: `loop`'s index, wherever used,
 * becomes origin * scale + index (its bounds unchanged; computed where
 * pbcLoopRestrict computes it). */
void pbcLoopShiftIndex(MlirOperation loop, MlirValue origin, long long scale);

/* Clones the perfect band `nest` before `before` with its band loop
 * loops[i] restricted to extent[i] elements from origin[i] (as
 * pbcLoopRestrict), for i < n: the nest's iterations in one box. Returns
 * the clone; its band loops in `band` (up to 16, PBC_MAX_BAND) unless
 * that is NULL. */
MlirOperation pbcCloneNestRestricted(MlirOperation nest, MlirOperation before, int n,
                                     const int loops[], const long long extent[],
                                     const MlirValue origin[], MlirOperation band[]);

/* Fusion's two moves. pbcMoveBodyBefore: every op of `from` but its
 * terminator, in order, before `anchor` (one loop body's work into
 * another's). pbcMoveDeallocsAfter: the memref.deallocs between `first`
 * and `second` (ops of one block) after `second`, since what `first` did
 * now happens in `second`, which may read those buffers. */
void pbcMoveBodyBefore(MlirBlock from, MlirOperation anchor);
void pbcMoveDeallocsAfter(MlirOperation first, MlirOperation second);

/* Erases op after every op that uses its results (a buffer's allocation
 * with its deallocs and stores, once nothing reads it). */
void pbcEraseWithUsers(MlirOperation op);
/* Peels the first (or last) iteration of an affine.for with constant
 * bounds (no operands) and at least two iterations into a clone before (or
 * after) it; the loop keeps the other iterations. Returns the clone, or
 * null (nothing changed). pbcLoopUnpeel undoes it. */
MlirOperation pbcLoopPeel(MlirOperation forOp, bool last);
void pbcLoopUnpeel(MlirOperation forOp, MlirOperation clone, bool last);
/* A memref.alloc whose every use is an affine store into it or its dealloc
 * holds nothing anyone reads: erased with those uses. True if erased. */
bool pbcEraseIfWriteOnly(MlirValue buffer);

#endif
