/* pbc-gpu-map-parallel: each top-level parallel loop of a host function
 * becomes a grid of thread blocks (upstream convert-parallel-loops-to-gpu
 * then makes it a gpu.launch); nests with no parallel loop run as one thread.
 *
 * Policy: the innermost dimensions map to threads x, y, z (the innermost
 * loop is the contiguous one after S2/S3, so consecutive threads touch
 * consecutive addresses: coalesced). Each mapped dimension gets a power-of-two
 * thread count no larger than its trip count, innermost first, until the
 * block holds `threads` threads; dimensions beyond three stay loops inside the
 * kernel. A dimension whose trip count the block size does not divide is
 * guarded (scf.if), so any shape is covered exactly once. Work outside
 * parallel loops (serial nests, an accumulator loaded before its reduction
 * loop and stored after it) runs as one thread of its own kernel. A
 * parallel loop around a reduction along contiguous rows gets one warp per
 * row instead (map_row_reductions.c). */
#include <stdio.h>
#include <string.h>

#include "gpu_build.h"
#include "gpu_passes.h"
#include "mlir-c/BuiltinAttributes.h"
#include "pbc/c_pass.h"

typedef struct {
  long long threads, warp;
} State;


/* The least power of two >= v, capped at 2^62 (a trip count near 2^63
 * would overflow the doubling and loop forever). */
static long long ceilPow2(long long v) {
  long long p = 1;
  while (p < v && p < (1LL << 62))
    p *= 2;
  return p;
}

/* Replaces a top-level scf.parallel by blocks x threads with guards. */
static bool mapLoop(MlirOperation par, long long budget) {
  int n = (int)(mlirOperationGetNumOperands(par) / 3);
  if (n < 1 || n > 8 || mlirOperationGetNumResults(par) > 0) {
    pbcEmitOpError(par,
                   "parallel loop with %d dimensions or with reductions: not mapped to "
                   "the GPU",
                   n);
    return false;
  }
  static const char *const blockIds[] = {"block_x", "block_y", "block_z"};
  static const char *const threadIds[] = {"thread_x", "thread_y", "thread_z"};
  MlirValue lb[8], ub[8], step[8], outerStep[8], zero[8], tcount[8], one[8];
  long long threads[8], trips[8]; /* trips: -1 where not constant */
  const char *outerProc[8], *innerProc[8];
  for (int d = n - 1; d >= 0; --d) {
    lb[d] = mlirOperationGetOperand(par, d);
    ub[d] = mlirOperationGetOperand(par, n + d);
    step[d] = mlirOperationGetOperand(par, 2 * n + d);
    int rank = n - 1 - d; /* 0 for the innermost dimension */
    long long l = pbcGpuConstantOf(lb[d]), u = pbcGpuConstantOf(ub[d]),
              s = pbcGpuConstantOf(step[d]);
    long long trip = l >= 0 && u >= 0 && s > 0 ? (u - l + s - 1) / s : -1;
    trips[d] = trip;
    long long t = 1;
    if (rank < 3) {
      t = trip > 0 ? ceilPow2(trip) : budget;
      if (t > budget)
        t = budget;
      budget /= t;
    }
    threads[d] = t;
    outerProc[d] = rank < 3 ? blockIds[rank] : "sequential";
    innerProc[d] = rank < 3 ? threadIds[rank] : "sequential";
  }
  MlirValue c0 = pbcGpuConstIndex(par, 0), c1 = pbcGpuConstIndex(par, 1);
  for (int d = 0; d < n; ++d) {
    zero[d] = c0;
    one[d] = c1;
    tcount[d] = pbcGpuConstIndex(par, threads[d]);
    outerStep[d] = threads[d] == 1 ? step[d] : pbcGpuArith(par, "muli", step[d], tcount[d]);
  }
  MlirOperation outer = pbcGpuBuildParallel(par, n, lb, ub, outerStep);
  MlirBlock ob = pbcGpuBody(outer, 0);
  MlirOperation oterm = mlirBlockGetTerminator(ob);
  MlirOperation inner = pbcGpuBuildParallel(oterm, n, zero, tcount, one);
  MlirBlock ib = pbcGpuBody(inner, 0);
  MlirOperation at = mlirBlockGetTerminator(ib);
  MlirValue iv[8], guard = {NULL};
  for (int d = 0; d < n; ++d) {
    MlirValue t = mlirBlockGetArgument(ib, d);
    if (pbcGpuConstantOf(step[d]) != 1)
      t = pbcGpuArith(at, "muli", t, step[d]);
    iv[d] = pbcGpuArith(at, "addi", mlirBlockGetArgument(ob, d), t);
    if (trips[d] < 0 || trips[d] % threads[d] != 0) {
      MlirValue in = pbcGpuLessThan(at, iv[d], ub[d]);
      guard = mlirValueIsNull(guard) ? in : pbcGpuArith(at, "andi", guard, in);
    }
  }
  MlirOperation dest = at;
  if (!mlirValueIsNull(guard))
    dest = mlirBlockGetTerminator(pbcGpuBody(pbcGpuBuildIf(at, guard), 0));
  MlirBlock body = pbcGpuBody(par, 0);
  for (int d = 0; d < n; ++d)
    mlirValueReplaceAllUsesOfWith(mlirBlockGetArgument(body, d), iv[d]);
  pbcGpuMoveRange(mlirBlockGetFirstOperation(body), mlirBlockGetTerminator(body), dest);
  mlirOperationSetAttributeByName(outer, pbcStr("mapping"), pbcGpuLoopMapping(outer, outerProc, n));
  mlirOperationSetAttributeByName(inner, pbcStr("mapping"), pbcGpuLoopMapping(inner, innerProc, n));
  mlirOperationDestroy(par);
  return true;
}

/* Ops from `first` to `last` (one block, in order) run as one thread:
 * nests with no parallel loop, and what S3 left around them (an accumulator
 * loaded before a reduction loop and stored after it). */
static bool wrapSerial(MlirOperation first, MlirOperation last) {
  MlirOperation end = mlirOperationGetNextInBlock(last);
  /* Values defined inside must not be used after the region. */
  for (MlirOperation op = first; op.ptr != end.ptr; op = mlirOperationGetNextInBlock(op))
    for (intptr_t r = 0; r < mlirOperationGetNumResults(op); ++r)
      for (MlirOpOperand u = mlirValueGetFirstUse(mlirOperationGetResult(op, r));
           !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u)) {
        MlirOperation user = mlirOpOperandGetOwner(u);
        while (!mlirOperationIsNull(user) &&
               mlirOperationGetBlock(user).ptr != mlirOperationGetBlock(first).ptr)
          user = mlirOperationGetParentOperation(user);
        bool inside = false;
        for (MlirOperation o = first; o.ptr != end.ptr; o = mlirOperationGetNextInBlock(o))
          inside |= o.ptr == user.ptr;
        if (!inside) {
          pbcEmitOpError(op, "host code would use a value computed on the device");
          return false;
        }
      }
  MlirValue zero = pbcGpuConstIndex(first, 0), one = pbcGpuConstIndex(first, 1);
  MlirOperation outer = pbcGpuBuildParallel(first, 1, &zero, &one, &one);
  static const char *const block[] = {"block_x"};
  mlirOperationSetAttributeByName(outer, pbcStr("mapping"), pbcGpuLoopMapping(outer, block, 1));
  pbcGpuMoveRange(first, end, mlirBlockGetTerminator(pbcGpuBody(outer, 0)));
  return true;
}

static bool hasPrefix(MlirOperation op, const char *prefix) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  size_t k = strlen(prefix);
  return n.length > k && strncmp(n.data, prefix, k) == 0;
}

/* Device work that is not a parallel loop: loops, conditionals, accesses. */
static bool isSerialWork(MlirOperation op) {
  return pbcOpIsA(op, "scf.for") || pbcOpIsA(op, "scf.if") || pbcOpIsA(op, "scf.while") ||
         pbcOpIsA(op, "memref.load") || pbcOpIsA(op, "memref.store") || hasPrefix(op, "vector.");
}

/* Ops without side effects that may sit between pieces of serial work. */
static bool isPureScalar(MlirOperation op) {
  return hasPrefix(op, "arith.") || hasPrefix(op, "math.") || hasPrefix(op, "index.");
}

static bool run(MlirOperation func, void *state) {
  const State *st = state;
  MlirBlock entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockIsNull(entry))
    return true;
  MlirOperation ops[4096];
  int n = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(entry); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (n == 4096) {
      pbcEmitOpError(op, "more than 4096 top-level ops in one function for the GPU mapping");
      return false;
    }
    ops[n++] = op;
  }
  bool ok = true;
  MlirOperation first = {NULL}, last = {NULL}; /* the current serial region */
  for (int i = 0; i < n; ++i) {
    MlirOperation op = ops[i];
    if (isSerialWork(op)) {
      if (!first.ptr)
        first = op;
      last = op;
      continue;
    }
    if (isPureScalar(op))
      continue;
    if (first.ptr)
      ok = wrapSerial(first, last) && ok;
    first.ptr = last.ptr = NULL;
    if (pbcOpIsA(op, "scf.parallel"))
      ok = (pbcGpuIsRowReduction(op) ? pbcGpuMapRowReduction(op, st->threads, st->warp)
                                     : mapLoop(op, st->threads)) &&
           ok;
  }
  if (first.ptr)
    ok = wrapSerial(first, last) && ok;
  return ok;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcGpuMapParallelPass = {
    "pbc-gpu-map-parallel",
    "func.func",
    "Top-level parallel loops -> thread blocks x threads (guarded); serial nests -> one thread",
    run,
    sizeof(State),
    createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  enum { THREADS, WARP, NUM_OPTIONS };
  static const PbcCountOption kOptions[] = {
      [THREADS] = {"threads", 256},
      [WARP] = {"warp-size", 32},
      [NUM_OPTIONS] = {NULL, 0}};
  long long v[NUM_OPTIONS];
  if (!pbcPassCountOptions(options, kOptions, v, err, errLen))
    return (MlirPass){NULL};
  State st = {v[THREADS], v[WARP]};
  if (st.threads < 1 || st.threads > 1024) {
    snprintf(err, errLen, "threads must be in 1..1024");
    return (MlirPass){NULL};
  }
  if (st.warp < 1 || st.warp > st.threads || (st.warp & (st.warp - 1))) {
    snprintf(err, errLen, "warp-size must be a power of two no larger than threads");
    return (MlirPass){NULL};
  }
  return pbcCPassCreate(&pbcGpuMapParallelPass, &st);
}
