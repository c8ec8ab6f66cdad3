/*===- pbc/affine_access.h - Affine accesses as linear forms --------------===*\
|* The fast, linear-time analyses S3's policies read (PolyBlocks §4.1):      *|
|* every subscript of an affine load/store as a linear form over the values  *|
|* that feed it, from which the stride of an access along a loop            *|
|* (contiguous, invariant or strided), distinctness of two accesses, and the *|
|* loops an access depends on follow directly. Exact dependence tests       *|
|* (MLIR's, through pbc-ext/affine.h) are asked only where these can't say.  *|
|* The loop, memref and nest queries these build on have their own headers  *|
|* (pbc/loops.h, pbc/memrefs.h, pbc/nests.h), included here.               *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_AFFINE_ACCESS_H
#define PBC_AFFINE_ACCESS_H

#include <stdbool.h>

#include "mlir-c/IR.h"
#include "pbc/loops.h"
#include "pbc/memrefs.h"
#include "pbc/nests.h"

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
/* The same for an access whose subscripts may be non-linear (those have
 * linear=false and nothing else in their form). */
bool pbcAccessGetAny(MlirOperation op, PbcAccess *acc);
/* Whether subscript d of the access depends on the value v (for a
 * non-linear subscript: whether its expression uses v's dimension; true if
 * v is one of the map's symbols). */
bool pbcAccessSubscriptUses(const PbcAccess *acc, int d, MlirValue v);
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
/* Bytes between the elements an access reads in consecutive iterations of
 * `loop` (its iv's coefficients times the memref's row-major strides, times
 * the loop's step); -1 unless the memref is static with the identity layout
 * and every subscript is linear. */
long long pbcAccessByteStrideAlong(const PbcAccess *acc, MlirOperation loop);
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

/* Loop analyses on accesses. */
/* MLIR's dependence test (no loop-carried dependence through memory), or
 * false without asking it where the loop holds too many accesses for its
 * pairwise integer programs to finish in reasonable time. */
bool pbcLoopIsParallel(MlirOperation loop);
/* An affine.for's lower (or upper) bound as a linear form of its operands,
 * if the bound is one linear result (not a min/max of several). */
bool pbcLoopBoundForm(MlirOperation forOp, bool upper, PbcLinearForm *f);
/* Collects the accesses under `root` (itself included), in walk order, into
 * acc[0..max) and their count into *n. Returns false if some were left
 * out: more than max, or an op that uses a memref in a way the analysis
 * can't read (memref.load, a view made inside `root`), or a call (it may
 * touch any memory); deallocs and prefetches aside. */
bool pbcGatherAccesses(MlirOperation root, PbcAccess *acc, int max, int *n);
/* True if the induction variable `iv` is used only as a subscript of
 * affine loads and stores (not as their memref or stored value, nor by any
 * other op): what a pass that rewrites subscripts alone may assume. */
bool pbcIvOnlySubscripts(MlirValue iv);
/* The outermost affine.for around `op` (op itself if none) below which
 * `memref` is defined: where a view of it goes, once for a whole nest. With
 * `unlessWritten`, also not above a loop that may write it (where a copy of
 * it goes: it would copy stale values). */
MlirOperation pbcMemrefHoistPoint(MlirOperation op, MlirValue memref, bool unlessWritten);
/* True if `loop`'s body is one store of an arith.constant (and the yield),
 * as in a fill nest's innermost loop: the store in *store, the constant's
 * op in *constant. */
bool pbcLoopStoresOnlyConstant(MlirOperation loop, PbcAccess *store, MlirOperation *constant);
/* F is a fill: a perfect nest of parallel loops whose body stores one
 * constant (*constant), into every element of its memref (*store). */
bool pbcNestIsFill(MlirOperation f, PbcAccess *store, MlirOperation *constant);
/* True if rows `rowBytes` apart crowd into a few cache sets: a multiple of
 * 256 bytes maps the rows of a tile to a few set groups (4 KiB rows: all in
 * one; 3 KiB rows: 4). A line of padding per row spreads them. */
bool pbcRowsCrowdCacheSets(long long rowBytes);
/* Vector lanes for a loop of `trip` iterations over elements of elemBits:
 * the widest power of two up to vectorBits/elemBits that divides the trip
 * (24 floats on 512-bit vectors: 8 lanes), or 0 if not even 2 does. */
int pbcVectorLanes(int vectorBits, int elemBits, long long trip);

#endif
