/* pbc-pack: fast buffers (PolyBlocks §4.3-4.4). For each nest the tiler gave
 * pack sites (its cache tile loops), every read-only input is copied, tile by
 * tile, into a contiguous buffer (MLIR's affineDataCopyGenerate: the region
 * the tile touches, with the accesses rewritten to the buffer) in the chip's
 * fast memory space. Policy: an input is packed at the innermost pack site its
 * subscripts depend on, i.e. once per tile of that loop (a GEMM's B block in
 * kc, its A block in ic), where it is reused by everything inside. Copy nests
 * are marked `pbc.copy` so the vectorizer and the parallelizer treat them as
 * what they are. */
#include <stdlib.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/marks.h"
#include "pbc/memrefs.h"
#include "pbc/op_list.h"
#include "passes/passes.h"
#include "passes/s3/tiling/transpose_input.h"

typedef struct {
  unsigned fastSpace;
  int lineBytes;
  bool padBuffers;
  long long l2; /* 0: copy every input (see wholeRowCopyIsWaste) */
} State;


typedef struct {
  PbcAccess acc[128];
  int n;
} Accs;

static MlirWalkResult findSites(MlirOperation op, void *data) {
  if (pbcOpIsA(op, "affine.for") && pbcOpHasAttr(op, PBC_MARK_PACK_SITE)) {
    pbcOpListPush(data, op); /* outermost site of a nest */
    return MlirWalkResultSkip;
  }
  return MlirWalkResultAdvance;
}

/* Written in the nest, possibly through another view of the same buffer. */
static bool writtenIn(const Accs *a, MlirValue memref) {
  for (int i = 0; i < a->n; ++i)
    if (a->acc[i].isWrite && pbcMemrefsMayAlias(a->acc[i].memref, memref))
      return true;
  return false;
}

/* How many elements of the last dimension an access reaches while the loops
 * inside `site` run (its own iv is fixed per tile); -1 if unknown. */
static long long lastDimExtentIn(const PbcAccess *x, MlirOperation site) {
  const PbcLinearForm *f = &x->subscripts[x->rank - 1];
  long long extent = 1;
  for (int t = 0; t < f->nTerms; ++t) {
    MlirValue v = f->values[t];
    if (!pbcValueIsDefinedInside(v, site) || mlirValueEqual(v, pbcLoopIv(site)))
      continue;
    if (!mlirValueIsABlockArgument(v))
      return -1;
    MlirOperation loop = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v));
    long long trip = pbcOpIsA(loop, "affine.for") ? pbcExtAffineConstantTripCount(loop) : -1;
    if (trip <= 0)
      return -1;
    long long c = f->coeffs[t] < 0 ? -f->coeffs[t] : f->coeffs[t];
    extent += c * (trip - 1) * pbcLoopStep(loop);
  }
  return extent;
}

/* How many times the loops inside `site` reuse each element of the tile:
 * the trips of the enclosing loops the access doesn't depend on. */
static long long reuseIn(const PbcAccess *x, MlirOperation site) {
  long long reuse = 1;
  for (MlirOperation p = mlirOperationGetParentOperation(x->op);
       !mlirOperationIsNull(p) && !mlirOperationEqual(p, site);
       p = mlirOperationGetParentOperation(p)) {
    long long trip = pbcOpIsA(p, "affine.for") ? pbcExtAffineConstantTripCount(p) : -1;
    if (trip > 0 && !pbcAccessDependsOnLoop(x, p))
      reuse *= trip;
  }
  return reuse;
}

/* Fewer reuses than this don't pay for a copy of rows that don't crowd. */
enum { kMinReuse = 64 };

/* On a CPU (fast memory = the caches) a tile made of whole rows of a
 * row-major input gains nothing from a copy but the spreading of its rows
 * over cache sets. That matters when the rows share one L1 set group (a
 * multiple of 4 KiB, the way size of 32-48 KiB L1s); rows 1-3 KiB apart still
 * spread over 4+ groups. The copy is then a waste where the input is larger
 * than L2 (a pass over L3 or memory per call), where each copied element is reused by few rows (the mlp
 * example's 16 rows per core), or where the rows are read one after another
 * along the innermost loop (a GEMM's A, row i along k): only the register
 * tile's few rows are live at a time, too few to crowd a set group (256^3:
 * 1.13 -> 1.06 pbc/oneDNN time, paired, with A's 1 KiB rows in place).
 * But rows of a page or more that the innermost loop walks across (a GEMM's
 * B panel, read row after row along k) put every step on a new page, where
 * the hardware prefetchers stop (see pbc-panel-layout): those are copied
 * whatever their size (2048x1536x2048, 6 KiB rows: 0.77x -> 0.93x oneDNN,
 * paired). */
enum { kPageBytes = 4096, kMinSegmentBytes = 1024 };
static bool streamedAlongInnermost(const PbcAccess *x) {
  MlirOperation loop = mlirOperationGetParentOperation(x->op);
  return pbcOpIsA(loop, "affine.for") && pbcAccessStrideAlong(x, loop) == PBC_STRIDE_CONTIGUOUS;
}

/* Whether the rows the tile reads are a multiple of 4 KiB apart: its rows,
 * or the elements a loop inside the site steps between (a stride-2
 * convolution over 512 channels reads pixels 4 KiB apart in 2 KiB rows). */
static bool crowdedIn(const PbcAccess *x, MlirOperation site, long long rowBytes) {
  if (rowBytes % kPageBytes == 0)
    return true;
  for (MlirOperation p = mlirOperationGetParentOperation(x->op);
       !mlirOperationIsNull(p) && !mlirOperationEqual(p, site);
       p = mlirOperationGetParentOperation(p)) {
    bool steps = pbcOpIsA(p, "affine.for") && pbcExtAffineConstantTripCount(p) != 1;
    long long stride = steps ? pbcAccessByteStrideAlong(x, p) : -1;
    if (stride > 0 && stride % kPageBytes == 0)
      return true;
  }
  return false;
}

/* Inputs larger than L2 whose elements serve at most this many rows inside
 * the site: see wholeRowCopyIsWaste. */
enum { kFewRows = 128 };

static bool wholeRowCopyIsWaste(const PbcAccess *x, MlirOperation site, const State *st) {
  MlirType t = mlirValueGetType(x->memref);
  /* Not for an argument marked pbc.invariant (a model's weights): its
   * tiles are packed on the first call only (pbc-pack-once), so the copy
   * costs no pass per call, and the micro kernel streams packed panels
   * better than rows read in place (BERT-base's linear layers at 128
   * tokens, MobileNet-v2's 1x1 convolutions at 7x7: tools/bench/README.md,
   * "model weights packed in every case"). */
  if (st->fastSpace != 0 || st->l2 <= 0 || !mlirShapedTypeHasStaticShape(t) ||
      !pbcMemrefHasIdentityLayout(t) || pbcMemrefIsInvariantArg(x->memref))
    return false;
  int rank = (int)mlirShapedTypeGetRank(t);
  long long bytes = pbcMemrefBytes(t);
  long long rowBytes = mlirShapedTypeGetDimSize(t, rank - 1) * (pbcElementBits(t) / 8);
  bool streamed = streamedAlongInnermost(x);
  bool pagePerStep = rowBytes >= kPageBytes && !streamed;
  long long reuse = reuseIn(x, site);
  bool fewReuses = reuse < kMinReuse;
  long long extent = lastDimExtentIn(x, site);
  bool wholeRows = extent >= mlirShapedTypeGetDimSize(t, rank - 1);
  /* With few reuses, a tile of row segments (a GEMM's B columns split over
   * the cores) is read in place too: its rows are as far apart as whole
   * rows, and the copy is a pass over B per call for 7-49 rows of A
   * (MobileNet's 1x1 convolutions at 7x7). */
  bool longSegments = extent * (pbcElementBits(t) / 8) >= kMinSegmentBytes;
  /* And so is a block of such segments used by at most kFewRows rows (a
   * transformer's linear layer at sequence length 128: its weights come
   * from memory every call), whatever its pitch: crowded or page-sized
   * rows cost the micro kernel less than the copy, which reads B from
   * memory in short runs that the copy loop cannot overlap with compute
   * (see tools/bench/README.md, weights read in place). */
  if (bytes > st->l2 && longSegments && reuse <= kFewRows)
    return true;
  return (bytes > st->l2 || fewReuses || streamed) && !crowdedIn(x, site, rowBytes) &&
         !pagePerStep && (wholeRows || (fewReuses && longSegments));
}

typedef struct {
  MlirValue memref;
  MlirOperation load;
} CopyLoad;

static MlirWalkResult findCopyLoad(MlirOperation op, void *data) {
  CopyLoad *c = data;
  if (pbcOpIsA(op, "affine.load") && mlirValueEqual(mlirOperationGetOperand(op, 0), c->memref)) {
    c->load = op;
    return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

/* The buffer the copy nest at the start of `site` fills from `memref`. */
static MlirValue copyBuffer(MlirOperation site, MlirValue memref) {
  CopyLoad c = {memref, {NULL}};
  for (MlirOperation op = mlirBlockGetFirstOperation(pbcLoopBody(site));
       !mlirOperationIsNull(op) && mlirOperationIsNull(c.load);
       op = mlirOperationGetNextInBlock(op))
    if (pbcOpHasAttr(op, PBC_MARK_COPY))
      mlirOperationWalk(op, findCopyLoad, &c, MlirWalkPreOrder);
  if (mlirOperationIsNull(c.load))
    return (MlirValue){NULL};
  MlirOpOperand use = mlirValueGetFirstUse(mlirOperationGetResult(c.load, 0));
  MlirOperation store =
      mlirOpOperandIsNull(use) ? (MlirOperation){NULL} : mlirOpOperandGetOwner(use);
  return !mlirOperationIsNull(store) && pbcOpIsA(store, "affine.store")
             ? mlirOperationGetOperand(store, 1)
             : (MlirValue){NULL};
}

/* True if every use of `buf` is an affine access of it (linear subscripts)
 * or its dealloc: rewriting those rewrites every use. */
static bool onlyAffineUses(MlirValue buf) {
  for (MlirOpOperand u = mlirValueGetFirstUse(buf); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    PbcAccess acc;
    if (!pbcOpIsA(user, "memref.dealloc") &&
        !(pbcAccessGet(user, &acc) && mlirValueEqual(acc.memref, buf)))
      return false;
  }
  return true;
}

/* The buffer with dimension `dim` moved last, every access following; false
 * (nothing changed) unless the buffer is a fresh static allocation used
 * only by affine accesses and its dealloc. */
static bool transposeBuffer(MlirValue buf, int dim) {
  MlirType t = mlirValueGetType(buf);
  if (mlirValueIsNull(buf) || !mlirValueIsAOpResult(buf) ||
      !pbcOpIsA(mlirOpResultGetOwner(buf), "memref.alloc") || !mlirShapedTypeHasStaticShape(t) ||
      !pbcMemrefHasIdentityLayout(t) || !onlyAffineUses(buf))
    return false;
  int rank = (int)mlirShapedTypeGetRank(t), perm[PBC_MAX_RANK];
  pbcDimLastPermutation(rank, dim, perm);
  int64_t shape[PBC_MAX_RANK];
  for (int q = 0; q < rank; ++q)
    shape[q] = mlirShapedTypeGetDimSize(t, perm[q]);
  mlirValueSetType(buf, mlirMemRefTypeGet(mlirShapedTypeGetElementType(t), rank, shape,
                                          mlirAttributeGetNull(), mlirMemRefTypeGetMemorySpace(t)));
  for (MlirOpOperand u = mlirValueGetFirstUse(buf); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u))
    if (!pbcOpIsA(mlirOpOperandGetOwner(u), "memref.dealloc"))
      pbcAccessPermuteSubscripts(mlirOpOperandGetOwner(u), perm);
  return true;
}

static void packNest(MlirOperation outerSite, const State *st, int *packed) {
  Accs *a = calloc(1, sizeof(Accs));
  if (!pbcGatherAccesses(outerSite, a->acc, 128, &a->n))
    a->n = 0; /* nothing is packed */
  MlirValue done[128];
  int nDone = 0;
  for (int i = 0; i < a->n; ++i) {
    const PbcAccess *x = &a->acc[i];
    if (x->isWrite || writtenIn(a, x->memref) || !pbcMemrefIsRoot(pbcMemrefBase(x->memref)))
      continue;
    bool seen = false;
    for (int d = 0; d < nDone; ++d)
      seen |= mlirValueEqual(done[d], x->memref);
    if (seen)
      continue;
    done[nDone++] = x->memref;
    /* Innermost pack site (ancestor of the access) the access depends on. */
    MlirOperation site = {NULL};
    for (MlirOperation p = mlirOperationGetParentOperation(x->op);
         !mlirOperationIsNull(p) && pbcOpIsInside(p, outerSite);
         p = mlirOperationGetParentOperation(p))
      if (pbcOpHasAttr(p, PBC_MARK_PACK_SITE) && pbcAccessDependsOnLoop(x, p)) {
        site = p;
        break;
      }
    /* An input pbc-tile marked (a GEMM's B read across J) is copied
     * whatever its rows, into a buffer with the marked dimension last: the
     * copy transposes (pbc-transpose-copies), the nest reads it along J. */
    MlirAttribute transposed = mlirOperationGetAttributeByName(x->op, pbcStr(PBC_MARK_PACK_TRANSPOSED));
    bool transpose = !mlirAttributeIsNull(transposed);
    if (mlirOperationIsNull(site) || (!transpose && wholeRowCopyIsWaste(x, site, st)) ||
        !pbcExtAffineDataCopy(site, x->memref, 0, st->fastSpace, PBC_MARK_COPY))
      continue;
    ++*packed;
    if (transpose)
      transposeBuffer(copyBuffer(site, x->memref), (int)mlirIntegerAttrGetValueInt(transposed));
  }
  free(a);
}

/* Rows a multiple of 256 bytes apart map the rows of a tile to a few cache
 * set groups (a 128 x 1024 f32 buffer: 4 KiB apart, all in one
 * set group, 12 ways for 128 rows). One cache line of padding per row
 * spreads them; only the alloc's type changes: every access goes through
 * the same value and stays in bounds. On GPUs the same padding avoids
 * shared-memory bank conflicts. */
static void padRows(MlirOperation alloc, int lineBytes) {
  MlirValue buf = mlirOperationGetResult(alloc, 0);
  MlirType t = mlirValueGetType(buf);
  int rank = (int)mlirShapedTypeGetRank(t);
  int bits = pbcElementBits(t);
  if (rank < 2 || bits < 8 || !mlirShapedTypeHasStaticShape(t))
    return;
  int64_t shape[PBC_MAX_RANK];
  for (int d = 0; d < rank && d < PBC_MAX_RANK; ++d)
    shape[d] = mlirShapedTypeGetDimSize(t, d);
  long long rowBytes = shape[rank - 1] * bits / 8;
  if (!pbcRowsCrowdCacheSets(rowBytes) || lineBytes * 8 % bits)
    return;
  shape[rank - 1] += lineBytes * 8 / bits;
  MlirType padded = mlirMemRefTypeGet(mlirShapedTypeGetElementType(t), rank, shape,
                                      mlirAttributeGetNull(), mlirMemRefTypeGetMemorySpace(t));
  mlirValueSetType(buf, padded);
}

static MlirWalkResult padBuffers(MlirOperation op, void *data) {
  const State *st = data;
  if (pbcOpIsA(op, "memref.alloc") && mlirOperationGetNumOperands(op) == 0) {
    MlirValue buf = mlirOperationGetResult(op, 0);
    /* Only the buffers pbc-pack made (written by a pbc.copy nest, not a
     * buffer a copy nest reads), and only if every use is an affine access
     * or the dealloc. */
    bool filledByCopy = false;
    for (MlirOpOperand u = mlirValueGetFirstUse(buf); !mlirOpOperandIsNull(u);
         u = mlirOpOperandGetNextUse(u)) {
      MlirOperation user = mlirOpOperandGetOwner(u);
      PbcAccess acc;
      filledByCopy |= pbcOpIsInCopyNest(user) && pbcAccessGet(user, &acc) && acc.isWrite &&
                      mlirValueEqual(acc.memref, buf);
    }
    if (filledByCopy && onlyAffineUses(buf) && st->padBuffers)
      padRows(op, st->lineBytes);
  }
  return MlirWalkResultAdvance;
}

static MlirWalkResult unmark(MlirOperation op, void *data) {
  (void)data;
  mlirOperationRemoveAttributeByName(op, pbcStr(PBC_MARK_PACK_SITE));
  mlirOperationRemoveAttributeByName(op, pbcStr(PBC_MARK_PACK_TRANSPOSED));
  return MlirWalkResultAdvance;
}

static bool run(MlirOperation func, void *state) {
  PbcOpList sites = {0};
  mlirOperationWalk(func, findSites, &sites, MlirWalkPreOrder);
  int packed = 0;
  for (int i = 0; i < sites.n; ++i)
    packNest(sites.ops[i], state, &packed);
  if (packed)
    mlirOperationWalk(func, padBuffers, state, MlirWalkPreOrder);
  mlirOperationWalk(func, unmark, NULL, MlirWalkPreOrder);
  pbcOpListDestroy(&sites);
  return true;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcPackPass = {
    "pbc-pack", "func.func",   "Pack input tiles into contiguous fast buffers",
    run,        sizeof(State), createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  enum { FAST_MEMORY_SPACE, CACHE_LINE_BYTES, PAD, L2_BYTES, NUM_OPTIONS };
  static const PbcCountOption kOptions[] = {
      [FAST_MEMORY_SPACE] = {"fast-memory-space", 0},
      [CACHE_LINE_BYTES] = {"cache-line-bytes", 64},
      [PAD] = {"pad", 1},
      [L2_BYTES] = {"l2-bytes", 0},
      [NUM_OPTIONS] = {NULL, 0}};
  long long v[NUM_OPTIONS];
  if (!pbcPassCountOptions(options, kOptions, v, err, errLen))
    return (MlirPass){NULL};
  long long line = v[CACHE_LINE_BYTES];
  State st = {(unsigned)v[FAST_MEMORY_SPACE],
              line > 0 ? (int)line : 64, v[PAD] != 0,
              v[L2_BYTES]};
  return pbcCPassCreate(&pbcPackPass, &st);
}
