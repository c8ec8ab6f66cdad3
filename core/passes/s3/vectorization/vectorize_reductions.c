/* pbc-vectorize-reductions: reductions along a contiguous innermost loop
 * (row sums and maxima of softmax and layer norm, dot products over k when
 * both operands run along k) that pbc-vectorize leaves scalar: their
 * accumulator stays at one address along the loop. After
 * pbc-promote-accumulators the accumulator is an iter_arg; such a loop gets
 * one vector accumulator and a horizontal reduction after it (MLIR's
 * vectorizer does the rewrite; this reassociates the sum, as vendor
 * libraries do). A scalar chain waits on the add latency every element:
 * layer norm on 128 x 768 ran 3x slower than PyTorch eager.
 * Policy: innermost loops only, unit step, constant trip, every iter_arg a
 * recognized reduction, no stores in the body and every load contiguous or
 * invariant along the loop (no gathers), the induction variable used only
 * as an index. Lanes that divide the trip; where
 * only narrower ones would (a row of 197, a whole tensor of odd size), the
 * loop is split: whole vectors, then the last elements in a scalar loop
 * that continues from the vector part's sums (a scalar chain over 87381
 * elements was off by 7e-4 of the sum, more than a pairwise sum's error). */
#include <stdlib.h>

#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/loops.h"
#include "pbc/marks.h"
#include "passes/passes.h"

typedef struct {
  int vectorBits;
} State;

/* A loop of one reduction over at least kLongChain full vectors runs
 * kChains accumulator chains. Shorter rows lose more to the wider
 * horizontal reduction after the loop than they gain; a loop of several (a
 * skinny GEMM's dot-product tile) has its chains already, and 4 times as
 * many spill. */
enum { kChains = 4, kLongChain = 128 };

/* A scalar rest is split off only below a loop of at least this many
 * whole vectors (shorter ones keep their narrower, dividing lanes). */
enum { kMinSplitVectors = 4 };

/* Lanes for the loop, or 0 if it is not a candidate; *whole: the
 * iterations the vector loop takes (the trip, unless a scalar rest follows). */
static int candidateLanes(MlirOperation loop, const State *st, long long *whole) {
  int nResults = (int)mlirOperationGetNumResults(loop);
  long long trip = pbcExtAffineConstantTripCount(loop);
  if (nResults == 0 || pbcLoopStep(loop) != 1 || trip <= 0)
    return 0;
  int bits = 0;
  for (int r = 0; r < nResults; ++r) {
    MlirType t = mlirValueGetType(mlirOperationGetResult(loop, r));
    if (!mlirTypeIsAFloat(t))
      return 0; /* vector or integer accumulators: not this pass's case */
    int b = (int)mlirFloatTypeGetWidth(t);
    bits = b > bits ? b : bits;
  }
  MlirBlock body = pbcLoopBody(loop);
  MlirValue iv = pbcLoopIv(loop);
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (mlirOperationGetNumRegions(op) != 0)
      return 0; /* not innermost */
    PbcAccess a;
    bool access = pbcAccessGet(op, &a);
    /* The induction variable as a value (compared, converted: a prefix
     * sum's j <= i) has no vector form here: MLIR's vectorizer crashed on
     * such a loop. It may only index memory. */
    if (!access && !pbcOpIsA(op, "affine.apply"))
      for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); ++k)
        if (mlirValueEqual(mlirOperationGetOperand(op, k), iv))
          return 0;
    if (access) {
      PbcStride stride = pbcAccessStrideAlong(&a, loop);
      if (a.isWrite || a.lanes || stride == PBC_STRIDE_OTHER ||
          (stride == PBC_STRIDE_CONTIGUOUS &&
           !pbcMemrefLastDimContiguous(mlirValueGetType(a.memref))))
        return 0; /* a vector load needs unit stride in memory, too */
    } else if (pbcOpIsA(op, "affine.load") || pbcOpIsA(op, "memref.load") ||
               pbcOpIsA(op, "memref.store") || pbcOpIsA(op, "func.call")) {
      return 0;
    }
  }
  int full = st->vectorBits / bits;
  int lanes = pbcVectorLanes(st->vectorBits, bits, trip); /* divides trip */
  *whole = trip;
  /* The split needs bounds it can restate: from 0 to a constant. */
  bool splittable = pbcLoopZeroBasedTrip(loop) == trip;
  if (lanes < full && full > 1 && splittable && trip >= (long long)kMinSplitVectors * full) {
    lanes = full; /* whole vectors, then a scalar rest */
    *whole = trip - trip % full;
  }
  /* A long reduction takes kChains vectors a step, one accumulator chain
   * each (LLVM splits the wide vector), so the adds overlap rather than
   * wait on each other's latency. */
  if (nResults == 1 && lanes == full && trip >= (long long)kLongChain * lanes) {
    long long step = (long long)kChains * lanes;
    if (*whole % step == 0 || (splittable && *whole < trip)) {
      lanes *= kChains;
      *whole = trip - trip % step;
    }
  }
  return lanes > 1 ? lanes : 0;
}

/* Splits `loop` (from 0 to a constant, step 1) at `at`: iterations [at,
 * trip) run in a copy after it that starts from its results, which the
 * loop's users now take from the copy. */
static void splitRest(MlirOperation loop, long long at) {
  long long trip = pbcLoopZeroBasedTrip(loop);
  int n = (int)mlirOperationGetNumResults(loop);
  MlirOperation rest = mlirOperationClone(loop);
  mlirBlockInsertOwnedOperationAfter(mlirOperationGetBlock(loop), loop, rest);
  for (int r = 0; r < n; ++r) {
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(loop, r),
                                  mlirOperationGetResult(rest, r));
    mlirOperationSetOperand(rest, r, mlirOperationGetResult(loop, r)); /* its inits */
  }
  pbcLoopSetLowerBound(rest, at);
  pbcLoopSetUpperBound(rest, trip);
  pbcLoopSetUpperBound(loop, at);
}

/* An index the affine dialect accepts as a dimension: a loop's induction
 * variable, an affine.apply of such, or a constant. */
static bool isAffineIndex(MlirValue v) {
  if (mlirValueIsABlockArgument(v)) {
    MlirOperation owner = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v));
    return pbcOpIsA(owner, "affine.for") || pbcOpIsA(owner, "affine.parallel");
  }
  MlirOperation def = mlirOpResultGetOwner(v);
  return pbcOpIsA(def, "affine.apply") || pbcOpIsA(def, "arith.constant");
}

typedef struct {
  MlirOperation *reads;
  int n, cap;
} Reads;

static MlirWalkResult findReads(MlirOperation op, void *data) {
  Reads *r = data;
  if (pbcOpIsA(op, "vector.transfer_read")) {
    if (r->n == r->cap) {
      r->cap = r->cap ? 2 * r->cap : 64;
      r->reads = realloc(r->reads, (size_t)r->cap * sizeof(MlirOperation));
    }
    r->reads[r->n++] = op;
  }
  return MlirWalkResultAdvance;
}

/* MLIR's vectorizer reads through vector.transfer_read, which the affine
 * dependence test cannot analyze: the loop around a row reduction then stays
 * serial (softmax's row maxima and sums ran on one core). The reads it made
 * here are in bounds (the lanes divide the trip count of a loop along which
 * they are contiguous), unmasked and along the last dimension, so they
 * become affine.vector_load. */
static void makeReadsAffine(MlirOperation scope) {
  Reads r = {NULL, 0, 0};
  mlirOperationWalk(scope, findReads, &r, MlirWalkPreOrder);
  for (int i = 0; i < r.n; ++i) {
    MlirOperation op = r.reads[i];
    MlirValue memref = mlirOperationGetOperand(op, 0);
    MlirType vt = mlirValueGetType(mlirOperationGetResult(op, 0));
    int rank = (int)mlirShapedTypeGetRank(mlirValueGetType(memref));
    MlirAttribute perm = mlirOperationGetAttributeByName(op, pbcStr("permutation_map"));
    /* memref, indices, padding: no mask. */
    bool ok = rank <= PBC_MAX_RANK && mlirOperationGetNumOperands(op) == rank + 2 &&
              mlirShapedTypeGetRank(vt) == 1 && !mlirAttributeIsNull(perm) &&
              mlirAffineMapIsMinorIdentity(mlirAffineMapAttrGetValue(perm)) &&
              mlirAffineMapGetNumResults(mlirAffineMapAttrGetValue(perm)) == 1;
    MlirValue idx[PBC_MAX_RANK];
    for (int d = 0; ok && d < rank; ++d) {
      idx[d] = mlirOperationGetOperand(op, d + 1);
      ok = isAffineIndex(idx[d]);
    }
    if (!ok)
      continue; /* stays a transfer_read: correct, only opaque to the tests */
    MlirOperation load =
        pbcBuildAffineVectorLoad(op, memref, idx, rank, vt, mlirOperationGetLocation(op));
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), mlirOperationGetResult(load, 0));
    mlirOperationDestroy(op);
  }
  free(r.reads);
}

/* MLIR's vectorizer replaces the loop by a new one without its attributes;
 * a root loop (a reduction of a whole 1-D tensor) keeps its nest kind, which
 * the stage contract requires of every root nest. */
static bool vectorizeKeepingKind(MlirOperation loop, int lanes) {
  MlirAttribute kind = mlirOperationGetAttributeByName(loop, pbcStr(PBC_MARK_KIND));
  MlirBlock block = mlirOperationGetBlock(loop);
  if (!pbcExtAffineVectorizeReduction(loop, lanes))
    return false;
  if (mlirAttributeIsNull(kind))
    return true;
  /* Every other root loop of the block has its kind: the new one has not. */
  for (MlirOperation op = mlirBlockGetFirstOperation(block); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (pbcOpIsA(op, "affine.for") &&
        mlirAttributeIsNull(mlirOperationGetAttributeByName(op, pbcStr(PBC_MARK_KIND))))
      mlirOperationSetAttributeByName(op, pbcStr(PBC_MARK_KIND), kind);
  return true;
}

static bool run(MlirOperation func, void *state) {
  int n;
  MlirOperation *loops = pbcLoopsInnerFirstAll(func, &n);
  bool any = false;
  for (int i = 0; i < n; ++i) {
    long long whole;
    int lanes = candidateLanes(loops[i], state, &whole);
    if (!lanes)
      continue;
    if (whole < pbcExtAffineConstantTripCount(loops[i]))
      splitRest(loops[i], whole);
    any |= vectorizeKeepingKind(loops[i], lanes);
  }
  free(loops);
  /* pbc-vectorize makes affine.vector_load: every transfer_read is ours. */
  if (any)
    makeReadsAffine(func);
  return true;
}

PBC_C_PASS_WITH_VECTOR_BITS(pbcVectorizeReductionsPass, "pbc-vectorize-reductions", "func.func",
                            "Vector accumulators for innermost reduction loops", run);
