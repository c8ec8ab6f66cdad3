/* pbc-prefetch{l2-bytes,cache-line-bytes}: software prefetch where the
 * hardware prefetchers come late.
 *
 * 1. The next register tile's accumulators. A register-tiled micro kernel
 * loads its MR x NR accumulators from the output before the reduction loop
 * and stores them after it. When the output is larger than a core's L2
 * those loads come from L3 or memory and stall the tile, with nothing else
 * in flight yet (matmul 2048^3: C is 16 MiB and is read once per kc block;
 * 0.59x -> 0.72x oneDNN with the prefetch, paired runs of
 * tools/bench/run.sh). Each such load gets an affine.prefetch (for writing:
 * the tile is stored back) of what the next iteration of the enclosing loop
 * will load, one tile's compute ahead. A prefetch past the last row is a
 * hint, never a fault. Outputs that fit in L2, and tiles with short
 * reductions (stencils), are left alone.
 *
 * 2. Rows read in short runs (prefetchNextRow): the lines of a row a few
 * rows ahead.
 *
 * 3. The next panel of an input read in place (prefetchNextPanel), spread
 * over the current panel's row tiles. */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "passes/passes.h"

typedef struct {
  long long l2, lineBytes;
} State;

enum { kMaxLines = 16, kMaxRunBytes = 8192 };


/* A tile whose reduction is shorter than this computes for less than a
 * memory latency: the prefetch can't run ahead of anything and costs an
 * instruction per element (the blur stencils' 5 taps ran 2.5x slower). */
enum { kMinReduction = 32 };

/* True if `load` initializes an iter_arg of a loop in its own block that
 * runs a reduction of at least kMinReduction steps, and the block also
 * stores to its memref (a micro kernel's accumulator tile). */
static bool isAccumulatorInit(MlirOperation load, MlirBlock block) {
  MlirValue r = mlirOperationGetResult(load, 0);
  bool init = false;
  for (MlirOpOperand u = mlirValueGetFirstUse(r); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    if (!pbcOpIsA(user, "affine.for") || mlirOperationGetNumResults(user) == 0 ||
        !mlirBlockEqual(mlirOperationGetBlock(user), block))
      continue;
    long long steps = pbcBandIterations(user); /* -1: unknown, a long one */
    init |= steps < 0 || steps >= kMinReduction;
  }
  if (!init)
    return false;
  MlirValue memref = mlirOperationGetOperand(load, 0);
  for (MlirOperation op = mlirBlockGetFirstOperation(block); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    PbcAccess a;
    if (pbcAccessGet(op, &a) && a.isWrite && mlirValueEqual(a.memref, memref))
      return true;
  }
  return false;
}

/* affine.apply (d0) -> (d0 + steps * step) of the loop's iv, at the top of
 * its body. */
static MlirValue nextIv(MlirOperation loop, long long steps) {
  MlirContext ctx = mlirOperationGetContext(loop);
  MlirAffineExpr e = mlirAffineAddExprGet(
      mlirAffineDimExprGet(ctx, 0), mlirAffineConstantExprGet(ctx, steps * pbcLoopStep(loop)));
  MlirValue iv = pbcLoopIv(loop);
  return pbcBuildAffineApply(mlirBlockGetFirstOperation(pbcLoopBody(loop)),
                             mlirAffineMapGet(ctx, 1, 0, 1, &e), &iv, 1,
                             mlirOperationGetLocation(loop));
}

/* The access's line (its last subscript rounded down to a cache line: the
 * constant is >= 0) added to seen[0..*n) if not there yet and there is
 * room; false if it was there or there is none. */
static bool addLine(PbcAccess *a, PbcAccess *seen, int *n, const State *st) {
  long long eb = pbcElementBits(mlirValueGetType(a->memref)) / 8;
  long long lineElems = eb > 0 && st->lineBytes / eb > 0 ? st->lineBytes / eb : 1;
  long long *k = &a->subscripts[a->rank - 1].constant;
  *k -= *k % lineElems;
  if (*n == kMaxLines)
    return false;
  for (int i = 0; i < *n; ++i)
    if (pbcAccessesSame(&seen[i], a))
      return false;
  seen[(*n)++] = *a;
  return true;
}

/* True if the loop's iv is one of the access's map operands. */
static bool readsIv(MlirOperation load, MlirValue iv) {
  for (intptr_t i = 1; i < mlirOperationGetNumOperands(load); ++i)
    if (mlirValueEqual(mlirOperationGetOperand(load, i), iv))
      return true;
  return false;
}

/* affine.prefetch (for writing or reading) of the element `load` reads,
 * with the loop's iv advanced (`next`), inserted before `load`. */
static void prefetchNext(MlirOperation load, MlirValue iv, MlirValue next, bool isWrite) {
  intptr_t n = mlirOperationGetNumOperands(load);
  MlirValue *operands = malloc(sizeof(MlirValue) * (size_t)n);
  for (intptr_t i = 0; i < n; ++i) {
    MlirValue v = mlirOperationGetOperand(load, i);
    operands[i] = i > 0 && mlirValueEqual(v, iv) ? next : v;
  }
  pbcBuildAffinePrefetch(load, operands, (int)n, mlirOperationGetAttributeByName(load, pbcStr("map")),
                         isWrite, mlirOperationGetLocation(load));
  free(operands);
}

static void prefetchLoop(MlirOperation loop, const State *st) {
  MlirBlock body = pbcLoopBody(loop);
  MlirValue iv = pbcLoopIv(loop), next = {NULL};
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    PbcAccess a;
    if (!pbcAccessGet(op, &a) || a.isWrite || !readsIv(op, iv))
      continue;
    /* (dynamic shapes: negative bytes, left alone) */
    if (pbcMemrefBytes(mlirValueGetType(a.memref)) <= st->l2 || !isAccumulatorInit(op, body))
      continue;
    if (mlirValueIsNull(next))
      next = nextIv(loop, 1);
    prefetchNext(op, iv, next, true);
  }
}

/* Rows ahead: a prefetch must be issued about a memory latency before the
 * load, which under load is about kAheadBytes of a core's reads (~250 ns
 * at ~30 GB/s); one run's compute is less when runs are short. */
enum { kAheadBytes = 8192, kMaxRowsAhead = 8 };

static long long rowsAhead(long long runBytes) {
  long long rows = runBytes > 0 ? (kAheadBytes + runBytes - 1) / runBytes : 1;
  return rows < 1 ? 1 : rows > kMaxRowsAhead ? kMaxRowsAhead : rows;
}

/* Rows read in short runs: `loop` is an innermost vector loop (no
 * iter_args) reading along a row of an array larger than L2 for at most
 * kMaxRunBytes, a part of the row only, and its parent moves to the next
 * row (a 2-D tile of the blur's input: 512 of 4100 pixels per row). The
 * hardware prefetchers take each run for a new stream and follow it only
 * after a few misses, on every row. So each cache line the loop reads gets
 * a prefetch of the same line rowsAhead rows ahead (the parent's later
 * iterations). (Copy nests are left alone: their rows were not measured.) */
static void prefetchNextRow(MlirOperation loop, const State *st) {
  MlirOperation parent = mlirOperationGetParentOperation(loop);
  long long trip = pbcExtAffineConstantTripCount(loop); /* iterations */
  if (!pbcOpIsA(parent, "affine.for") || mlirOperationGetNumResults(loop) > 0 || trip <= 0 ||
      pbcOpIsInCopyNest(loop))
    return;
  if (!pbcLoopBodyIsFlat(loop))
    return;
  MlirBlock body = pbcLoopBody(loop);
  MlirValue iv = pbcLoopIv(loop), row = pbcLoopIv(parent), next = {NULL};
  PbcAccess seen[kMaxLines]; /* the lines prefetched: accesses rounded down to a line */
  int nSeen = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    PbcAccess a;
    /* (prefetchNext advances the row where it is an operand: not through
     * an affine.apply, which the linear forms below see through) */
    if (!pbcAccessGet(op, &a) || a.isWrite || !a.lanes || !readsIv(op, row) ||
        pbcMemrefBytes(mlirValueGetType(a.memref)) <= st->l2)
      continue;
    const PbcLinearForm *inner = &a.subscripts[a.rank - 1];
    long long c = pbcLinearCoeff(inner, iv), eb = pbcElementBits(mlirValueGetType(a.memref)) / 8;
    bool alongRow = c > 0 && pbcLinearCoeff(inner, row) == 0 && inner->constant >= 0,
         nextRow = false;
    for (int e = 0; e < a.rank - 1 && alongRow; ++e) {
      alongRow = pbcLinearCoeff(&a.subscripts[e], iv) == 0;
      nextRow |= pbcLinearCoeff(&a.subscripts[e], row) != 0;
    }
    /* A run as long as the row is one stream with the next row's. */
    long long span = c * pbcLoopStep(loop) * trip;
    if (!alongRow || !nextRow || span * eb > kMaxRunBytes ||
        span >= mlirShapedTypeGetDimSize(mlirValueGetType(a.memref), a.rank - 1))
      continue;
    /* One prefetch per line. */
    if (!addLine(&a, seen, &nSeen, st))
      continue;
    if (mlirValueIsNull(next))
      next = nextIv(parent, rowsAhead(span * eb));
    prefetchNext(op, row, next, false);
  }
}

/* 3. The next panel, spread over this one's tiles (prefetchNextPanel). A
 * register tile's reduction (a band of loops with iter_args) that reads an
 * array larger than L2 in place, a row per step and a panel of columns at
 * a time (a GEMM's B or a convolution's weights where few rows of A use
 * them: pbc-pack leaves them in place), fetches each panel from memory in
 * its first row tile and rereads it from L2 in the others. The first tile
 * then waits on memory while the others leave it idle. So every step of
 * every row tile also prefetches a row of the next panel (the panel loop's
 * next iteration), row (t * S + s) / T of its S rows at step s of row tile
 * t of T: the next panel arrives during all of this panel's tiles. Only
 * with two row tiles or more (one has nothing to spread over) and a panel
 * that fits in a quarter of L2 beside the next. */
enum { kMaxBand = 4, kMaxTiles = 4, kPanelsInL2 = 4 };

/* A loop with a constant trip count and a lower bound linear in outer
 * ivs (a point loop of a tile loop). */
typedef struct {
  MlirOperation op;
  PbcLinearForm lb;
  long long step, trip;
} Counted;

static bool counted(MlirOperation loop, Counted *c) {
  c->op = loop;
  c->step = pbcLoopStep(loop);
  c->trip = pbcOpIsA(loop, "affine.for") ? pbcExtAffineConstantTripCount(loop) : -1;
  return c->trip > 0 && c->step > 0 && pbcLoopBoundForm(loop, false, &c->lb) && c->lb.linear;
}

/* The dimensions of the maps built below: values, each once. Each of the
 * at most kMaxTiles + kMaxBand loops adds its iv and its lower bound's
 * terms, so the array never fills. */
typedef struct {
  MlirValue v[(kMaxTiles + kMaxBand) * (PBC_MAX_TERMS + 1)];
  int n;
} Dims;

static MlirAffineExpr dimOf(MlirContext ctx, Dims *d, MlirValue v) {
  for (int i = 0; i < d->n; ++i)
    if (mlirValueEqual(d->v[i], v))
      return mlirAffineDimExprGet(ctx, (unsigned)i);
  d->v[d->n] = v;
  return mlirAffineDimExprGet(ctx, (unsigned)d->n++);
}

static MlirAffineExpr linearExpr(MlirContext ctx, Dims *d, const PbcLinearForm *f) {
  MlirAffineExpr e = mlirAffineConstantExprGet(ctx, f->constant);
  for (int t = 0; t < f->nTerms; ++t)
    e = mlirAffineAddExprGet(e, mlirAffineMulExprGet(dimOf(ctx, d, f->values[t]),
                                                     mlirAffineConstantExprGet(ctx, f->coeffs[t])));
  return e;
}

/* (iv - lb) / step */
static MlirAffineExpr normalized(MlirContext ctx, Dims *d, const Counted *c) {
  MlirAffineExpr off = mlirAffineAddExprGet(
      dimOf(ctx, d, pbcLoopIv(c->op)),
      mlirAffineMulExprGet(linearExpr(ctx, d, &c->lb), mlirAffineConstantExprGet(ctx, -1)));
  return mlirAffineFloorDivExprGet(off, mlirAffineConstantExprGet(ctx, c->step));
}

static void prefetchNextPanel(MlirOperation loop, const State *st) {
  if (!pbcOpIsA(loop, "affine.for") || mlirOperationGetNumResults(loop) == 0 ||
      pbcOpIsInCopyNest(loop))
    return;
  /* The reduction band, innermost (loop) first. */
  Counted band[kMaxBand];
  int nb = 0;
  long long steps = 1;
  for (MlirOperation l = loop; ; l = mlirOperationGetParentOperation(l)) {
    if (nb == kMaxBand || !counted(l, &band[nb]))
      return;
    steps *= band[nb++].trip;
    MlirOperation p = mlirOperationGetParentOperation(l);
    if (!pbcOpIsA(p, "affine.for") || mlirOperationGetNumResults(p) == 0)
      break;
  }
  if (steps < kMinReduction)
    return;
  MlirValue bandIvs[kMaxBand];
  for (int b = 0; b < nb; ++b)
    bandIvs[b] = pbcLoopIv(band[b].op);
  MlirContext ctx = mlirOperationGetContext(loop);
  MlirBlock body = pbcLoopBody(loop);
  PbcAccess seen[kMaxLines];
  MlirOperation loads[kMaxLines];
  int nSeen = 0;
  MlirOperation panel = {NULL};
  Counted tiles[kMaxTiles];
  int nt = 0;
  long long nTiles = 1;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    PbcAccess a;
    if (!pbcAccessGet(op, &a) || a.isWrite || !a.lanes ||
        pbcMemrefBytes(mlirValueGetType(a.memref)) <= st->l2)
      continue;
    /* A row per step: the last subscript holds no band iv, another does. */
    const PbcLinearForm *last = &a.subscripts[a.rank - 1];
    bool moves = false, rowOnly = last->constant >= 0;
    for (int b = 0; b < nb; ++b)
      rowOnly = rowOnly && pbcLinearCoeff(last, bandIvs[b]) == 0;
    for (int e = 0; e < a.rank - 1; ++e)
      for (int b = 0; b < nb; ++b)
        moves |= pbcLinearCoeff(&a.subscripts[e], bandIvs[b]) != 0;
    if (!rowOnly || !moves)
      continue;
    /* The panel loop: the nearest loop outside the band whose iv moves the
     * last subscript; the loops in between are the row tiles. */
    MlirOperation p = mlirOperationGetParentOperation(band[nb - 1].op);
    Counted t[kMaxTiles];
    int n = 0;
    long long count = 1;
    while (!mlirOperationIsNull(p) && pbcOpIsA(p, "affine.for") &&
           pbcLinearCoeff(last, pbcLoopIv(p)) == 0) {
      if (n == kMaxTiles || !counted(p, &t[n]))
        return;
      count *= t[n++].trip;
      p = mlirOperationGetParentOperation(p);
    }
    if (mlirOperationIsNull(p) || !pbcOpIsA(p, "affine.for") ||
        (!mlirOperationIsNull(panel) && !mlirOperationEqual(p, panel)))
      continue;
    /* One prefetch per line of the row. */
    if (!addLine(&a, seen, &nSeen, st))
      continue;
    loads[nSeen - 1] = op;
    if (mlirOperationIsNull(panel)) {
      panel = p;
      nt = n;
      nTiles = count;
      memcpy(tiles, t, sizeof(t));
    }
  }
  /* The next panel must fit in L2 beside this one (a convolution's 3x3x512
   * weights, 32 channels wide: 590 KiB, would evict the rows this panel's
   * later tiles reread). */
  if (nSeen == 0 || nTiles < 2 || steps * nSeen * st->lineBytes * kPanelsInL2 > st->l2)
    return;
  Dims dims = {.n = 0};
  MlirAffineExpr t = mlirAffineConstantExprGet(ctx, 0);
  for (int i = nt - 1; i >= 0; --i)
    t = mlirAffineAddExprGet(mlirAffineMulExprGet(t, mlirAffineConstantExprGet(ctx, tiles[i].trip)),
                             normalized(ctx, &dims, &tiles[i]));
  MlirAffineExpr s = mlirAffineConstantExprGet(ctx, 0);
  for (int b = nb - 1; b >= 0; --b)
    s = mlirAffineAddExprGet(mlirAffineMulExprGet(s, mlirAffineConstantExprGet(ctx, band[b].trip)),
                             normalized(ctx, &dims, &band[b]));
  /* q = (t * S + s) / T: the next panel's row for this step */
  MlirAffineExpr g = mlirAffineAddExprGet(
      mlirAffineMulExprGet(t, mlirAffineConstantExprGet(ctx, steps)), s);
  MlirAffineExpr q = mlirAffineFloorDivExprGet(g, mlirAffineConstantExprGet(ctx, nTiles));
  long long inner = 1;
  MlirAffineExpr ivs[kMaxBand];
  for (int b = 0; b < nb; ++b) {
    MlirAffineExpr idx = mlirAffineModExprGet(
        mlirAffineFloorDivExprGet(q, mlirAffineConstantExprGet(ctx, inner)),
        mlirAffineConstantExprGet(ctx, band[b].trip));
    ivs[b] = mlirAffineAddExprGet(
        mlirAffineMulExprGet(idx, mlirAffineConstantExprGet(ctx, band[b].step)),
        linearExpr(ctx, &dims, &band[b].lb));
    inner *= band[b].trip;
  }
  MlirOperation top = mlirBlockGetFirstOperation(body);
  MlirLocation loc = mlirOperationGetLocation(loop);
  MlirValue remapped[kMaxBand];
  for (int b = 0; b < nb; ++b)
    remapped[b] = pbcBuildAffineApply(top, mlirAffineMapGet(ctx, (intptr_t)dims.n, 0, 1, &ivs[b]),
                                      dims.v, dims.n, loc);
  MlirValue piv = pbcLoopIv(panel), nextPanel = nextIv(panel, 1);
  for (int l = 0; l < nSeen; ++l) {
    MlirOperation op = loads[l];
    intptr_t n = mlirOperationGetNumOperands(op);
    MlirValue *operands = malloc(sizeof(MlirValue) * (size_t)n);
    operands[0] = mlirOperationGetOperand(op, 0);
    for (intptr_t i = 1; i < n; ++i) {
      MlirValue v = mlirOperationGetOperand(op, i);
      operands[i] = mlirValueEqual(v, piv) ? nextPanel : v;
      for (int b = 0; b < nb; ++b)
        if (mlirValueEqual(v, bandIvs[b]))
          operands[i] = remapped[b];
    }
    pbcBuildAffinePrefetch(op, operands, (int)n, mlirOperationGetAttributeByName(op, pbcStr("map")),
                           false, mlirOperationGetLocation(op));
    free(operands);
  }
}

static bool run(MlirOperation func, void *state) {
  int n;
  MlirOperation *loops = pbcLoopsInnerFirstAll(func, &n);
  for (int i = 0; i < n; ++i) {
    prefetchLoop(loops[i], state);
    prefetchNextRow(loops[i], state);
    prefetchNextPanel(loops[i], state);
  }
  free(loops);
  return true;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcPrefetchPass = {
    "pbc-prefetch",
    "func.func",
    "Prefetch the next register tile's accumulators, the next row of short row runs and the "
    "next panel of an input read in place",
    run,
    sizeof(State),
    createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  enum { L2_BYTES, CACHE_LINE_BYTES, NUM_OPTIONS };
  static const PbcCountOption kOptions[] = {
      [L2_BYTES] = {"l2-bytes", 1 << 20},
      [CACHE_LINE_BYTES] = {"cache-line-bytes", 64},
      [NUM_OPTIONS] = {NULL, 0}};
  long long v[NUM_OPTIONS];
  if (!pbcPassCountOptions(options, kOptions, v, err, errLen))
    return (MlirPass){NULL};
  State st = {v[L2_BYTES],
              v[CACHE_LINE_BYTES]};
  if (st.lineBytes <= 0)
    st.lineBytes = 64;
  return pbcCPassCreate(&pbcPrefetchPass, &st);
}
