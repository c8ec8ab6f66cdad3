/* pbc-fuse-rows{cores= min-work= vector-bits= l2-bytes=}: producer-consumer
 * fusion at a depth (PolyBlocks §4.2) without recomputation. Adjacent root
 * nests that share their outer d loops (same trip counts, each parallel in
 * every nest) fuse at depth d when every element two of them touch, with a
 * write on either side, is touched by both in the same iteration of those
 * loops: for each of the d loops, some dimension of both accesses is
 * exactly that loop's iv. Then iteration x of a later nest only meets data
 * that iteration x of the earlier ones produced or reads, so each nest's
 * body at depth d moves to the start of the next one's, and the fused loops
 * stay parallel (marked pbc.parallel for pbc-parallelize). This is the
 * fusion pbc-fuse (same band throughout) cannot do for a row reduction and
 * what reads it: softmax's max, exponentials, sum and division, layer
 * norm's mean, variance and normalization become one nest over rows.
 * Cost model, over a maximal group of such nests (chains fuse left to
 * right):
 *  - legality aside, consecutive members share a memref (no reuse, no gain);
 *  - the fused loops run at least 4 iterations per core: they are all the
 *    parallelism the fused nest keeps (its inner loops are several);
 *  - it pays if the group's work reaches pbc-parallelize's `min-work` where
 *    some member's alone does not (that member ran on one core), or if the
 *    memrefs members share exceed L2 (each member's pass over them went to
 *    L3 or memory). Otherwise the members stay apart: fused, a row's
 *    reductions wait on each other's results, where separate nests overlap
 *    consecutive rows (fused on one core, attention's rows ran slower);
 *  - nests of one band throughout with flat bodies are pbc-fuse's (which
 *    also forwards the values): left to it, --disable=fusion ablates them;
 *  - only pointwise, broadcast and reduction nests: matmul-kind nests are
 *    tiled by themselves, and a pointwise or broadcast nest that reads the
 *    matmul-kind nest right before it is that nest's epilogue (it joins its
 *    tiles in pbc-fuse-epilogue).
 * A softmax becomes one nest on all cores instead of six serial ones.
 * Deallocations between the nests move after the last.
 * GPU targets replace this pass's group ([slice-fusion]): their nests need
 * the parallelism of every loop. */
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/marks.h"
#include "analysis/nest_work.h"
#include "passes/passes.h"

#include <limits.h>
#include <stdlib.h>

#define MAX_ACC 512
#define MAX_GROUP 64

typedef struct {
  long long cores;
  long long minWork; /* pbc-parallelize's, in analysis/nest_work.h units */
  int vectorBits;
  long long l2Bytes;
} State;

typedef struct {
  MlirOperation band[PBC_MAX_BAND];
  int depth; /* of the perfect band */
  PbcAccess acc[MAX_ACC];
  int nAcc;
} Nest;

/* A group of nests to fuse: every access of its members so far, each with
 * its own nest's band ivs, and the depth they all share. */
typedef struct {
  MlirOperation members[MAX_GROUP];
  int n, depth;
  PbcAccess acc[MAX_ACC];
  MlirValue ivs[MAX_ACC][PBC_MAX_BAND];
  int nAcc;
  long long work;   /* of all members once vectorized (analysis/nest_work.h) */
  bool smallMember; /* some member below min-work alone */
  long long trips[PBC_MAX_BAND];
} Group;

static bool describe(MlirOperation root, Nest *n) {
  n->depth = pbcLoopBand(root, n->band, PBC_MAX_BAND);
  if (!pbcGatherAccesses(root, n->acc, MAX_ACC, &n->nAcc))
    return false;
  for (int i = 0; i < n->nAcc; ++i)
    if (n->acc[i].lanes) /* scalar nests only (this runs before vectorization) */
      return false;
  return true;
}

static bool rowFusable(MlirOperation nest) {
  return pbcNestKindIs(nest, "pointwise") || pbcNestKindIs(nest, "broadcast") ||
         pbcNestKindIs(nest, "reduction");
}

/* A pointwise or broadcast nest reading what `before` (the root nest right
 * before it) writes, where that is a matmul-kind nest: its epilogue. */
static bool isEpilogue(MlirOperation nest, const Nest *n, MlirOperation before) {
  if (mlirOperationIsNull(before) || !pbcNestKindIs(before, "matmul") ||
      pbcNestKindIs(nest, "reduction"))
    return false;
  for (int i = 0; i < n->nAcc; ++i)
    if (!n->acc[i].isWrite && pbcMayWriteMemref(before, n->acc[i].memref))
      return true;
  return false;
}

static bool isIv(const PbcLinearForm *f, MlirValue iv) {
  long long k;
  return pbcLinearIsIvPlusConstant(f, iv, &k) && k == 0;
}

/* Some dimension of both accesses (same memref) is exactly level l's iv of
 * each one's nest. */
static bool splitAtLevel(const PbcAccess *a, MlirValue aIv, const PbcAccess *b, MlirValue bIv) {
  for (int k = 0; k < a->rank; ++k)
    if (isIv(&a->subscripts[k], aIv) && isIv(&b->subscripts[k], bIv))
      return true;
  return false;
}

/* The depth at which nest n can join the group g (0: it can't), by the
 * rules above; it must share a memref with g's last member. */
static int joinDepth(const Group *g, const Nest *n, const State *st) {
  if (g->nAcc + n->nAcc > MAX_ACC)
    return 0; /* every access must be in the legality check */
  int depth = 0;
  for (int l = 0; l < g->depth && l < n->depth; ++l) {
    if (pbcLoopZeroBasedTrip(n->band[l]) != g->trips[l] || mlirOperationGetNumResults(n->band[l]) ||
        !pbcLoopIsParallel(n->band[l]))
      break;
    depth = l + 1;
  }
  bool shared = false;
  MlirOperation last = g->members[g->n - 1];
  for (int i = 0; i < g->nAcc; ++i)
    for (int j = 0; j < n->nAcc; ++j) {
      const PbcAccess *a = &g->acc[i], *b = &n->acc[j];
      bool same = mlirValueEqual(a->memref, b->memref);
      shared |= same && pbcOpIsInside(a->op, last);
      if (!a->isWrite && !b->isWrite)
        continue;
      if (!same && pbcMemrefsMayAlias(a->memref, b->memref))
        return 0; /* a view of a buffer the other nest touches */
      for (int l = 0; same && l < depth; ++l)
        if (!splitAtLevel(a, g->ivs[i][l], b, pbcLoopIv(n->band[l])))
          depth = l;
    }
  long long iterations = 1;
  for (int l = 0; l < depth; ++l)
    iterations *= g->trips[l];
  /* Same band throughout, flat bodies: pbc-fuse's case (it also forwards
   * the values), left to it, so that --disable=fusion ablates it. */
  MlirOperation lastBand[PBC_MAX_BAND];
  int lastDepth = pbcLoopBand(last, lastBand, PBC_MAX_BAND);
  if (depth > 0 && depth == n->depth && depth == lastDepth &&
      pbcLoopBodyIsFlat(n->band[depth - 1]) && pbcLoopBodyIsFlat(lastBand[depth - 1]))
    return 0;
  return shared && iterations >= 4 * st->cores ? depth : 0;
}

static void addMember(Group *g, MlirOperation nest, const Nest *n, const State *st) {
  g->members[g->n++] = nest;
  for (int i = 0; i < n->nAcc; ++i, ++g->nAcc) { /* room checked by joinDepth */
    g->acc[g->nAcc] = n->acc[i];
    for (int l = 0; l < g->depth; ++l)
      g->ivs[g->nAcc][l] = pbcLoopIv(n->band[l]);
  }
  long long w = pbcNestWork(nest, st->vectorBits);
  g->smallMember |= w < st->minWork;
  g->work = w > LLONG_MAX - g->work ? LLONG_MAX : g->work + w;
}

/* A group of one nest, or none (n = 0) if it can't start one. */
static void startGroup(Group *g, MlirOperation nest, const Nest *n, const State *st) {
  g->n = g->nAcc = 0;
  g->work = 0;
  g->smallMember = false;
  g->depth = 0;
  for (int l = 0; l < n->depth; ++l) {
    g->trips[l] = pbcLoopZeroBasedTrip(n->band[l]);
    if (g->trips[l] <= 0 || mlirOperationGetNumResults(n->band[l]) ||
        !pbcLoopIsParallel(n->band[l]))
      break;
    g->depth = l + 1;
  }
  if (g->depth > 0)
    addMember(g, nest, n, st);
}

/* Bytes of the memrefs two members touch. */
static long long sharedBytes(const Group *g) {
  long long bytes = 0;
  for (int i = 0; i < g->nAcc; ++i) {
    bool counted = false, other = false;
    MlirOperation owner = pbcRootOf(g->acc[i].op);
    for (int j = 0; j < g->nAcc && !counted; ++j)
      if (mlirValueEqual(g->acc[i].memref, g->acc[j].memref)) {
        counted = j < i; /* counted at its first access */
        other |= !mlirOperationEqual(pbcRootOf(g->acc[j].op), owner);
      }
    long long b = pbcMemrefBytes(mlirValueGetType(g->acc[i].memref));
    if (!counted && other && b > 0)
      bytes += b;
  }
  return bytes;
}

static bool pays(const Group *g, const State *st) {
  if (g->n < 2)
    return false;
  return (g->smallMember && g->work >= st->minWork) || sharedBytes(g) > st->l2Bytes;
}

/* Moves P's body at `depth` to the start of C's (C the next member). */
static void fuseInto(MlirOperation P, MlirOperation C, int depth) {
  MlirOperation pb[PBC_MAX_BAND], cb[PBC_MAX_BAND];
  pbcLoopBand(P, pb, PBC_MAX_BAND);
  pbcLoopBand(C, cb, PBC_MAX_BAND);
  pbcMoveDeallocsAfter(P, C);
  pbcMoveBodyBefore(pbcLoopBody(pb[depth - 1]),
                    mlirBlockGetFirstOperation(pbcLoopBody(cb[depth - 1])));
  /* Parallel in each nest and split between them: pbc-parallelize takes the
   * mark, as the dependence test may not see through what later passes add
   * (a vectorized invariant read is a vector.transfer_read). */
  for (int l = 0; l < depth; ++l) {
    mlirValueReplaceAllUsesOfWith(pbcLoopIv(pb[l]), pbcLoopIv(cb[l]));
    pbcOpSetUnitAttr(cb[l], PBC_MARK_PARALLEL);
  }
  if (pbcNestKindIs(P, "reduction"))
    pbcNestSetKind(C, "reduction");
  mlirOperationDestroy(P);
}

static void fuseGroup(const Group *g, const State *st) {
  if (!pays(g, st))
    return;
  for (int i = 0; i + 1 < g->n; ++i)
    fuseInto(g->members[i], g->members[i + 1], g->depth);
}

static bool run(MlirOperation func, void *state) {
  const State *st = state;
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockIsNull(body))
    return true;
  Group *g = calloc(1, sizeof(Group));
  Nest *n = calloc(1, sizeof(Nest));
  MlirOperation before = {NULL}; /* the root nest before op */
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);) {
    MlirOperation next = mlirOperationGetNextInBlock(op);
    if (pbcOpIsA(op, "affine.for")) {
      bool ok = rowFusable(op) && describe(op, n);
      int depth = ok && g->n > 0 && g->n < MAX_GROUP ? joinDepth(g, n, st) : 0;
      if (depth > 0) {
        g->depth = depth;
        addMember(g, op, n, st);
      } else {
        fuseGroup(g, st);
        g->n = 0;
        if (ok && !isEpilogue(op, n, before))
          startGroup(g, op, n, st);
      }
      before = op;
    } else if (!pbcOpIsConstantOrAlloc(op) && !pbcOpIsA(op, "memref.dealloc")) {
      fuseGroup(g, st); /* only nests adjacent but for allocs */
      g->n = 0;
    }
    op = next;
  }
  fuseGroup(g, st);
  free(g);
  free(n);
  return true;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcFuseRowsPass = {
    "pbc-fuse-rows",
    "func.func",
    "Fusion at a depth of nests that share their outer parallel loops",
    run,
    sizeof(State),
    createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  enum { CORES, MIN_WORK, VECTOR_BITS, L2_BYTES, NUM_OPTIONS };
  static const PbcCountOption kOptions[] = {
      [CORES] = {"cores", 1},
      [MIN_WORK] = {"min-work", 131072},
      [VECTOR_BITS] = {"vector-bits", 256},
      [L2_BYTES] = {"l2-bytes", 1 << 20},
      [NUM_OPTIONS] = {NULL, 0}};
  long long v[NUM_OPTIONS];
  if (!pbcPassCountOptions(options, kOptions, v, err, errLen))
    return (MlirPass){NULL};
  long long cores = v[CORES];
  State st = {cores > 0 ? cores : 1, v[MIN_WORK],
              (int)v[VECTOR_BITS],
              v[L2_BYTES]};
  return pbcCPassCreate(&pbcFuseRowsPass, &st);
}
