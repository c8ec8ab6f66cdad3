/* pbc-block-symbolic: a key nest (pbc.kind = matmul) whose loops run to
 * sizes known only at run time (pbc/symbolic_sizes.h: a sequence, a
 * batch) gets static blocks of them, so that tiling, packing and the
 * register tile, which choose by trip counts, see static nests: a loop
 * over n rows becomes a loop over n / 64 blocks of a static 64-row loop,
 * then the remainder (n mod 64 rows) the same way in blocks of 16, then
 * of 4, then each of the last rows alone. Bounds carry the run-time size;
 * subscripts stay functions of loop indices (the access analysis reads
 * them). Strip-mining keeps every iteration and their order: legal for
 * any loop. Each block loop is marked (PBC_MARK_BLOCKS): the static nest
 * in the innermost is what pbc-tile tiles; the root keeps its kind. The
 * static nests' loops that were parallel are marked so (PBC_MARK_PARALLEL)
 * from a test on the nest before blocking.
 *
 * Where every run-time loop of the band can be blocked and the loops from
 * the first of them to the last are parallel but for the last itself
 * (attention: Q K^T over two sequences, P V reducing over one), all are:
 * each one's blocks move outside the static loops of those before it
 * (distribution and interchange across loops that carry no dependence:
 * each element's sum keeps its order), one static nest per combination of
 * heights. Else the band's innermost run-time loop is (from 0 with step 1,
 * a one-result upper bound, and at least one loop of constant trip count
 * after it); the loops before it stay outside its blocks. */
#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/loops.h"
#include "pbc/marks.h"
#include "pbc/nests.h"
#include "pbc/op_list.h"
#include "passes/passes.h"

/* The block heights, largest first: the full blocks of each, then the
 * remainder's in the next, down to single rows (a GEMV each). 64 rows keep
 * a GEMM's A block and its register tiles whole (divisible by every tile
 * height pbc-tile picks up to 16); 16 and 4 serve short sequences and the
 * rows past the last 64. */
static const long long kBlocks[] = {64, 16, 4, 1};

static MlirAffineMap mapAttr(MlirOperation loop, const char *name) {
  return mlirAffineMapAttrGetValue(mlirOperationGetAttributeByName(loop, pbcStr(name)));
}

/* Whether `loop` runs from 0 with step 1 to one bound expression of at
 * most 8 operands, and returns nothing. */
static bool blockable(MlirOperation loop) {
  MlirAffineMap lb = mapAttr(loop, "lowerBoundMap"), ub = mapAttr(loop, "upperBoundMap");
  return pbcLoopStep(loop) == 1 && mlirAffineMapGetNumInputs(lb) == 0 &&
         mlirAffineMapGetNumResults(lb) == 1 &&
         mlirAffineExprIsAConstant(mlirAffineMapGetResult(lb, 0)) &&
         mlirAffineConstantExprGetValue(mlirAffineMapGetResult(lb, 0)) == 0 &&
         mlirAffineMapGetNumResults(ub) == 1 && mlirAffineMapGetNumInputs(ub) <= 8 &&
         mlirOperationGetNumResults(loop) == 0;
}

/* The index of the first loop of band[0..n) over a run-time size (n if
 * none). */
static int firstRunTimeLoop(MlirOperation *band, int n) {
  int s = 0;
  while (s < n && pbcExtAffineConstantTripCount(band[s]) >= 0)
    ++s;
  return s;
}

/* A loop's bounds as two expressions over the inputs (dims, then
 * symbols) of its upper bound map, whose operands are `operands`. */
typedef struct {
  MlirAffineExpr lb, ub;
  intptr_t numDims, numSymbols, n;
  MlirValue operands[8];
} Bounds;

static MlirAffineMap mapOf(const Bounds *b, MlirAffineExpr e) {
  return mlirAffineMapGet(mlirAffineExprGetContext(e), b->numDims, b->numSymbols, 1, &e);
}

/* Gives `loop` (no iter_args) the bounds [b->lb, b->ub). */
static void setBounds(MlirOperation loop, const Bounds *b) {
  MlirContext ctx = mlirOperationGetContext(loop);
  MlirValue operands[16];
  for (intptr_t i = 0; i < b->n; ++i)
    operands[i] = operands[b->n + i] = b->operands[i];
  mlirOperationSetOperands(loop, 2 * b->n, operands);
  int32_t segments[3] = {(int32_t)b->n, (int32_t)b->n, 0};
  mlirOperationSetAttributeByName(loop, pbcStr("operandSegmentSizes"),
                                  mlirDenseI32ArrayGet(ctx, 3, segments));
  mlirOperationSetAttributeByName(loop, pbcStr("lowerBoundMap"),
                                  mlirAffineMapAttrGet(mapOf(b, b->lb)));
  mlirOperationSetAttributeByName(loop, pbcStr("upperBoundMap"),
                                  mlirAffineMapAttrGet(mapOf(b, b->ub)));
}

/* Splits `loop` over rows [lb, ub) (lb a multiple of t) into a loop over
 * the blocks [lb / t, ub floordiv t) of a static loop of t rows (row
 * block * t + i; the static loop through *inner) and, for t above 1, a copy
 * after it over the rows left, [(ub floordiv t) * t, ub), indexed by row
 * as before (returned, its bounds in *rest; null for t = 1: none are
 * left). Every subscript stays a function of loop indices. */
static MlirOperation blockLoop(MlirOperation loop, const Bounds *b, long long t,
                               MlirOperation *inner, Bounds *rest) {
  MlirContext ctx = mlirOperationGetContext(loop);
  MlirLocation loc = mlirOperationGetLocation(loop);
  MlirAffineExpr c = mlirAffineConstantExprGet(ctx, t);
  MlirOperation restLoop = {NULL};
  if (t > 1) {
    restLoop = mlirOperationClone(loop);
    mlirBlockInsertOwnedOperationAfter(mlirOperationGetBlock(loop), loop, restLoop);
    *rest = *b;
    rest->lb = mlirAffineMulExprGet(mlirAffineFloorDivExprGet(b->ub, c), c);
    setBounds(restLoop, rest);
  }
  Bounds blocks = *b;
  blocks.lb = mlirAffineFloorDivExprGet(b->lb, c);
  blocks.ub = mlirAffineFloorDivExprGet(b->ub, c);
  setBounds(loop, &blocks);
  MlirBlock body = pbcLoopBody(loop);
  *inner = pbcBuildAffineFor(mlirBlockGetFirstOperation(body), t, loc);
  for (MlirOperation op = mlirOperationGetNextInBlock(*inner);
       !mlirOperationEqual(op, mlirBlockGetTerminator(body));) {
    MlirOperation next = mlirOperationGetNextInBlock(op);
    mlirOperationMoveBefore(op, mlirBlockGetTerminator(pbcLoopBody(*inner)));
    op = next;
  }
  /* Row block * t + i, computed in the innermost body: the block loop's
   * body stays the static nest alone. */
  mlirValueReplaceAllUsesOfWith(pbcLoopIv(loop), pbcLoopIv(*inner));
  pbcLoopShiftIndex(*inner, pbcLoopIv(loop), t);
  return restLoop;
}

/* The band's innermost loop over a run-time size, if the loops after it
 * (at least one) have constant trip counts and it can be blocked; else
 * null. Loops before it (a batch of 1, heads, another run-time size) stay
 * outside the blocks. */
static MlirOperation innermostSymbolicLoop(MlirOperation root) {
  MlirOperation band[PBC_MAX_BAND];
  int n = pbcLoopBand(root, band, PBC_MAX_BAND), last = -1;
  for (int l = 0; l < n; ++l)
    if (pbcExtAffineConstantTripCount(band[l]) < 0)
      last = l;
  if (last < 0 || last == n - 1 || !blockable(band[last]))
    return (MlirOperation){NULL};
  return band[last];
}

/* Whether every run-time loop of root's band can have its blocks first
 * (outside every static loop): each is blockable with bounds from above
 * the nest, and every loop from the first of them to the last one before
 * it is parallel (PBC_MARK_PARALLEL, from markParallel): a block loop
 * moves outward only across loops that carry no dependence, so each
 * element's reduction keeps its order. At least two. */
static bool allBlockable(MlirOperation root) {
  MlirOperation band[PBC_MAX_BAND];
  int n = pbcLoopBand(root, band, PBC_MAX_BAND), count = 0, f = -1;
  for (int l = 0; l < n; ++l) {
    if (pbcExtAffineConstantTripCount(band[l]) >= 0)
      continue;
    if (!blockable(band[l]))
      return false;
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(band[l]); ++i)
      if (pbcValueIsDefinedInside(mlirOperationGetOperand(band[l], i), root))
        return false;
    if (count++ == 0)
      f = l;
    else
      for (int c = f; c < l; ++c)
        if (!pbcOpHasAttr(band[c], PBC_MARK_PARALLEL))
          return false;
  }
  return count >= 2;
}

/* Marks the loops of root's band that are parallel (PBC_MARK_PARALLEL:
 * the static loops blocks get inherit it, block loops drop it). The test
 * runs here, on the nest as it was: in the blocks' nests once tiled and
 * unrolled, with the blocks' bounds in every dependence system, MLIR's
 * test took seconds a loop, or failed on the loops outside the blocks. */
static void markParallel(MlirOperation root) {
  MlirOperation band[PBC_MAX_BAND];
  int n = pbcLoopBand(root, band, PBC_MAX_BAND);
  for (int l = 0; l < n; ++l)
    if (pbcOpHasAttr(band[l], PBC_MARK_PARALLEL) || pbcLoopIsParallel(band[l]))
      pbcOpSetUnitAttr(band[l], PBC_MARK_PARALLEL);
}

/* Blocks `loop` (blockable) in each height of kBlocks, the rows each
 * leaves to the next: the loops over blocks, in order, into blocks[]
 * (their number returned). Each block's static loop is marked parallel if
 * `parallel`. */
static int blockLevels(MlirOperation loop, bool parallel, MlirOperation *blocks) {
  MlirAffineMap ub = mapAttr(loop, "upperBoundMap");
  Bounds b = {mlirAffineConstantExprGet(mlirOperationGetContext(loop), 0),
              mlirAffineMapGetResult(ub, 0), mlirAffineMapGetNumDims(ub),
              mlirAffineMapGetNumSymbols(ub), mlirAffineMapGetNumInputs(ub), {{NULL}}};
  for (intptr_t i = 0; i < b.n; ++i)
    b.operands[i] = mlirOperationGetOperand(loop, i); /* the lower bound has none */
  int n = 0;
  /* Each level's rows left, blocked in the next level's smaller blocks;
   * after blocks of one row none are left. */
  for (size_t k = 0; k < sizeof kBlocks / sizeof *kBlocks && !mlirOperationIsNull(loop); ++k) {
    MlirOperation inner;
    Bounds rest;
    MlirOperation restLoop = blockLoop(loop, &b, kBlocks[k], &inner, &rest);
    pbcOpSetUnitAttr(loop, PBC_MARK_BLOCKS);
    mlirOperationRemoveAttributeByName(loop, pbcStr(PBC_MARK_PARALLEL));
    if (parallel)
      pbcOpSetUnitAttr(inner, PBC_MARK_PARALLEL);
    blocks[n++] = loop;
    loop = restLoop;
    b = rest;
  }
  return n;
}

/* Moves each of blocks[0..n), in order all of the body of chain[c - 1]
 * (chain[0..c) a perfect band of parallel loops, pbcLoopBand's and
 * allBlockable's, whose last loop blockLevels left holding the block loops
 * alone), above chain[0]: a copy of the chain per block loop, each keeping
 * its own (distribution: the chain's loops carry no dependence), then each
 * copy permuted with its block loop first; blocks[] gets the moved loops. */
static void hoistBlocks(MlirOperation *chain, int c, MlirOperation *blocks, int n) {
  MlirOperation top = chain[0], copies[4];
  for (int j = 0; j < n - 1; ++j) {
    copies[j] = mlirOperationClone(top);
    mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(top), top, copies[j]);
  }
  copies[n - 1] = top;
  for (int j = 0; j < n; ++j) {
    MlirOperation held[4], band[PBC_MAX_BAND];
    band[0] = copies[j];
    for (int i = 1; i < c; ++i)
      band[i] = mlirBlockGetFirstOperation(pbcLoopBody(band[i - 1]));
    MlirOperation op = mlirBlockGetFirstOperation(pbcLoopBody(band[c - 1]));
    for (int i = 0; i < n; ++i, op = mlirOperationGetNextInBlock(op))
      held[i] = op;
    for (int i = 0; i < n; ++i)
      if (i != j)
        mlirOperationDestroy(held[i]);
    /* copy, ..., its block loop: the block loop first. */
    unsigned perm[PBC_MAX_BAND];
    band[c] = held[j];
    for (int i = 0; i < c; ++i)
      perm[i] = (unsigned)i + 1;
    perm[c] = 0;
    pbcExtAffinePermuteLegal(band, c + 1, perm);
    blocks[j] = held[j];
  }
}

/* Blocks the run-time loops of the band from `top`, a block's static
 * loop: the first one's blocks move above `top` (hoistBlocks), and the
 * static loop of each is blocked the same way. */
static void blockFrom(MlirOperation top) {
  MlirOperation band[PBC_MAX_BAND], blocks[4];
  int n = pbcLoopBand(top, band, PBC_MAX_BAND), s = firstRunTimeLoop(band, n);
  if (s == 0 || s == n)
    return;
  int nb = blockLevels(band[s], pbcOpHasAttr(band[s], PBC_MARK_PARALLEL), blocks);
  hoistBlocks(band, s, blocks, nb);
  for (int j = 0; j < nb; ++j)
    blockFrom(pbcOnlyLoopIn(blocks[j]));
}

static void blockNest(MlirOperation root) {
  MlirOperation band[PBC_MAX_BAND], blocks[4];
  int n = pbcLoopBand(root, band, PBC_MAX_BAND), s = firstRunTimeLoop(band, n);
  if (s >= n - 1)
    return; /* no run-time loop, or only the innermost */
  markParallel(root);
  if (allBlockable(root)) {
    /* Every run-time loop's blocks outside every static loop. */
    int nb = blockLevels(band[s], pbcOpHasAttr(band[s], PBC_MARK_PARALLEL), blocks);
    for (int j = 0; j < nb; ++j)
      blockFrom(pbcOnlyLoopIn(blocks[j]));
    return;
  }
  /* Else the innermost run-time loop's blocks; the loops before it stay
   * outside them. */
  MlirOperation loop = innermostSymbolicLoop(root);
  if (mlirOperationIsNull(loop))
    return;
  blockLevels(loop, pbcOpHasAttr(loop, PBC_MARK_PARALLEL), blocks);
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  PbcOpList roots = {0};
  pbcRootNests(func, "matmul", &roots);
  for (int i = 0; i < roots.n; ++i)
    blockNest(roots.ops[i]);
  pbcOpListDestroy(&roots);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcBlockSymbolicPass, "pbc-block-symbolic", "func.func",
                           "key nests over run-time sizes in static blocks and remainders", run);
