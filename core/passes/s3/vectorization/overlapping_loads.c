/* pbc-overlapping-loads: a stencil's taps along a row, read as whole vectors.
 * A vector loop over a row whose taps lie less than a vector apart (the
 * blur's horizontal pass on 3 interleaved channels reads x[i], x[i+3], ...,
 * x[i+12] for each 16-lane output vector) loads almost the same lanes five
 * times, and four of the five loads straddle two cache lines. The core pays
 * for every straddling load twice, and on this stream from memory the loads,
 * not the FMAs, set the pace.
 *
 * Here, in each block: affine.vector_loads of one memref and vector type
 * whose subscripts agree except for a constant offset in the last one form
 * a run where consecutive offsets (sorted) lie less than a vector apart.
 * A run of offsets m..M is covered by loads at m, m+V, m+2V, ... below M,
 * and at M (V lanes); each tap becomes a vector.shuffle of the two cover
 * loads around it. The covers read only lanes between the run's first and
 * last lane, which the taps' own loads had to be in bounds for. They are
 * placed at the run's first load, so nothing between it and the run's last
 * load may write the memref; a run rewritten must need fewer loads. */
#include <stdlib.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "passes/passes.h"

enum { kMaxLoads = 512, kMaxCovers = 64 };

typedef struct {
  MlirOperation op;
  int order;        /* position among the block's vector loads */
  long long offset; /* last subscript, relative to the row's first load */
} Tap;


/* True if b reads the same memref and vector type as a at subscripts that
 * differ only by a constant in the last one (*offset = b's - a's). */
static bool sameRow(const PbcAccess *a, const PbcAccess *b, MlirOperation aOp, MlirOperation bOp,
                    long long *offset) {
  if (!mlirValueEqual(a->memref, b->memref) || a->rank != b->rank || a->rank == 0 ||
      !mlirTypeEqual(mlirValueGetType(mlirOperationGetResult(aOp, 0)),
                     mlirValueGetType(mlirOperationGetResult(bOp, 0))))
    return false;
  for (int d = 0; d < a->rank; ++d) {
    long long diff;
    if (!a->subscripts[d].linear || !b->subscripts[d].linear ||
        !pbcLinearConstantDifference(&b->subscripts[d], &a->subscripts[d], &diff) ||
        (d < a->rank - 1 && diff != 0))
      return false;
    *offset = diff;
  }
  return true;
}

static int byOffset(const void *a, const void *b) {
  long long x = ((const Tap *)a)->offset, y = ((const Tap *)b)->offset;
  return (x > y) - (x < y);
}

/* A clone of `load`, placed before it, reading `delta` lanes further along
 * its last subscript. */
static MlirValue shiftedLoad(MlirOperation load, long long delta) {
  MlirOperation clone = mlirOperationClone(load);
  intptr_t last = mlirShapedTypeGetRank(mlirValueGetType(mlirOperationGetOperand(load, 0))) - 1;
  pbcAccessOffsetSubscript(clone, last, delta);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(load), load, clone);
  return mlirOperationGetResult(clone, 0);
}

/* vector.shuffle of the covers lo (at loStart) and hi (at hiStart) giving
 * the lanes from `offset` on, before `before`. */
static MlirValue shuffleTap(MlirOperation before, MlirValue lo, long long loStart, MlirValue hi,
                            long long hiStart, long long offset, int lanes) {
  int64_t mask[64];
  for (int t = 0; t < lanes; ++t) {
    long long e = offset + t;
    mask[t] = e < loStart + lanes ? e - loStart : lanes + (e - hiStart);
  }
  MlirContext ctx = mlirOperationGetContext(before);
  MlirNamedAttribute attr = mlirNamedAttributeGet(mlirIdentifierGet(ctx, pbcStr("mask")),
                                                  mlirDenseI64ArrayGet(ctx, lanes, mask));
  MlirValue operands[2] = {lo, hi};
  return mlirOperationGetResult(
      pbcBuildOp(before, "vector.shuffle", 2, operands, mlirValueGetType(lo), 1, &attr), 0);
}

/* True if an op from `first` up to (not including) `last` may write the
 * buffer `memref` views. */
static bool writtenBetween(MlirOperation first, MlirOperation last, MlirValue memref) {
  for (MlirOperation op = first; !mlirOperationEqual(op, last);
       op = mlirOperationGetNextInBlock(op))
    if (pbcMayWriteMemref(op, memref))
      return true;
  return false;
}

/* Rewrites the run taps[0..n) (sorted by offset), whose loads span the
 * block from `first` to `last`. */
static void rewriteRun(Tap *taps, int n, MlirOperation first, MlirOperation last, int lanes) {
  long long m = taps[0].offset, M = taps[n - 1].offset, starts[kMaxCovers];
  if ((M - m) / lanes + 2 > kMaxCovers)
    return;
  int nCovers = 0;
  for (long long s = m; s < M; s += lanes)
    starts[nCovers++] = s;
  starts[nCovers++] = M;
  int distinct = 1;
  for (int i = 1; i < n; ++i)
    distinct += taps[i].offset != taps[i - 1].offset;
  if (nCovers >= distinct || writtenBetween(first, last, mlirOperationGetOperand(first, 0)))
    return;
  /* Offsets are relative to taps[0]'s load; the covers clone `first`, whose
   * own offset within the run is found below. */
  long long firstOffset = 0;
  for (int i = 0; i < n; ++i)
    if (mlirOperationEqual(taps[i].op, first))
      firstOffset = taps[i].offset;
  MlirValue covers[kMaxCovers];
  for (int c = 0; c < nCovers; ++c)
    covers[c] = shiftedLoad(first, starts[c] - firstOffset);
  for (int i = 0; i < n; ++i) {
    int c = 0;
    while (c + 1 < nCovers && starts[c + 1] <= taps[i].offset)
      ++c;
    MlirValue v = covers[c];
    if (taps[i].offset != starts[c])
      v = shuffleTap(taps[i].op, covers[c], starts[c], covers[c + 1], starts[c + 1], taps[i].offset,
                     lanes);
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(taps[i].op, 0), v);
    mlirOperationDestroy(taps[i].op);
  }
}

/* Finds the runs among a block's vector loads and rewrites them. */
static void rewriteBlock(MlirBlock block) {
  MlirOperation loads[kMaxLoads];
  int n = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(block); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (pbcOpIsA(op, "affine.vector_load") && n < kMaxLoads)
      loads[n++] = op;
  bool *done = calloc((size_t)n + 1, sizeof(bool));
  Tap *row = malloc(((size_t)n + 1) * sizeof(Tap));
  PbcAccess *acc = malloc(((size_t)n + 1) * sizeof(PbcAccess));
  bool *valid = calloc((size_t)n + 1, sizeof(bool));
  for (int i = 0; i < n; ++i)
    valid[i] = pbcAccessGet(loads[i], &acc[i]) && acc[i].lanes > 1 && acc[i].lanes <= 64;
  for (int i = 0; i < n; ++i) {
    if (done[i] || !valid[i])
      continue;
    /* The loads reading i's row, in block order. */
    int k = 0;
    for (int j = i; j < n; ++j) {
      long long offset;
      if (!done[j] && valid[j] && sameRow(&acc[i], &acc[j], loads[i], loads[j], &offset)) {
        row[k++] = (Tap){loads[j], j, offset};
        done[j] = true;
      }
    }
    qsort(row, (size_t)k, sizeof(Tap), byOffset);
    /* Split into runs of offsets less than a vector apart. */
    for (int s = 0; s < k;) {
      int e = s + 1;
      while (e < k && row[e].offset - row[e - 1].offset < acc[i].lanes)
        ++e;
      if (e - s > 1) {
        int lo = row[s].order, hi = row[s].order;
        for (int t = s; t < e; ++t) {
          lo = row[t].order < lo ? row[t].order : lo;
          hi = row[t].order > hi ? row[t].order : hi;
        }
        rewriteRun(row + s, e - s, loads[lo], loads[hi], acc[i].lanes);
      }
      s = e;
    }
  }
  free(done);
  free(row);
  free(acc);
  free(valid);
}

static MlirWalkResult visit(MlirOperation op, void *data) {
  (void)data;
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); ++r)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r)); !mlirBlockIsNull(b);
         b = mlirBlockGetNextInRegion(b))
      rewriteBlock(b);
  return MlirWalkResultAdvance;
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  mlirOperationWalk(func, visit, NULL, MlirWalkPostOrder);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcOverlappingLoadsPass, "pbc-overlapping-loads", "func.func",
                           "Read a row's overlapping vector taps as whole vectors "
                           "and shuffles",
                           run);
