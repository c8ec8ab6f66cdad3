/* pbc-sliding-window: a stencil's private buffer as a window of rows that
 * slides with the consumer, each producer row computed just in time.
 *
 * After slicing fusion (pbc-fuse-slices), a tile of the blur computes the
 * horizontal pass over its T+K-1 rows into a private buffer, then the
 * vertical pass reads K rows of it per output row. The two nests alternate
 * a read-only phase (x from memory) with a write-only one (y to memory), and
 * the buffer lives in L2 (hand-written C and pbc's blur measured both forms:
 * tools/bench/README.md).
 *
 * For sibling nests A (producer) and B (consumer) with equal bands except
 * one level w, where A runs K-1 iterations more, when A writes only a
 * fresh buffer that B alone reads (rows iv_w of A; rows iv_w + k of B,
 * 0 <= k < K, other subscripts equal level for level) the pair becomes:
 *   A over its first K-1 rows (the prologue), then one nest with B's band
 *   whose body runs A's body for row r + K-1, then B's body for row r;
 *   the buffer keeps K rows, row i in slot i mod K; B's reads of row r+K-1
 *   take the values A's body just stored.
 * Legal because B's row r reads rows r..r+K-1, all computed by then (the
 * last in the same iteration at the same point of the inner levels, which
 * the equal subscripts and A's parallel loops make the only write of that
 * element), and slot (r+K-1) mod K held row r-1, which no later B reads.
 * Ops between A and B that A's body moves past may not write what A reads;
 * B may not write what A reads. Then the tile around the pair may grow
 * taller (growTile): the buffer no longer bounds its height. */
#include <stdlib.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "passes/passes.h"

enum { kMaxAccesses = 512, kMaxViews = 64, kMaxProloguePct = 1 };

typedef struct {
  MlirOperation a, b; /* producer and consumer nests */
  MlirOperation bandA[PBC_MAX_BAND], bandB[PBC_MAX_BAND];
  int depth, w;     /* band depth; the level A runs K-1 iterations more */
  long long window; /* K */
  MlirValue view;   /* the memref both nests index (the buffer or a view) */
  int dim;          /* the view's subscript that is the row (iv_w) */
  MlirOperation alloc;
  int allocDim;           /* the buffer's dimension the view's `dim` is */
  MlirOperation prologue; /* after the rewrite: A's first K-1 rows */
  PbcAccess acc[2][kMaxAccesses];
  int n[2];
  int storeOf[kMaxAccesses];      /* B's reads of the view: index of the A store whose
                                     point they read, -1 for other accesses */
  long long offset[kMaxAccesses]; /* and their k */
} Plan;


/* True if a and b are the same memref: one value, or equal collapse_shape
 * views of one buffer (slicing fusion makes one per access group). */
static bool sameView(MlirValue a, MlirValue b) {
  if (mlirValueEqual(a, b))
    return true;
  if (!mlirValueIsAOpResult(a) || !mlirValueIsAOpResult(b) ||
      !mlirTypeEqual(mlirValueGetType(a), mlirValueGetType(b)))
    return false;
  MlirOperation va = mlirOpResultGetOwner(a), vb = mlirOpResultGetOwner(b);
  return pbcOpIsA(va, "memref.collapse_shape") && pbcOpIsA(vb, "memref.collapse_shape") &&
         mlirValueEqual(mlirOperationGetOperand(va, 0), mlirOperationGetOperand(vb, 0)) &&
         mlirAttributeEqual(mlirOperationGetInherentAttributeByName(va, pbcStr("reassociation")),
                            mlirOperationGetInherentAttributeByName(vb, pbcStr("reassociation")));
}

/* True if a (over A's band ivs) equals b (over B's) with A's level-l iv
 * taken for B's, level for level. */
static bool sameFormAcrossBands(const PbcLinearForm *a, const PbcLinearForm *b, const Plan *p) {
  if (!a->linear || !b->linear || a->constant != b->constant)
    return false;
  int nonzeroA = 0, nonzeroB = 0;
  for (int t = 0; t < a->nTerms; ++t) {
    if (a->coeffs[t] == 0)
      continue;
    ++nonzeroA;
    MlirValue v = a->values[t];
    int l = pbcLoopIndexOf(v, p->bandA, p->depth);
    if (l >= 0)
      v = pbcLoopIv(p->bandB[l]);
    if (pbcLinearCoeff(b, v) != pbcLinearCoeff(a, a->values[t]))
      return false;
  }
  for (int t = 0; t < b->nTerms; ++t)
    nonzeroB += b->coeffs[t] != 0;
  return nonzeroA == nonzeroB;
}

/* The bands: equal depth, flat innermost bodies, loops from 0 to equal
 * constants with equal steps at every level but w, where A runs K-1
 * iterations more (step 1). */
static bool matchBands(Plan *p) {
  p->depth = pbcLoopBand(p->a, p->bandA, PBC_MAX_BAND);
  if (pbcLoopBand(p->b, p->bandB, PBC_MAX_BAND) != p->depth ||
      !pbcLoopBodyIsFlat(p->bandA[p->depth - 1]) || !pbcLoopBodyIsFlat(p->bandB[p->depth - 1]))
    return false;
  p->w = -1;
  for (int l = 0; l < p->depth; ++l) {
    long long ta = pbcLoopUpperFromZero(p->bandA[l]), tb = pbcLoopUpperFromZero(p->bandB[l]);
    if (ta < 0 || tb < 0 || pbcLoopStep(p->bandA[l]) != pbcLoopStep(p->bandB[l]) ||
        mlirOperationGetNumResults(p->bandA[l]) || mlirOperationGetNumResults(p->bandB[l]))
      return false;
    if (ta == tb)
      continue;
    if (p->w >= 0 || ta < tb + 1 || pbcLoopStep(p->bandA[l]) != 1)
      return false;
    p->w = l;
    p->window = ta - tb + 1;
  }
  return p->w >= 0;
}

/* A writes only `view`, a view of a fresh buffer, at rows iv_w; reads none
 * of it. Sets view, alloc, dim. */
static bool matchProducer(Plan *p) {
  const PbcAccess *acc = p->acc[0];
  MlirValue iv = pbcLoopIv(p->bandA[p->w]);
  p->dim = -1;
  for (int i = 0; i < p->n[0]; ++i) {
    if (!acc[i].isWrite)
      continue;
    if (p->dim < 0) {
      p->view = acc[i].memref;
      long long k;
      for (int d = 0; d < acc[i].rank && p->dim < 0; ++d)
        if (pbcLinearIsIvPlusConstant(&acc[i].subscripts[d], iv, &k) && k == 0)
          p->dim = d;
      if (p->dim < 0)
        return false;
    }
    if (!sameView(acc[i].memref, p->view))
      return false;
    for (int d = 0; d < acc[i].rank; ++d) {
      long long k;
      if (d == p->dim ? !pbcLinearIsIvPlusConstant(&acc[i].subscripts[d], iv, &k) || k != 0
                      : pbcLinearCoeff(&acc[i].subscripts[d], iv) != 0)
        return false;
    }
  }
  if (p->dim < 0)
    return false;
  for (int i = 0; i < p->n[0]; ++i)
    if (!acc[i].isWrite && pbcMemrefsMayAlias(acc[i].memref, p->view))
      return false;
  MlirValue base = pbcMemrefBase(p->view);
  if (!mlirValueIsAOpResult(base) || !pbcOpIsA(mlirOpResultGetOwner(base), "memref.alloc"))
    return false;
  p->alloc = mlirOpResultGetOwner(base);
  return true;
}

/* B reads the view only, at rows iv_w + k (0 <= k < K) and A's points;
 * writes nothing A reads. */
static bool matchConsumer(Plan *p) {
  const PbcAccess *acc = p->acc[1], *accA = p->acc[0];
  MlirValue iv = pbcLoopIv(p->bandB[p->w]);
  for (int i = 0; i < p->n[1]; ++i) {
    p->storeOf[i] = -1;
    if (acc[i].isWrite) {
      if (pbcMemrefsMayAlias(acc[i].memref, p->view))
        return false;
      for (int j = 0; j < p->n[0]; ++j)
        if (pbcMemrefsMayAlias(acc[i].memref, accA[j].memref))
          return false;
      continue;
    }
    if (!pbcMemrefsMayAlias(acc[i].memref, p->view))
      continue;
    if (!sameView(acc[i].memref, p->view) ||
        !pbcLinearIsIvPlusConstant(&acc[i].subscripts[p->dim], iv, &p->offset[i]) ||
        p->offset[i] < 0 || p->offset[i] >= p->window)
      return false;
    for (int j = 0; j < p->n[0] && p->storeOf[i] < 0; ++j) {
      bool same = accA[j].isWrite && accA[j].lanes == acc[i].lanes && accA[j].rank == acc[i].rank;
      for (int d = 0; same && d < acc[i].rank; ++d)
        same = d == p->dim || sameFormAcrossBands(&accA[j].subscripts[d], &acc[i].subscripts[d], p);
      if (same)
        p->storeOf[i] = j;
    }
    if (p->storeOf[i] < 0)
      return false;
  }
  return true;
}

/* The buffer's uses are deallocs and views like `view` (or, if it is
 * the view, accesses) in the two nests; the views', accesses in the two
 * nests. Sets allocDim: the view's row dimension must be one dimension of
 * the buffer (a collapse_shape group of one). */
static bool bufferIsPrivate(Plan *p) {
  MlirValue base = mlirOperationGetResult(p->alloc, 0);
  bool isView = !mlirValueEqual(base, p->view);
  p->allocDim = p->dim;
  if (isView) {
    MlirOperation view = mlirOpResultGetOwner(p->view);
    if (!pbcOpIsA(view, "memref.collapse_shape") ||
        !mlirValueEqual(mlirOperationGetOperand(view, 0), base))
      return false;
    MlirAttribute groups = mlirOperationGetInherentAttributeByName(view, pbcStr("reassociation"));
    MlirAttribute group = mlirArrayAttrGetElement(groups, p->dim);
    if (mlirArrayAttrGetNumElements(group) != 1)
      return false;
    p->allocDim = (int)mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(group, 0));
  }
  int nViews = 0;
  for (MlirOpOperand u = mlirValueGetFirstUse(base); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    if (pbcOpIsA(user, "memref.dealloc"))
      continue;
    if (!isView) {
      if (!pbcOpIsInside(user, p->a) && !pbcOpIsInside(user, p->b))
        return false;
      continue;
    }
    if (mlirOperationGetNumResults(user) != 1 ||
        !sameView(mlirOperationGetResult(user, 0), p->view) || ++nViews > kMaxViews)
      return false;
    for (MlirOpOperand v = mlirValueGetFirstUse(mlirOperationGetResult(user, 0));
         !mlirOpOperandIsNull(v); v = mlirOpOperandGetNextUse(v))
      if (!pbcOpIsInside(mlirOpOperandGetOwner(v), p->a) &&
          !pbcOpIsInside(mlirOpOperandGetOwner(v), p->b))
        return false;
  }
  return true;
}

/* A's body moves past the ops between A and B: none may write what A
 * reads, or touch the buffer (other than by making a view of it). */
static bool movesPastBetween(const Plan *p) {
  for (MlirOperation op = mlirOperationGetNextInBlock(p->a); !mlirOperationEqual(op, p->b);
       op = mlirOperationGetNextInBlock(op)) {
    if (mlirOperationGetNumResults(op) == 1 && sameView(mlirOperationGetResult(op, 0), p->view))
      continue;
    if (pbcMayAccessMemref(op, p->view))
      return false;
    for (int j = 0; j < p->n[0]; ++j)
      if (pbcMayWriteMemref(op, p->acc[0][j].memref))
        return false;
  }
  return true;
}

static bool plan(Plan *p) {
  if (!matchBands(p) || !pbcGatherAccesses(p->a, p->acc[0], kMaxAccesses, &p->n[0]) ||
      !pbcGatherAccesses(p->b, p->acc[1], kMaxAccesses, &p->n[1]) || !matchProducer(p) ||
      !matchConsumer(p) || !bufferIsPrivate(p) || !movesPastBetween(p))
    return false;
  for (int l = 0; l < p->depth; ++l)
    if (!pbcLoopIsParallel(p->bandA[l]))
      return false;
  return true;
}

/* The access's row subscript taken modulo K. */
static void foldRow(MlirOperation op, int dim, long long window) {
  MlirContext ctx = mlirOperationGetContext(op);
  pbcAccessSetSubscriptExpr(op, dim,
                            mlirAffineModExprGet(pbcAccessSubscriptExpr(op, dim),
                                                 mlirAffineConstantExprGet(ctx, window)));
}

/* A memref type like `type` with dimension `dim` of size `size`. */
static MlirType withDimSize(MlirType type, int dim, int64_t size) {
  int rank = (int)mlirShapedTypeGetRank(type);
  int64_t shape[PBC_MAX_RANK];
  for (int d = 0; d < rank; ++d)
    shape[d] = mlirShapedTypeGetDimSize(type, d);
  shape[dim] = size;
  return mlirMemRefTypeContiguousGet(mlirShapedTypeGetElementType(type), rank, shape,
                                     mlirMemRefTypeGetMemorySpace(type));
}

/* The buffer (and its views) with K rows. */
static void shrinkBuffer(Plan *p) {
  MlirValue oldBase = mlirOperationGetResult(p->alloc, 0);
  MlirOperation alloc =
      pbcBuildAlloc(p->alloc, withDimSize(mlirValueGetType(oldBase), p->allocDim, p->window),
                    mlirOperationGetLocation(p->alloc));
  MlirValue base = mlirOperationGetResult(alloc, 0);
  MlirOperation views[kMaxViews];
  int nViews = 0;
  for (MlirOpOperand u = mlirValueGetFirstUse(oldBase); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u))
    if (pbcOpIsA(mlirOpOperandGetOwner(u), "memref.collapse_shape"))
      views[nViews++] = mlirOpOperandGetOwner(u);
  for (int i = 0; i < nViews; ++i) {
    MlirValue oldView = mlirOperationGetResult(views[i], 0);
    MlirType newViewType = withDimSize(mlirValueGetType(oldView), p->dim, p->window);
    MlirContext ctx = mlirOperationGetContext(views[i]);
    MlirNamedAttribute attr = mlirNamedAttributeGet(
        mlirIdentifierGet(ctx, pbcStr("reassociation")),
        mlirOperationGetInherentAttributeByName(views[i], pbcStr("reassociation")));
    MlirOperation view =
        pbcBuildOp(views[i], "memref.collapse_shape", 1, &base, newViewType, 1, &attr);
    mlirValueReplaceAllUsesOfWith(oldView, mlirOperationGetResult(view, 0));
    mlirOperationDestroy(views[i]);
  }
  mlirValueReplaceAllUsesOfWith(oldBase, base);
  mlirOperationDestroy(p->alloc);
  p->alloc = alloc;
}

/* Users of `row` = iv + delta that take it as a map operand take `iv`
 * instead, their map adding delta (pbc-prefetch looks for the row loop's
 * iv among an access's operands). */
static void foldShiftIntoMaps(MlirValue row, MlirValue iv, long long delta) {
  MlirContext ctx = mlirValueGetContext(row);
  MlirOpOperand u = mlirValueGetFirstUse(row);
  while (!mlirOpOperandIsNull(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    unsigned pos = mlirOpOperandGetOperandNumber(u);
    u = mlirOpOperandGetNextUse(u);
    MlirAttribute attr = mlirOperationGetInherentAttributeByName(user, pbcStr("map"));
    if (mlirAttributeIsNull(attr) || !mlirAttributeIsAAffineMap(attr))
      continue;
    MlirAffineMap map = mlirAffineMapAttrGetValue(attr);
    intptr_t dims = mlirAffineMapGetNumDims(map), syms = mlirAffineMapGetNumSymbols(map);
    intptr_t start = mlirOperationGetNumOperands(user) - dims - syms, j = (intptr_t)pos - start;
    if (j < 0)
      continue;
    MlirAffineExpr e =
        j < dims ? mlirAffineDimExprGet(ctx, j) : mlirAffineSymbolExprGet(ctx, j - dims);
    map = mlirAffineMapReplace(
        map, e, mlirAffineAddExprGet(e, mlirAffineConstantExprGet(ctx, delta)), dims, syms);
    mlirOperationSetInherentAttributeByName(user, pbcStr("map"), mlirAffineMapAttrGet(map));
    mlirOperationSetOperand(user, pos, iv);
  }
  if (mlirOpOperandIsNull(mlirValueGetFirstUse(row)))
    mlirOperationDestroy(mlirOpResultGetOwner(row));
}

static void rewrite(Plan *p) {
  MlirContext ctx = mlirOperationGetContext(p->a);
  MlirLocation loc = mlirOperationGetLocation(p->a);
  /* The prologue: A's first K-1 rows, before B (rows < K need no mod). */
  int levels[1] = {p->w};
  long long extent[1] = {p->window - 1};
  MlirValue origin[1] = {pbcBuildIndexConstant(p->b, 0)};
  p->prologue = pbcCloneNestRestricted(p->a, p->b, 1, levels, extent, origin, NULL);
  /* A's body for row r + K-1 at the top of B's body. */
  MlirBlock body = pbcLoopBody(p->bandB[p->depth - 1]);
  MlirOperation first = mlirBlockGetFirstOperation(body);
  MlirAffineExpr shifted = mlirAffineAddExprGet(mlirAffineDimExprGet(ctx, 0),
                                                mlirAffineConstantExprGet(ctx, p->window - 1));
  MlirValue ivB = pbcLoopIv(p->bandB[p->w]);
  MlirValue row =
      pbcBuildAffineApply(first, mlirAffineMapGet(ctx, 1, 0, 1, &shifted), &ivB, 1, loc);
  pbcMoveBodyBefore(pbcLoopBody(p->bandA[p->depth - 1]), first);
  for (int l = 0; l < p->depth; ++l)
    mlirValueReplaceAllUsesOfWith(pbcLoopIv(p->bandA[l]), l == p->w ? row : pbcLoopIv(p->bandB[l]));
  mlirOperationDestroy(p->a);
  foldShiftIntoMaps(row, ivB, p->window - 1);
  /* B's reads of row r+K-1 take the stored values; the rest read slots. */
  for (int i = 0; i < p->n[1]; ++i) {
    if (p->storeOf[i] < 0)
      continue;
    MlirOperation load = p->acc[1][i].op;
    if (p->offset[i] == p->window - 1) {
      MlirValue v = mlirOperationGetOperand(p->acc[0][p->storeOf[i]].op, 0);
      mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(load, 0), v);
      mlirOperationDestroy(load);
    } else {
      foldRow(load, p->dim, p->window);
    }
  }
  for (int j = 0; j < p->n[0]; ++j)
    if (p->acc[0][j].isWrite)
      foldRow(p->acc[0][j].op, p->dim, p->window);
  shrinkBuffer(p);
}

/* The memref an affine load or store accesses. */
static MlirValue accessedMemref(MlirOperation op) {
  bool store = pbcOpIsA(op, "affine.store") || pbcOpIsA(op, "affine.vector_store");
  return mlirOperationGetOperand(op, store ? 1 : 0);
}

/* True if a use of the tile's or the row's index in B is one that a taller
 * tile leaves meaning the same: a prefetch (a hint), a window slot (K rows,
 * whatever the tile's height), or a subscript where both indices come
 * together as t + r (the tile's rows, now more of them). */
static bool rowUseStays(MlirOperation user, const Plan *p, MlirValue t, MlirValue r) {
  if (pbcOpIsA(user, "affine.prefetch"))
    return true;
  if (!pbcOpIsA(user, "affine.load") && !pbcOpIsA(user, "affine.vector_load") &&
      !pbcOpIsA(user, "affine.store") && !pbcOpIsA(user, "affine.vector_store"))
    return false;
  if (mlirValueEqual(pbcMemrefBase(accessedMemref(user)), mlirOperationGetResult(p->alloc, 0)))
    return true;
  PbcAccess acc;
  if (!pbcAccessGet(user, &acc))
    return false;
  for (int d = 0; d < acc.rank; ++d)
    if (pbcLinearCoeff(&acc.subscripts[d], t) != pbcLinearCoeff(&acc.subscripts[d], r))
      return false;
  return true;
}

/* The window lifts the buffer's bound on a tile's height (pbc-fuse-slices
 * chose the smallest height whose K-1 recomputed rows were within 10%):
 * the tile loop L around the pair (from 0, step T = B's rows) takes the
 * smallest power-of-two multiple of T whose prologue is within
 * kMaxProloguePct of its rows, as long as every core keeps a tile. A
 * tile's start costs more than its K-1 rows' share (figures below), likely
 * because they run before the window's loop, without the prefetch that
 * the loop's loads get two rows ahead. Where L is the loop that runs in
 * parallel, more tiles per core buy no balance: it becomes an OpenMP loop
 * with the static schedule, one contiguous chunk per thread however many
 * tiles that holds.
 * Legal when t, L's index, is used only by the prologue (rows from the
 * tile's start, any height) and in B as rowUseStays allows: B's rows r then
 * run on into the next tile's, whose rows the window already holds.
 * (Taller tiles against 128-row ones: tools/bench/README.md. The earlier
 * bounds, 4% and 4 tiles per core, stopped at 128 rows.) */
static void growTile(const Plan *p, long long cores) {
  MlirOperation rowLoop = p->bandB[p->w];
  long long rows = pbcLoopUpperFromZero(rowLoop);
  if (pbcLoopStep(rowLoop) != 1 || rows <= 0)
    return;
  MlirOperation tile = mlirOperationGetParentOperation(p->b);
  while (!mlirOperationIsNull(tile) && pbcOpIsA(tile, "affine.for") && pbcLoopStep(tile) != rows)
    tile = mlirOperationGetParentOperation(tile);
  if (mlirOperationIsNull(tile) || !pbcOpIsA(tile, "affine.for") ||
      mlirOperationGetNumResults(tile))
    return;
  long long n = pbcLoopUpperFromZero(tile), height = rows;
  while ((p->window - 1) * 100 > kMaxProloguePct * height && n % (2 * height) == 0 &&
         n / (2 * height) >= cores)
    height *= 2;
  if (height == rows)
    return;
  MlirValue t = pbcLoopIv(tile), r = pbcLoopIv(rowLoop);
  for (MlirOpOperand u = mlirValueGetFirstUse(t); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    if (!pbcOpIsInside(user, p->prologue) &&
        !(pbcOpIsInside(user, p->b) && rowUseStays(user, p, t, r)))
      return;
  }
  for (MlirOpOperand u = mlirValueGetFirstUse(r); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u))
    if (!rowUseStays(mlirOpOperandGetOwner(u), p, t, r))
      return;
  pbcLoopSetStep(tile, height);
  pbcLoopSetUpperBound(rowLoop, height);
}

static MlirOperation nextLoop(MlirOperation op) {
  for (op = mlirOperationGetNextInBlock(op); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (pbcOpIsA(op, "affine.for"))
      return op;
  return op;
}

typedef struct {
  Plan plan;
  long long cores;
} Walk;

static MlirWalkResult visit(MlirOperation op, void *data) {
  Walk *walk = data;
  Plan *p = &walk->plan;
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); ++r)
    for (MlirBlock blk = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
         !mlirBlockIsNull(blk); blk = mlirBlockGetNextInRegion(blk)) {
      MlirOperation a = mlirBlockGetFirstOperation(blk);
      if (!mlirOperationIsNull(a) && !pbcOpIsA(a, "affine.for"))
        a = nextLoop(a);
      while (!mlirOperationIsNull(a)) {
        MlirOperation b = nextLoop(a);
        if (mlirOperationIsNull(b))
          break;
        p->a = a;
        p->b = b;
        if (plan(p)) {
          rewrite(p);
          growTile(p, walk->cores);
        }
        a = b;
      }
    }
  return MlirWalkResultAdvance;
}

typedef struct {
  long long cores;
} State;

static bool run(MlirOperation func, void *state) {
  Walk *walk = malloc(sizeof(Walk));
  walk->cores = ((const State *)state)->cores;
  mlirOperationWalk(func, visit, walk, MlirWalkPostOrder);
  free(walk);
  return true;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcSlidingWindowPass = {"pbc-sliding-window",
                                           "func.func",
                                           "Compute a stencil's private buffer row by row as its "
                                           "consumer slides",
                                           run,
                                           sizeof(State),
                                           createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  enum { CORES, NUM_OPTIONS };
  static const PbcCountOption kOptions[] = {
      [CORES] = {"cores", 1},
      [NUM_OPTIONS] = {NULL, 0}};
  long long v[NUM_OPTIONS];
  if (!pbcPassCountOptions(options, kOptions, v, err, errLen))
    return (MlirPass){NULL};
  State st = {v[CORES]};
  if (st.cores < 1)
    st.cores = 1;
  return pbcCPassCreate(&pbcSlidingWindowPass, &st);
}
