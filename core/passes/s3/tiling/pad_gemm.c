/* pbc-pad-gemm{vector-bits,l3-bytes,cores,l1d-bytes,l2-bytes}: partial tiles of a GEMM by padding (PolyBlocks
 * §4.3: "partial tiles handled"). pbc-tile only takes register tiles that
 * divide the loops (MR rows by NV vectors), so N not a multiple of the
 * vector lanes left a GEMM untiled and scalar (997^3 ran at 0.017x oneDNN,
 * ViT's 12 x 197 x 197 attention scores 40x slower than 12 x 196 x 196),
 * and an M with no divisor in 4..16 left it one row high. Such a GEMM
 *   C[i, j] (+)= A[i, k] * B[k, j]   (a perfect band of three loops from 0,
 *   step 1, every subscript one of their indices, the loops the memrefs'
 *   whole dimensions)
 * or a batch of them, C[b, i, j] (+)= A[b, i, k] * B[b, k, j] (a fourth
 * loop, every buffer's first dimension; the batch is never padded)
 * runs instead on buffers padded to N' (a multiple of the lanes) and M' (a
 * multiple of 8): A' and B' are copies with zeros in the padding (a zero
 * row or column adds nothing to C), C' starts as C (or as C's fill, which
 * is moved to it: pbc-absorb-fill then drops it) and is copied back after.
 * The copies cost a pass over each operand, against a tiled, vectorized
 * GEMM; their nests are ordinary pointwise nests for the passes after. */
#include <stdlib.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/op_list.h"
#include "passes/passes.h"
#include "passes/s3/tiling/skinny_gemm.h"

typedef struct {
  int vectorBits;
  long long l3; /* which skinny GEMMs pbc-tile reads as dot products */
  int cores;
  long long l1, l2; /* and which GEMVs it splits by rows of B */
} State;

enum { kMaxAccesses = 16, kMaxOperands = 3, kMaxRank = 3, kMaxDepth = kMaxRank + 1 };

typedef struct {
  MlirOperation band[kMaxDepth];
  long long trip[kMaxDepth];
  int depth; /* 3, or 4 with a batch loop */
  int rank;  /* of every buffer: 2, or 3 with the batch first */
  PbcAccess acc[kMaxAccesses];
  int n;
  int loopOf[kMaxAccesses][kMaxRank];   /* band position each subscript indexes */
  MlirValue buf[kMaxOperands];          /* distinct memrefs; buf[0] is the output */
  int bufLoops[kMaxOperands][kMaxRank]; /* the loops every access of buf[b] uses */
  int nBufs;
  int iPos, jPos, kPos; /* band positions of the row, column and reduction loops */
  int batchPos;         /* and of the batch loop, or -1 */
} Gemm;

static long long roundUp(long long x, long long m) { return (x + m - 1) / m * m; }

/* True if `f` is the loop index `iv` alone (unscaled, no offset). */
static bool isPlainIndex(const PbcLinearForm *f, MlirValue iv) {
  long long k;
  return pbcLinearIsIvPlusConstant(f, iv, &k) && k == 0;
}

/* Position in the band of the loop whose index `f` is, or -1. */
static int ivPosition(const PbcLinearForm *f, const Gemm *g) {
  int l = f->linear && f->nTerms == 1 ? pbcLoopIndexOf(f->values[0], g->band, g->depth) : -1;
  return l >= 0 && isPlainIndex(f, pbcLoopIv(g->band[l])) ? l : -1;
}

static bool isFloatMemref(MlirType t) {
  if (!mlirTypeIsAMemRef(t) || !mlirShapedTypeHasStaticShape(t) || !pbcMemrefHasIdentityLayout(t))
    return false;
  MlirType e = mlirShapedTypeGetElementType(t);
  return mlirTypeIsAF32(e) || mlirTypeIsAF64(e) || mlirTypeIsAF16(e) || mlirTypeIsABF16(e);
}

/* Matches the GEMM shape above; every access in g, the output first. */
static bool matchGemm(MlirOperation root, Gemm *g) {
  g->depth = pbcLoopBand(root, g->band, kMaxDepth);
  if (g->depth < 3)
    return false;
  g->rank = g->depth - 1;
  for (int l = 0; l < g->depth; ++l) {
    PbcLinearForm lb;
    g->trip[l] = pbcLoopZeroBasedTrip(g->band[l]);
    if (g->trip[l] <= 0 || !pbcLoopBoundForm(g->band[l], false, &lb) || lb.nTerms ||
        lb.constant != 0)
      return false;
  }
  MlirOperation inner = g->band[g->depth - 1];
  if (!pbcLoopBodyIsFlat(inner) || !pbcGatherAccesses(inner, g->acc, kMaxAccesses, &g->n))
    return false;
  int r = g->rank;
  g->nBufs = 0;
  g->batchPos = -1;
  int stores = 0;
  for (int x = 0; x < g->n; ++x) {
    PbcAccess *a = &g->acc[x];
    if (a->lanes || a->rank != r || !isFloatMemref(mlirValueGetType(a->memref)))
      return false;
    for (int d = 0; d < r; ++d) {
      int l = ivPosition(&a->subscripts[d], g);
      if (l < 0 || mlirShapedTypeGetDimSize(mlirValueGetType(a->memref), d) != g->trip[l])
        return false;
      g->loopOf[x][d] = l;
    }
    if (r == 3) { /* the same batch loop first everywhere, and only there */
      if (g->batchPos < 0)
        g->batchPos = g->loopOf[x][0];
      if (g->loopOf[x][0] != g->batchPos || g->loopOf[x][1] == g->batchPos ||
          g->loopOf[x][2] == g->batchPos)
        return false;
    }
    int b = 0;
    while (b < g->nBufs && !mlirValueEqual(g->buf[b], a->memref))
      ++b;
    if (b == g->nBufs) {
      if (b == kMaxOperands)
        return false;
      g->buf[g->nBufs++] = a->memref;
      for (int d = 0; d < r; ++d)
        g->bufLoops[b][d] = g->loopOf[x][d];
    } else {
      for (int d = 0; d < r; ++d)
        if (g->bufLoops[b][d] != g->loopOf[x][d])
          return false; /* C[i, j] and C[j, i]: one padded shape can't serve both */
    }
    if (a->isWrite) {
      ++stores;
      if (b != 0) { /* the output first */
        MlirValue t = g->buf[0];
        g->buf[0] = g->buf[b];
        g->buf[b] = t;
        for (int d = 0; d < r; ++d) {
          int l = g->bufLoops[0][d];
          g->bufLoops[0][d] = g->bufLoops[b][d];
          g->bufLoops[b][d] = l;
        }
      }
      g->iPos = g->loopOf[x][r - 2];
      g->jPos = g->loopOf[x][r - 1];
    }
  }
  if (stores != 1 || g->nBufs != 3 || g->iPos == g->jPos)
    return false;
  g->kPos = -1;
  for (int l = 0; l < g->depth; ++l)
    if (l != g->iPos && l != g->jPos && l != g->batchPos)
      g->kPos = l;
  if (g->kPos < 0)
    return false;
  /* Each buffer is one array: no two of them may alias. */
  for (int x = 0; x < 3; ++x)
    for (int y = x + 1; y < 3; ++y)
      if (pbcMemrefsMayAlias(g->buf[x], g->buf[y]))
        return false;
  return true;
}

/* `origin` + p for each p in the nest's box, as affine.apply (or p itself). */
static void offsetIndices(MlirOperation at, const MlirValue *ivs, const long long *origin,
                          int rank, MlirLocation loc, MlirValue *out) {
  MlirContext ctx = mlirOperationGetContext(at);
  for (int d = 0; d < rank; ++d) {
    MlirAffineExpr e = mlirAffineAddExprGet(mlirAffineDimExprGet(ctx, 0),
                                            mlirAffineConstantExprGet(ctx, origin[d]));
    out[d] = origin[d]
                 ? pbcBuildAffineApply(at, mlirAffineMapGet(ctx, 1, 0, 1, &e), &ivs[d], 1, loc)
                 : ivs[d];
  }
}

/* dst[dstOrigin + p] = src[srcOrigin + p] (src null: = 0) for p in
 * [0, extent), before `before`; nothing if the box is empty. */
static void buildShiftedCopy(MlirOperation before, MlirValue src, const long long *srcOrigin,
                             MlirValue dst, const long long *dstOrigin, const long long *extent,
                             int rank, MlirLocation loc) {
  int64_t shape[kMaxRank];
  for (int d = 0; d < rank; ++d) {
    if (extent[d] <= 0)
      return;
    shape[d] = extent[d];
  }
  MlirValue ivs[kMaxRank], from[kMaxRank], to[kMaxRank];
  MlirOperation end;
  MlirOperation nest = pbcBuildAffineNest(before, shape, rank, loc, ivs, &end);
  offsetIndices(end, ivs, dstOrigin, rank, loc, to);
  MlirValue v;
  if (mlirValueIsNull(src)) {
    v = pbcBuildFloatConstant(end, mlirShapedTypeGetElementType(mlirValueGetType(dst)), 0.0);
  } else {
    offsetIndices(end, ivs, srcOrigin, rank, loc, from);
    v = mlirOperationGetResult(pbcBuildAffineLoad(end, src, from, rank, loc), 0);
  }
  pbcBuildAffineStore(end, v, dst, to, rank, loc);
  pbcNestSetKind(nest, "pointwise");
}

/* dst[o + p] = src[o + p] (src null: = 0) over the box [o, o + extent). */
static void buildCopy(MlirOperation before, MlirValue src, MlirValue dst, const long long *origin,
                      const long long *extent, int rank, MlirLocation loc) {
  buildShiftedCopy(before, src, origin, dst, origin, extent, rank, loc);
}

/* True if `f` fills `c` (of rank `rank`): a perfect band over c's
 * dimensions, in order, storing a constant; its loops in `band`, its store
 * in `store`. */
static bool isFillOf(MlirOperation f, MlirValue c, int rank, MlirOperation band[kMaxRank],
                     PbcAccess *store) {
  MlirOperation constant;
  if (!pbcOpIsA(f, "affine.for") || pbcLoopBand(f, band, rank) != rank ||
      !pbcLoopStoresOnlyConstant(band[rank - 1], store, &constant) || store->lanes ||
      store->rank != rank || !mlirValueEqual(store->memref, c))
    return false;
  MlirType t = mlirValueGetType(c);
  for (int d = 0; d < rank; ++d) {
    PbcLinearForm lb;
    if (!isPlainIndex(&store->subscripts[d], pbcLoopIv(band[d])) ||
        pbcLoopZeroBasedTrip(band[d]) != mlirShapedTypeGetDimSize(t, d) ||
        !pbcLoopBoundForm(band[d], false, &lb) || lb.nTerms || lb.constant)
      return false;
  }
  return true;
}

/* The op before `root` in its block that last touches `c`, or null. */
static MlirOperation previousToucher(MlirOperation root, MlirValue c) {
  MlirOperation last = {NULL};
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirOperationGetBlock(root));
       !mlirOperationEqual(op, root); op = mlirOperationGetNextInBlock(op))
    if (pbcMayAccessMemref(op, c))
      last = op;
  return last;
}

/* True if B (the input indexed by J) is contiguous along K: B[j, k], a
 * linear layer's weight. */
static bool readsBAlongK(const Gemm *g) {
  int row = g->rank - 2, col = g->rank - 1;
  for (int b = 1; b < g->nBufs; ++b)
    if (g->bufLoops[b][row] == g->jPos || g->bufLoops[b][col] == g->jPos)
      return g->bufLoops[b][col] != g->jPos && g->bufLoops[b][col] != g->iPos;
  return false;
}

/* The static shape of buffer `b`. */
static void bufShape(const Gemm *g, int b, long long *dims) {
  MlirType t = mlirValueGetType(g->buf[b]);
  for (int d = 0; d < g->rank; ++d)
    dims[d] = mlirShapedTypeGetDimSize(t, d);
}

/* A fresh buffer like buffer `b`, of shape `shape`, before `at`. */
static MlirValue allocLike(const Gemm *g, int b, const int64_t *shape, MlirOperation at,
                           MlirLocation loc) {
  MlirType t = mlirValueGetType(g->buf[b]);
  MlirType pt = mlirMemRefTypeGet(mlirShapedTypeGetElementType(t), g->rank, shape,
                                  mlirAttributeGetNull(), mlirMemRefTypeGetMemorySpace(t));
  return mlirOperationGetResult(pbcBuildAlloc(at, pt, loc), 0);
}

/* A skinny GEMM (skinny_gemm.h) reads B in place, once: a padded copy
 * of B would triple its traffic. Its columns up to the last whole vector
 * run in place; the last r < lanes columns run as a second nest, also in
 * place where r is a multiple of a quarter vector (narrower vectors: 1000
 * columns, 16 lanes: the last 8 as one 8-lane vector), else on copies of
 * B's and C's last r columns, padded to one vector (zeros in B's). */
static void padPartialColumns(MlirOperation root, const Gemm *g, long long lanes, int bits) {
  long long n = g->trip[g->jPos], r = n % lanes, n0 = n - r;
  int rank = g->rank;
  MlirLocation loc = mlirOperationGetLocation(root);
  MlirOperation after = mlirOperationGetNextInBlock(root);
  if (pbcVectorLanes((int)lanes * bits, bits, r) >= lanes / 4) {
    int j = g->jPos;
    MlirValue origin = pbcBuildIndexConstant(root, n0);
    pbcCloneNestRestricted(root, after, 1, &j, &r, &origin, NULL);
    pbcLoopSetUpperBound(g->band[j], n0);
    return;
  }
  MlirOperation tail = mlirOperationClone(root), band[kMaxDepth];
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(root), after, tail);
  pbcLoopBand(tail, band, g->depth);
  pbcLoopSetUpperBound(band[g->jPos], lanes);
  PbcAccess acc[kMaxAccesses];
  int nAcc;
  pbcGatherAccesses(band[g->depth - 1], acc, kMaxAccesses, &nAcc);
  MlirValue pad[kMaxOperands];
  long long zero[kMaxRank] = {0};
  for (int b = 0; b < g->nBufs; ++b) {
    int d = -1; /* the dimension J indexes */
    for (int e = rank - 2; e < rank; ++e)
      if (g->bufLoops[b][e] == g->jPos)
        d = e;
    pad[b] = g->buf[b];
    if (d < 0)
      continue; /* A: read in place */
    long long dims[kMaxRank], from[kMaxRank] = {0}, part[kMaxRank], rest[kMaxRank],
        restAt[kMaxRank] = {0};
    int64_t shape[kMaxRank];
    bufShape(g, b, dims);
    for (int e = 0; e < rank; ++e)
      shape[e] = part[e] = rest[e] = dims[e];
    shape[d] = lanes;
    pad[b] = allocLike(g, b, shape, root, loc);
    from[d] = n0;
    part[d] = r;
    rest[d] = lanes - r;
    restAt[d] = r;
    buildShiftedCopy(root, g->buf[b], from, pad[b], zero, part, rank, loc);
    buildShiftedCopy(root, (MlirValue){NULL}, zero, pad[b], restAt, rest, rank, loc);
    if (b == 0) /* C's last columns back, after the tail */
      buildShiftedCopy(after, pad[0], zero, g->buf[0], from, part, rank, loc);
  }
  for (int a = 0; a < nAcc; ++a)
    for (int b = 0; b < g->nBufs; ++b)
      if (mlirValueEqual(acc[a].memref, g->buf[b]))
        mlirOperationSetOperand(acc[a].op, acc[a].isWrite ? 1 : 0, pad[b]);
  for (int b = 0; b < g->nBufs; ++b)
    if (!mlirValueEqual(pad[b], g->buf[b]))
      pbcBuildDealloc(after, pad[b], loc);
  pbcLoopSetUpperBound(g->band[g->jPos], n0);
}

static void padGemm(MlirOperation root, const State *st) {
  Gemm g;
  if (!matchGemm(root, &g))
    return;
  MlirType ct = mlirValueGetType(g.buf[0]);
  int bits = pbcElementBits(ct);
  long long lanes = bits > 0 ? st->vectorBits / bits : 0;
  if (lanes < 2)
    return;
  int rank = g.rank, row = rank - 2, col = rank - 1;
  long long padded[kMaxDepth];
  for (int l = 0; l < g.depth; ++l)
    padded[l] = g.trip[l];
  long long m = g.trip[g.iPos], n = g.trip[g.jPos], k = g.trip[g.kPos];
  if (readsBAlongK(&g) &&
      pbcSkinnyDotRowTile(m, k, n * k * (bits / 8), st->vectorBits, bits, 0, st->l3))
    return; /* dot products along K: J needs no whole vectors */
  if (!readsBAlongK(&g) && g.batchPos < 0 &&
      pbcGemvSplitsK(m, k, bits, n * (bits / 8), n * k * (bits / 8), st->cores, st->l1, st->l2))
    return; /* pbc-tile sweeps the partial vector within each core's rows */
  bool skinny = pbcSkinnyKnRowTile(m) > 0;
  if (n % lanes && skinny && n > lanes) {
    padPartialColumns(root, &g, lanes, bits);
    return;
  }
  if (n % lanes)
    padded[g.jPos] = roundUp(n, lanes);
  /* register tiles 4 to 16 rows high, or one over all rows if skinny */
  if (!skinny && !pbcHasDivisorIn(m, 4, 16))
    padded[g.iPos] = roundUp(m, 8);
  if (padded[g.iPos] == m && padded[g.jPos] == n)
    return;
  MlirLocation loc = mlirOperationGetLocation(root);
  MlirOperation after = mlirOperationGetNextInBlock(root);
  MlirValue pad[kMaxOperands];
  long long zero[kMaxRank] = {0};
  for (int b = 0; b < g.nBufs; ++b) {
    /* This buffer's dimensions: the band loops that index them. */
    long long dims[kMaxRank];
    int64_t shape[kMaxRank];
    bool same = true;
    bufShape(&g, b, dims);
    for (int d = 0; d < rank; ++d) {
      shape[d] = padded[g.bufLoops[b][d]];
      same = same && shape[d] == dims[d];
    }
    if (same) {
      pad[b] = g.buf[b]; /* not indexed by a padded loop: read in place */
      continue;
    }
    pad[b] = allocLike(&g, b, shape, root, loc);
    MlirOperation fillBand[kMaxRank];
    PbcAccess fill;
    MlirOperation prev = b == 0 ? previousToucher(root, g.buf[0]) : (MlirOperation){NULL};
    if (b == 0 && !mlirOperationIsNull(prev) && isFillOf(prev, g.buf[0], rank, fillBand, &fill)) {
      /* C's fill fills C' (whole: C' is then C's initial value). */
      mlirOperationSetOperand(fill.op, 1, pad[0]);
      for (int d = 0; d < rank; ++d)
        pbcLoopSetUpperBound(fillBand[d], shape[d]);
      /* the alloc must dominate the fill */
      mlirOperationMoveBefore(mlirOpResultGetOwner(pad[0]), prev);
    } else {
      buildCopy(root, g.buf[b], pad[b], zero, dims, rank, loc);
      if (b > 0) { /* inputs: zeros in the padding, below and right of the copy */
        long long belowAt[kMaxRank] = {0}, below[kMaxRank], rightAt[kMaxRank] = {0},
                  right[kMaxRank];
        for (int d = 0; d < rank; ++d)
          below[d] = right[d] = shape[d];
        belowAt[row] = dims[row];
        below[row] = shape[row] - dims[row];
        rightAt[col] = dims[col];
        right[row] = dims[row];
        right[col] = shape[col] - dims[col];
        buildCopy(root, (MlirValue){NULL}, pad[b], belowAt, below, rank, loc);
        buildCopy(root, (MlirValue){NULL}, pad[b], rightAt, right, rank, loc);
      }
    }
  }
  for (int a = 0; a < g.n; ++a) {
    int b = 0;
    while (!mlirValueEqual(g.buf[b], g.acc[a].memref))
      ++b;
    mlirOperationSetOperand(g.acc[a].op, g.acc[a].isWrite ? 1 : 0, pad[b]);
  }
  for (int l = 0; l < g.depth; ++l)
    pbcLoopSetUpperBound(g.band[l], padded[l]);
  long long dims[kMaxRank];
  bufShape(&g, 0, dims);
  buildCopy(after, pad[0], g.buf[0], zero, dims, rank, loc);
  for (int b = 0; b < g.nBufs; ++b)
    if (!mlirValueEqual(pad[b], g.buf[b]))
      pbcBuildDealloc(after, pad[b], loc);
}

static bool run(MlirOperation func, void *state) {
  PbcOpList roots = {0};
  pbcRootNests(func, "matmul", &roots);
  for (int i = 0; i < roots.n; ++i)
    padGemm(roots.ops[i], state);
  pbcOpListDestroy(&roots);
  return true;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcPadGemmPass = {
    "pbc-pad-gemm", "func.func", "GEMMs on buffers padded to whole register tiles", run,
    sizeof(State),  createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  enum { VECTOR_BITS, L3_BYTES, CORES, L1D_BYTES, L2_BYTES, NUM_OPTIONS };
  static const PbcCountOption kOptions[] = {
      [VECTOR_BITS] = {"vector-bits", 256},
      [L3_BYTES] = {"l3-bytes", 8 << 20},
      [CORES] = {"cores", 1},
      [L1D_BYTES] = {"l1d-bytes", 32768},
      [L2_BYTES] = {"l2-bytes", 1 << 20},
      [NUM_OPTIONS] = {NULL, 0}};
  long long v[NUM_OPTIONS];
  if (!pbcPassCountOptions(options, kOptions, v, err, errLen))
    return (MlirPass){NULL};
  State st = {(int)v[VECTOR_BITS], v[L3_BYTES], (int)v[CORES], v[L1D_BYTES], v[L2_BYTES]};
  return pbcCPassCreate(&pbcPadGemmPass, &st);
}
