/*===- pbc/affine_access.h - Affine access and loop analysis -------------===*\
|* The fast, linear-time analyses S3's policies read (PolyBlocks §4.1):      *|
|* every subscript of an affine load/store as a linear form over the values  *|
|* that feed it, from which the stride of an access along a loop            *|
|* (contiguous, invariant or strided), distinctness of two accesses, and the *|
|* loops an access depends on follow directly. Exact dependence tests       *|
|* (MLIR's, through pbc-ext/affine.h) are asked only where these can't say.  *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_AFFINE_ACCESS_H
#define PBC_AFFINE_ACCESS_H

#include <stdbool.h>

#include "mlir-c/IR.h"

#define PBC_MAX_TERMS 12
#define PBC_MAX_RANK 8
#define PBC_MAX_BAND 16

/* sum(coeff_i * value_i) + constant; linear=false if the expression has
 * mod/floordiv/ceildiv or a product of two variables. */
typedef struct {
  int nTerms;
  MlirValue values[PBC_MAX_TERMS];
  long long coeffs[PBC_MAX_TERMS];
  long long constant;
  bool linear;
} PbcLinearForm;

typedef struct {
  MlirOperation op;
  MlirValue memref;
  bool isWrite;
  int lanes; /* 0: scalar access; n: vector<n x elem> access */
  int rank;
  PbcLinearForm subscripts[PBC_MAX_RANK];
} PbcAccess;

/* Fills `acc` for affine.load/store/vector_load/vector_store; false for any
 * other op or a non-linear subscript. */
bool pbcAccessGet(MlirOperation op, PbcAccess *acc);
/* Coefficient of `v` in a linear form (0 if absent). */
long long pbcLinearCoeff(const PbcLinearForm *f, MlirValue v);
/* What every value of scale * (f - f.constant) is a multiple of: the gcd of
 * scale * coeff * step and of what scale * coeff * lb is a multiple of, over
 * f's terms, each an induction variable (of an affine.for whose lower bound
 * is linear in outer ivs, or an affine.parallel with constant lower
 * bounds); 0 if f has no terms (always 0), -1 if a term is no such iv. */
long long pbcLinearTermsGcd(const PbcLinearForm *f, long long scale);
/* True if f is exactly iv + k for a constant k (set in *k). */
bool pbcLinearIsIvPlusConstant(const PbcLinearForm *f, MlirValue iv, long long *k);
/* The difference a - b of two linear forms, if it is a constant. */
bool pbcLinearConstantDifference(const PbcLinearForm *a, const PbcLinearForm *b, long long *diff);
/* The values a linear form takes, [*lo, *hi], where each of its terms is
 * the iv of an affine.for with constant bounds: 1; 0 if one of the loops
 * never runs; -1 if a term is something else (unknown). */
int pbcLinearRange(const PbcLinearForm *f, long long *lo, long long *hi);
/* Greatest common divisor of |a| and |b| (0 if both are 0). */
long long pbcGcd(long long a, long long b);
/* True if some d in [lo, hi] divides n. */
bool pbcHasDivisorIn(long long n, long long lo, long long hi);

/* How an access moves along a loop's induction variable. */
typedef enum {
  PBC_STRIDE_INVARIANT,  /* same element in every iteration */
  PBC_STRIDE_CONTIGUOUS, /* last subscript advances by 1, others fixed */
  PBC_STRIDE_OTHER,      /* strided, or unknown (value defined in the loop) */
} PbcStride;
PbcStride pbcAccessStrideAlong(const PbcAccess *acc, MlirOperation loop);
/* True if the two accesses of the same memref (same subscript values) touch
 * disjoint elements: some subscript differs by a known nonzero constant
 * (for the last one, by at least the lanes of the lower access). */
bool pbcAccessesDisjoint(const PbcAccess *a, const PbcAccess *b);
/* True if both accesses have identical subscripts. */
bool pbcAccessesSame(const PbcAccess *a, const PbcAccess *b);
/* True if the access's element depends on the loop's iv, directly or through
 * the bounds of loops between the access and `loop` (e.g. a point loop of a
 * tile loop). */
bool pbcAccessDependsOnLoop(const PbcAccess *acc, MlirOperation loop);

/* Loop helpers. */
/* MLIR's dependence test (no loop-carried dependence through memory), or
 * false without asking it where the loop holds too many accesses for its
 * pairwise integer programs to finish in reasonable time. */
bool pbcLoopIsParallel(MlirOperation loop);
MlirValue pbcLoopIv(MlirOperation forOp);
/* Position in loops[0 .. n) of the loop whose induction variable v is, or -1. */
int pbcLoopIndexOf(MlirValue v, const MlirOperation loops[], int n);
MlirBlock pbcLoopBody(MlirOperation forOp);
long long pbcLoopStep(MlirOperation forOp);
/* The trip count of a loop from 0 with step 1 and a constant upper bound
 * (no bound operands), else -1: what tiles indexing from the origin need. */
long long pbcLoopZeroBasedTrip(MlirOperation forOp);
/* True for an affine.for with a constant trip count of at least one: what
 * an op hoisted out of it may assume ran anyway. */
bool pbcLoopRunsAtLeastOnce(MlirOperation forOp);
/* The constant upper bound (> 0) of a loop from 0 (no bound operands), any
 * step, else -1. */
long long pbcLoopUpperFromZero(MlirOperation forOp);
void pbcLoopSetStep(MlirOperation forOp, long long step);
/* Makes the loop's upper bound the constant `ub`. */
void pbcLoopSetUpperBound(MlirOperation forOp, long long ub);
/* An affine.for's lower (or upper) bound as a linear form of its operands,
 * if the bound is one linear result (not a min/max of several). */
bool pbcLoopBoundForm(MlirOperation forOp, bool upper, PbcLinearForm *f);
/* True if op is `ancestor` or nested inside it. */
bool pbcOpIsInside(MlirOperation op, MlirOperation ancestor);
/* True if op is inside a loop marked pbc.copy (a copy nest that
 * pbc-pack, pbc-interleave or a transposed-input copy made). A copy nest's
 * iterations each write elements of its buffer no other iteration writes
 * (its loops walk the buffer's index space, or blocks of it), a contract
 * every pass that makes or rewrites one keeps. */
bool pbcOpIsInCopyNest(MlirOperation op);
/* The outermost pbc.copy loop around `op`, or null. */
MlirOperation pbcCopyNestOf(MlirOperation op);
/* True if `op` comes after `anchor` in anchor's block. */
bool pbcOpFollowsInBlock(MlirOperation op, MlirOperation anchor);
/* True if value is defined (as op result or block argument) inside `op`. */
bool pbcValueIsDefinedInside(MlirValue v, MlirOperation op);
/* Collects the perfectly nested band from `root` (affine.for ops whose body
 * holds one loop and the terminator); returns its depth (<= max). */
int pbcLoopBand(MlirOperation root, MlirOperation *band, int max);
/* Iterations of the perfect band under `root` (the product of its loops'
 * constant trip counts, tile point loops included), or -1 if one is unknown. */
long long pbcBandIterations(MlirOperation root);
/* Collects the accesses under `root` (itself included), in walk order, into
 * acc[0..max) and their count into *n. Returns false if some were left
 * out: more than max, or an op that uses a memref in a way the analysis
 * can't read (memref.load, a view made inside `root`), or a call (it may
 * touch any memory); deallocs and prefetches aside. */
bool pbcGatherAccesses(MlirOperation root, PbcAccess *acc, int max, int *n);
/* True if `loop`'s body is one store of an arith.constant (and the yield),
 * as in a fill nest's innermost loop: the store in *store, the constant's
 * op in *constant. */
bool pbcLoopStoresOnlyConstant(MlirOperation loop, PbcAccess *store, MlirOperation *constant);
/* True if no op in the loop's body has regions (an innermost loop with a
 * straight-line body). */
bool pbcLoopBodyIsFlat(MlirOperation loop);
/* True if the loop's body's only non-terminator op is an affine.for. */
MlirOperation pbcOnlyLoopIn(MlirOperation forOp);
/* True if a memref value is a function argument or a fresh allocation (a
 * "root" buffer: distinct roots never alias under pbc's calling convention,
 * where outputs never alias inputs). */
bool pbcMemrefIsRoot(MlirValue memref);
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
/* The root affine.for nests of a function's body, in order (of that kind
 * only, if kind is not NULL); returns how many (at most max). */
int pbcRootNests(MlirOperation func, const char *kind, MlirOperation *roots, int max);
/* Every affine.for under `root`, inner loops first (post-order: a pass may
 * replace a loop when its turn comes; its ancestors come later and stay
 * valid). Returns how many (at most max). */
int pbcLoopsInnerFirst(MlirOperation root, MlirOperation *loops, int max);
/* Elements of a statically shaped memref type, or -1. */
long long pbcMemrefElements(MlirType t);
/* Bytes of a statically shaped memref type, or a negative value. */
long long pbcMemrefBytes(MlirType t);
/* Identity layout, or strided with unit innermost stride (a subview): the
 * memref's last dimension can be read and written as vectors. */
bool pbcMemrefLastDimContiguous(MlirType memrefType);
/* Element bit width of a memref or vector/scalar type (0 if unknown). */
int pbcElementBits(MlirType t);
/* True if rows `rowBytes` apart crowd into a few cache sets: a multiple of
 * 256 bytes maps the rows of a tile to a few set groups (4 KiB rows: all in
 * one; 3 KiB rows: 4). A line of padding per row spreads them. */
bool pbcRowsCrowdCacheSets(long long rowBytes);
/* Vector lanes for a loop of `trip` iterations over elements of elemBits:
 * the widest power of two up to vectorBits/elemBits that divides the trip
 * (24 floats on 512-bit vectors: 8 lanes), or 0 if not even 2 does. */
int pbcVectorLanes(int vectorBits, int elemBits, long long trip);

#endif
