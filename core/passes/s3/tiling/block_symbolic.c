/* pbc-block-symbolic: a key nest (pbc.kind = matmul) whose outer loops run
 * to a size known only at run time (pbc/symbolic_sizes.h: a sequence, a
 * batch) gets static blocks of its innermost such loop, so that tiling,
 * packing and the register tile, which choose by trip counts, see a
 * static nest: the loop over n rows becomes a loop over n / 64 blocks of a
 * static 64-row nest, then the remainder (n mod 64 rows) the same way in
 * blocks of 16, then of 4, then each of the last rows alone. Bounds carry the run-time size; subscripts stay functions of
 * loop indices (the access analysis reads them). Strip-mining keeps every iteration and their order: legal for
 * any loop. Each block loop is marked (PBC_MARK_BLOCKS): the static nest
 * in it is what pbc-tile tiles; the root keeps its kind. The static
 * nests' loops that were parallel are marked so (PBC_MARK_PARALLEL) from a
 * test on the nest before blocking.
 *
 * Applies to the band's innermost symbolic loop (from 0 with step 1 and a
 * one-result upper bound) where every loop after it, at least one, has a
 * constant trip count. */
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

/* Whether `loop` runs from 0 with step 1 to one bound expression. */
static bool blockable(MlirOperation loop) {
  MlirAffineMap lb = mapAttr(loop, "lowerBoundMap"), ub = mapAttr(loop, "upperBoundMap");
  return pbcLoopStep(loop) == 1 && mlirAffineMapGetNumInputs(lb) == 0 &&
         mlirAffineMapGetNumResults(lb) == 1 &&
         mlirAffineExprIsAConstant(mlirAffineMapGetResult(lb, 0)) &&
         mlirAffineConstantExprGetValue(mlirAffineMapGetResult(lb, 0)) == 0 &&
         mlirAffineMapGetNumResults(ub) == 1;
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
static MlirOperation symbolicLoop(MlirOperation root) {
  MlirOperation band[PBC_MAX_BAND];
  int n = pbcLoopBand(root, band, PBC_MAX_BAND), last = -1;
  for (int l = 0; l < n; ++l)
    if (pbcExtAffineConstantTripCount(band[l]) < 0)
      last = l;
  if (last < 0 || last == n - 1 || !blockable(band[last]))
    return (MlirOperation){NULL};
  return band[last];
}

/* Marks the loops of the band from `loop` that are parallel
 * (PBC_MARK_PARALLEL); whether `loop` itself is. The test runs here, on
 * the nest as it was: in the blocks' nests once tiled and unrolled, with
 * the blocks' bounds in every dependence system, MLIR's test took
 * seconds a loop. */
static bool markParallel(MlirOperation loop) {
  MlirOperation band[PBC_MAX_BAND];
  int n = pbcLoopBand(loop, band, PBC_MAX_BAND);
  bool first = pbcLoopIsParallel(band[0]);
  for (int l = 1; l < n; ++l)
    if (pbcOpHasAttr(band[l], PBC_MARK_PARALLEL) || pbcLoopIsParallel(band[l]))
      pbcOpSetUnitAttr(band[l], PBC_MARK_PARALLEL);
  return first;
}

static void blockNest(MlirOperation root) {
  MlirOperation loop = symbolicLoop(root);
  if (mlirOperationIsNull(loop))
    return;
  MlirAffineMap ub = mapAttr(loop, "upperBoundMap");
  Bounds b = {mlirAffineConstantExprGet(mlirOperationGetContext(loop), 0),
              mlirAffineMapGetResult(ub, 0), mlirAffineMapGetNumDims(ub),
              mlirAffineMapGetNumSymbols(ub), mlirAffineMapGetNumInputs(ub), {{NULL}}};
  if (b.n > 8 || mlirOperationGetNumResults(loop) != 0)
    return;
  for (intptr_t i = 0; i < b.n; ++i)
    b.operands[i] = mlirOperationGetOperand(loop, i); /* the lower bound has none */
  bool rowsParallel = markParallel(loop);
  /* Each level's rows left, blocked in the next level's smaller blocks;
   * after blocks of one row none are left. */
  for (size_t k = 0; k < sizeof kBlocks / sizeof *kBlocks && !mlirOperationIsNull(loop); ++k) {
    MlirOperation inner;
    Bounds rest;
    MlirOperation restLoop = blockLoop(loop, &b, kBlocks[k], &inner, &rest);
    pbcOpSetUnitAttr(loop, PBC_MARK_BLOCKS);
    if (rowsParallel)
      pbcOpSetUnitAttr(inner, PBC_MARK_PARALLEL);
    loop = restLoop;
    b = rest;
  }
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
