/* pbc-parallelize: makes the outermost parallel loop of each root nest an
 * affine.parallel (one level by default: the outer band saturates the cores,
 * nested OpenMP regions only add overhead, except a pair S4 merges into one
 * OpenMP loop when the outer loop alone splits unevenly: collapsePartner;
 * `band=N` parallelizes up to N consecutive parallel loops, which GPU
 * targets map to grid and block dimensions; `hoist=1` first moves the
 * parallel loops of a perfect band outermost where dependences allow),
 * keeping the nest's pbc.kind.
 * Policy (here, in C): descend from the root along the loop that holds the
 * work (copy nests, marked pbc.copy by pbc-pack, are stepped over) until a
 * loop is parallel; skip loops with fewer iterations than `min-trip`, and
 * nests that do less than `min-work` (ops weighted by their cost:
 * pbc/nest_work.h; parallel overhead outweighs the work). A loop is parallel if MLIR's
 * dependence test says so, or if the tiler marked it `pbc.parallel` (it was
 * before tiling; packing only adds buffers private to each iteration, which
 * the test can't see through). A parallel loop below serial loops forks once
 * per their iteration: it is parallelized only if each fork does `min-work`,
 * and a nest where it would not has its parallel loops moved outermost
 * first. The rewrite is MLIR's. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/marks.h"
#include "pbc/op_list.h"
#include "analysis/nest_work.h"
#include "passes/passes.h"

typedef struct {
  long long minTrip;
  long long minWork; /* nests doing less work stay serial (0: off) */
  /* ... unless they store at least this many bytes (0: off): a fill or a
   * copy of a feature map is few ops per byte, and one core's stores take
   * longer than a fork and join from about a quarter MiB. */
  long long minBytes;
  long long band;    /* parallel loops per nest: 1 on CPUs, up to 3 on GPUs */
  long long hoist;   /* 1: parallel loops first in their band where legal */
} State;


/* Whether a fork and join pays for the nest `loop`: it does min-work, or
 * stores min-bytes. */
static bool worthAFork(MlirOperation loop, const State *st) {
  return st->minWork <= 0 || pbcNestWork(loop, 0) >= st->minWork ||
         (st->minBytes > 0 && pbcNestStoredBytes(loop) >= st->minBytes);
}

static bool isWorkLoop(MlirOperation op) {
  return pbcOpIsA(op, "affine.for") && !pbcOpHasAttr(op, PBC_MARK_COPY);
}

/* The first loop holding work (copy nests aside) at or after `op` in its
 * block; null if none. */
static MlirOperation workLoopFrom(MlirOperation op) {
  while (!mlirOperationIsNull(op) && !isWorkLoop(op))
    op = mlirOperationGetNextInBlock(op);
  return op;
}

/* The first loop holding work after `op` in its block; null if none (or if
 * `op` is null). */
static MlirOperation nextWorkLoop(MlirOperation op) {
  return mlirOperationIsNull(op) ? op : workLoopFrom(mlirOperationGetNextInBlock(op));
}

static MlirOperation firstWorkLoopIn(MlirOperation loop) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(loop, 0));
  return workLoopFrom(mlirBlockGetFirstOperation(body));
}

/* The only loop in loop's body that holds work; null if none or several. */
static MlirOperation workLoopIn(MlirOperation loop) {
  MlirOperation first = firstWorkLoopIn(loop);
  return mlirOperationIsNull(nextWorkLoop(first)) ? first : (MlirOperation){NULL};
}

/* Moves the parallel loops of root's perfect band outermost (in order), if
 * dependences allow; a GPU maps them to the grid, and a reduction loop left
 * outside would serialize the nest into one thread. Returns the new root. */
static MlirOperation hoistParallelLoops(MlirOperation root) {
  MlirOperation band[PBC_MAX_BAND];
  int n = pbcLoopBand(root, band, PBC_MAX_BAND);
  bool parallel[PBC_MAX_BAND], needed = false;
  for (int i = 0; i < n; ++i) {
    parallel[i] = pbcOpHasAttr(band[i], PBC_MARK_PARALLEL) || pbcLoopIsParallel(band[i]);
    for (int j = 0; j < i; ++j)
      needed |= parallel[i] && !parallel[j];
  }
  if (!needed)
    return root;
  unsigned perm[PBC_MAX_BAND], pos = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (int i = 0; i < n; ++i)
      if (parallel[i] == (pass == 0))
        perm[i] = pos++;
  MlirAttribute kind = mlirOperationGetAttributeByName(root, pbcStr(PBC_MARK_KIND));
  if (!pbcExtAffinePermute(band, n, perm))
    return root;
  for (int i = 0; i < n; ++i)
    if (perm[i] == 0) {
      mlirOperationRemoveAttributeByName(root, pbcStr(PBC_MARK_KIND));
      if (!mlirAttributeIsNull(kind))
        mlirOperationSetAttributeByName(band[i], pbcStr(PBC_MARK_KIND), kind);
      return band[i];
    }
  return root;
}

/* Copy nests pbc-pack placed outside the parallel loop (a GEMM's B block,
 * copied once per kc step for every thread) run on one core while the others
 * wait at the next fork: on a 128x768x768 matmul that serial copy is a third
 * of the time. Such a nest becomes parallel over its outer loop when it
 * copies at least `kMinCopyElements` (below that the fork costs more, which
 * also keeps small root copy nests serial on CPUs). */
enum { kMinCopyElements = 16384 };

/* Elements a copy nest copies, or -1 if a trip count is unknown. */
static long long copyElements(MlirOperation nest) {
  MlirOperation band[PBC_MAX_BAND];
  int depth = pbcLoopBand(nest, band, PBC_MAX_BAND);
  long long elements = pbcBandIterations(nest);
  if (elements < 0)
    return -1;
  /* Per iteration: the elements its stores write (a vectorized copy, lanes
   * each; a transposing copy, a block of vectors). */
  long long perIteration = 0;
  MlirBlock body = pbcLoopBody(band[depth - 1]);
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    /* (Not through pbcAccessGet: a panel layout's subscripts aren't linear.) */
    if (pbcOpIsA(op, "affine.vector_store"))
      perIteration += mlirShapedTypeGetDimSize(mlirValueGetType(mlirOperationGetOperand(op, 0)), 0);
    else if (pbcOpIsA(op, "affine.store"))
      ++perIteration;
  }
  return elements * (perIteration > 0 ? perIteration : 1);
}

/* A trip count the cores split evenly: a multiple of them, or at least 4
 * iterations each. */
static bool splitsEvenly(long long trip, long long cores) {
  return trip >= cores && (trip % cores == 0 || trip >= 4 * cores);
}

/* The loop to run in parallel together with `par` (just made parallel,
 * `trip` iterations), when the cores cannot split `trip` evenly: the
 * parallel loop that is all of par's body, if the pair splits better
 * (a 7 x 7 map's 7 rows over 2 cores, with 60 channel blocks inside: 420
 * iterations). The two become one OpenMP loop (collapse(2)) once S4 merges
 * the nested scf.parallel. Null if none. */
static MlirOperation collapsePartner(MlirOperation par, long long trip, const State *st) {
  if (trip < 0 || splitsEvenly(trip, st->minTrip))
    return (MlirOperation){NULL};
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(par, 0));
  MlirOperation inner = mlirBlockGetFirstOperation(body);
  if (!pbcOpIsA(inner, "affine.for") || pbcOpHasAttr(inner, PBC_MARK_COPY) ||
      !pbcOpIsA(mlirOperationGetNextInBlock(inner), "affine.yield"))
    return (MlirOperation){NULL};
  long long innerTrip = pbcExtAffineConstantTripCount(inner);
  bool parallel = pbcOpHasAttr(inner, PBC_MARK_PARALLEL) || pbcLoopIsParallel(inner);
  if (!parallel || innerTrip < 2 || pbcLoopHasBoundOperands(inner) ||
      pbcStaticSplitBusyShare(trip * innerTrip, st->minTrip) <=
          pbcStaticSplitBusyShare(trip, st->minTrip))
    return (MlirOperation){NULL};
  return inner;
}

/* Parallelizes up to st->band consecutive parallel loops, descending from
 * `loop` along the loop that holds the work. A sequential loop whose body
 * holds several (a nest whose first iteration pbc-absorb-fill peeled:
 * jc { kc = first; kc = rest }) has each of them descended alone. */
static void parallelizeFrom(MlirOperation loop, bool isRoot, const State *st) {
  MlirAttribute kind = mlirOperationGetAttributeByName(loop, pbcStr(PBC_MARK_KIND));
  bool copy = pbcOpHasAttr(loop, PBC_MARK_COPY);
  long long done = 0;
  while (!mlirOperationIsNull(loop) && done < st->band) {
    /* A loop over static blocks of a run-time size (pbc-block-symbolic):
     * the static nest in it has its own parallel loops, which split evenly
     * however many blocks there are (and MLIR's test over a tiled nest's
     * accesses takes seconds). */
    bool parallel = !pbcOpHasAttr(loop, PBC_MARK_BLOCKS) &&
                    (pbcOpHasAttr(loop, PBC_MARK_PARALLEL) || pbcLoopIsParallel(loop));
    long long trip = pbcExtAffineConstantTripCount(loop);
    if (!parallel || (trip >= 0 && trip < st->minTrip)) {
      if (done)
        return; /* a band is consecutive loops */
      MlirOperation inner = firstWorkLoopIn(loop), next = nextWorkLoop(inner);
      if (!mlirOperationIsNull(next)) {
        /* Several: each its own fork, per iteration, if it pays (min-work).
         * (The next is found first: parallelizing replaces the loop.) */
        while (!mlirOperationIsNull(inner)) {
          if (worthAFork(inner, st))
            parallelizeFrom(inner, false, st);
          inner = next;
          next = nextWorkLoop(inner);
        }
        return;
      }
      loop = inner;
      isRoot = false;
      continue;
    }
    /* Below serial loops the region forks once per their iteration: only
     * if each fork has the work to pay for it. */
    if (!done && !isRoot && !worthAFork(loop, st))
      return;
    MlirOperation par = pbcExtAffineParallelize(loop);
    if (mlirOperationIsNull(par))
      return;
    if (isRoot && !mlirAttributeIsNull(kind))
      mlirOperationSetAttributeByName(par, pbcStr(PBC_MARK_KIND), kind);
    if (isRoot && copy) /* later passes leave copy nests alone */
      pbcOpSetUnitAttr(par, PBC_MARK_COPY);
    ++done;
    isRoot = false;
    MlirOperation partner = done == 1 && st->band == 1 ? collapsePartner(par, trip, st)
                                                       : (MlirOperation){NULL};
    if (!mlirOperationIsNull(partner)) {
      pbcExtAffineParallelize(partner);
      return;
    }
    loop = workLoopIn(par);
  }
}

/* Whether the first parallel loop on the way down from root lies below
 * serial loops and does too little work to fork once per their iteration
 * (a global pooling over H and W in NHWC: serial h, w around a parallel
 * channel loop of two vectors, 12,544 forks per call). Moving it outermost
 * (pbc-parallelize's hoist) then forks once. */
static bool forksPerIterationTooSmall(MlirOperation root, const State *st) {
  if (st->minWork <= 0)
    return false;
  MlirOperation loop = root;
  for (int depth = 0; !mlirOperationIsNull(loop); ++depth) {
    /* Blocks of a run-time size stay outermost: a fork per block where it
     * pays, else none (MLIR's legality test of the move, over a tiled
     * nest's accesses under the blocks' bounds, took minutes). */
    if (pbcOpHasAttr(loop, PBC_MARK_BLOCKS))
      return false;
    bool parallel = pbcOpHasAttr(loop, PBC_MARK_PARALLEL) || pbcLoopIsParallel(loop);
    long long trip = pbcExtAffineConstantTripCount(loop);
    if (parallel && (trip < 0 || trip >= st->minTrip))
      return depth > 0 && !worthAFork(loop, st);
    loop = workLoopIn(loop);
  }
  return false;
}

static void parallelizeNest(MlirOperation root, const State *st) {
  /* A nest of a few microseconds gains less from the cores than a fork and
   * join cost, and its join waits for every core to come round. */
  long long copied = pbcOpHasAttr(root, PBC_MARK_COPY) ? copyElements(root) : -1;
  if (copied < 0 && !worthAFork(root, st))
    return; /* (copy nests have their own bound, kMinCopyElements) */
  if (copied >= 0 && copied < kMinCopyElements && st->band == 1)
    return; /* a small copy of its own (pbc-interleave's replicated filter) */
  if (st->hoist || forksPerIterationTooSmall(root, st))
    root = hoistParallelLoops(root);
  parallelizeFrom(root, true, st);
}

static MlirWalkResult findSerialCopies(MlirOperation op, void *data) {
  PbcOpList *c = data;
  if (pbcOpIsA(op, "affine.parallel"))
    return MlirWalkResultSkip; /* already spread over the cores */
  if (pbcOpIsA(op, "affine.for") && pbcOpHasAttr(op, PBC_MARK_COPY)) {
    pbcOpListPush(c, op);
    return MlirWalkResultSkip;
  }
  return MlirWalkResultAdvance;
}

/* A copy nest's outer loop is parallel when nothing it reads may be what
 * it writes: its iterations write disjoint elements (pbcOpIsInCopyNest).
 * MLIR's dependence test can't always see that through the subscripts of
 * a panel layout (floordiv and mod of a transposed block's row): 128x768x768
 * with B as N x K copied B on one core, at 1.6x oneDNN's time, 0.87 now. */
typedef struct {
  MlirValue reads[64], writes[64];
  int nReads, nWrites;
  bool complete;
} CopyMemrefs;

static MlirWalkResult gatherCopyMemrefs(MlirOperation op, void *data) {
  CopyMemrefs *c = data;
  bool load = pbcOpIsA(op, "affine.load") || pbcOpIsA(op, "affine.vector_load");
  bool store = pbcOpIsA(op, "affine.store") || pbcOpIsA(op, "affine.vector_store");
  if (load && c->nReads < 64)
    c->reads[c->nReads++] = mlirOperationGetOperand(op, 0);
  else if (store && c->nWrites < 64)
    c->writes[c->nWrites++] = mlirOperationGetOperand(op, 1);
  else if (load || store || pbcOpIsA(op, "func.call"))
    c->complete = false;
  return MlirWalkResultAdvance;
}

static bool copyIsParallel(MlirOperation nest) {
  CopyMemrefs *c = calloc(1, sizeof(CopyMemrefs));
  c->complete = true;
  mlirOperationWalk(nest, gatherCopyMemrefs, c, MlirWalkPreOrder);
  bool parallel = c->complete;
  for (int w = 0; parallel && w < c->nWrites; ++w)
    for (int r = 0; parallel && r < c->nReads; ++r)
      parallel = !pbcMemrefsMayAlias(c->writes[w], c->reads[r]);
  free(c);
  return parallel || pbcLoopIsParallel(nest);
}

/* The copy's loop to run in parallel: its outer loop if the cores split it
 * evenly; otherwise (a convolution's weights copied as kh, kw, c, f: 3 or 1
 * iterations outside) the first loop of its band they do split evenly,
 * moved outermost (a copy's iterations write disjoint elements, so its loops
 * permute freely); failing both, the outer loop if it has `minTrip`
 * iterations, else null. */
static MlirOperation copyLoopToSplit(MlirOperation nest, const State *st) {
  MlirOperation band[PBC_MAX_BAND];
  int depth = pbcLoopBand(nest, band, PBC_MAX_BAND);
  long long outerTrip = pbcExtAffineConstantTripCount(nest);
  if (splitsEvenly(outerTrip, st->minTrip))
    return nest;
  for (int l = 1; l < depth; ++l) {
    if (!splitsEvenly(pbcExtAffineConstantTripCount(band[l]), st->minTrip))
      continue;
    unsigned perm[PBC_MAX_BAND];
    for (int i = 0; i < depth; ++i)
      perm[i] = i < l ? (unsigned)i + 1 : i == l ? 0 : (unsigned)i;
    MlirAttribute kind = mlirOperationGetAttributeByName(band[0], pbcStr(PBC_MARK_KIND));
    if (pbcExtAffinePermute(band, depth, perm)) {
      if (!mlirAttributeIsNull(kind)) { /* band[l] is the root now */
        mlirOperationRemoveAttributeByName(band[0], pbcStr(PBC_MARK_KIND));
        mlirOperationSetAttributeByName(band[l], pbcStr(PBC_MARK_KIND), kind);
      }
      return band[l];
    }
    break;
  }
  return outerTrip >= st->minTrip ? nest : (MlirOperation){NULL};
}

static void parallelizeCopy(MlirOperation nest, const State *st) {
  if (copyElements(nest) < kMinCopyElements || !copyIsParallel(nest))
    return;
  nest = copyLoopToSplit(nest, st);
  if (mlirOperationIsNull(nest))
    return;
  MlirAttribute kind = mlirOperationGetAttributeByName(nest, pbcStr(PBC_MARK_KIND));
  MlirOperation par = pbcExtAffineParallelize(nest);
  if (mlirOperationIsNull(par))
    return;
  pbcOpSetUnitAttr(par, PBC_MARK_COPY);
  if (!mlirAttributeIsNull(kind)) /* a root copy nest (pbc-interleave's) keeps its kind */
    mlirOperationSetAttributeByName(par, pbcStr(PBC_MARK_KIND), kind);
}

static MlirWalkResult unmark(MlirOperation op, void *data) {
  (void)data;
  mlirOperationRemoveAttributeByName(op, pbcStr(PBC_MARK_PARALLEL));
  return MlirWalkResultAdvance;
}

static bool run(MlirOperation func, void *state) {
  /* Collect first: parallelizing replaces the loop being iterated over. */
  PbcOpList roots = {0}, copies = {0};
  pbcRootNests(func, NULL, &roots);
  for (int i = 0; i < roots.n; ++i)
    parallelizeNest(roots.ops[i], state);
  mlirOperationWalk(func, findSerialCopies, &copies, MlirWalkPreOrder);
  for (int i = 0; i < copies.n; ++i)
    parallelizeCopy(copies.ops[i], state);
  pbcOpListDestroy(&copies);
  pbcOpListDestroy(&roots);
  mlirOperationWalk(func, unmark, NULL, MlirWalkPreOrder);
  return true;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcParallelizePass = {
    "pbc-parallelize", "func.func", "Outermost parallel loop of each nest -> affine.parallel", run,
    sizeof(State),     createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  enum { MIN_TRIP, MIN_WORK, MIN_BYTES, BAND, HOIST, NUM_OPTIONS };
  static const PbcCountOption kOptions[] = {
      [MIN_TRIP] = {"min-trip", 2},
      [MIN_WORK] = {"min-work", 0},
      [MIN_BYTES] = {"min-bytes", 0},
      [BAND] = {"band", 1},
      [HOIST] = {"hoist", 0},
      [NUM_OPTIONS] = {NULL, 0}};
  long long v[NUM_OPTIONS];
  if (!pbcPassCountOptions(options, kOptions, v, err, errLen))
    return (MlirPass){NULL};
  State st = {v[MIN_TRIP], v[MIN_WORK], v[MIN_BYTES], v[BAND], v[HOIST]};
  return pbcCPassCreate(&pbcParallelizePass, &st);
}
