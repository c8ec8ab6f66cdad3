/* Row reductions, one warp per row (part of pbc-gpu-map-parallel).
 *
 * A parallel loop whose body reduces along a row in one inner loop, with
 * the row contiguous in memory (softmax's max and sum, layer norm's mean,
 * a sum over the last dimension):
 *
 *   scf.parallel (i...) {
 *     %r = scf.for %j = lb to ub step s iter_args(%acc = %init) {
 *       ... memref.load %x[..., %j] ...   // %j the last subscript
 *       %n = COMBINE %v, %acc            // addf, mulf, max/min(num)f
 *       scf.yield %n
 *     }
 *     ... uses of %r (the store of the result) ...
 *   }
 *
 * would, mapped one thread per row, have a warp's lanes read 32 different
 * rows at once: 32 memory transactions per load. Here each warp takes one
 * row (blocks of threads / warp rows) and its lanes read consecutive
 * elements: lane l handles j = lb + (32 k + l) s for k = 0, 1, ... from
 * COMBINE's identity, the lanes' partial results meet in log2(32) xor
 * shuffles, COMBINE(%init, that) is the row's result, and lane 0 alone runs
 * what follows the loop. Past the row's end (a trip that is not a multiple
 * of the warp) a lane reads the row's last element and contributes the
 * identity instead (a select: the control flow stays uniform, as the
 * shuffles need). The loop's trip must be a constant, its elements f32. */
#include <string.h>

#include "gpu_build.h"
#include "gpu_passes.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"

/* The combiners and the text of their identity as an f32 attribute. */
static const char *identityOf(MlirOperation op) {
  if (pbcOpIsA(op, "arith.addf"))
    return "-0.0 : f32"; /* -0 + x == x for every x, -0 included */
  if (pbcOpIsA(op, "arith.mulf"))
    return "1.0 : f32";
  /* -inf and +inf (maxnumf and minnumf skip NaN operands, as -inf and
   * +inf change nothing). */
  if (pbcOpIsA(op, "arith.maximumf") || pbcOpIsA(op, "arith.maxnumf"))
    return "0xFF800000 : f32";
  if (pbcOpIsA(op, "arith.minimumf") || pbcOpIsA(op, "arith.minnumf"))
    return "0x7F800000 : f32";
  return NULL;
}

/* The parallel body's one loop, with nothing stored before it (every lane
 * runs what precedes the loop; only lane 0 what follows it). */
static MlirOperation onlyLoopOf(MlirBlock body) {
  MlirOperation loop = {NULL};
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!loop.ptr && pbcOpIsA(op, "memref.store"))
      return (MlirOperation){NULL};
    if (mlirOperationGetNumRegions(op) == 0)
      continue;
    if (!pbcOpIsA(op, "scf.for") || loop.ptr)
      return (MlirOperation){NULL};
    loop = op;
  }
  return loop;
}

/* The op that combines the loop's accumulator with each element, if the
 * loop is a reduction this mapping handles; else null. */
static MlirOperation combinerOf(MlirOperation loop) {
  if (mlirOperationGetNumResults(loop) != 1 ||
      !mlirTypeIsAF32(mlirValueGetType(mlirOperationGetResult(loop, 0))))
    return (MlirOperation){NULL};
  for (int i = 0; i < 3; ++i)
    if (pbcGpuConstantOf(mlirOperationGetOperand(loop, i)) < 0)
      return (MlirOperation){NULL};
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(loop, 0));
  MlirValue iv = mlirBlockGetArgument(body, 0), acc = mlirBlockGetArgument(body, 1);
  bool contiguous = false;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (mlirOperationGetNumRegions(op) || pbcOpIsA(op, "memref.store"))
      return (MlirOperation){NULL};
    if (pbcOpIsA(op, "memref.load")) {
      intptr_t n = mlirOperationGetNumOperands(op);
      contiguous |= n > 1 && mlirOperationGetOperand(op, n - 1).ptr == iv.ptr;
    }
  }
  MlirOperation yield = mlirBlockGetTerminator(body);
  MlirValue next = mlirOperationGetOperand(yield, 0);
  if (!contiguous || !mlirValueIsAOpResult(next))
    return (MlirOperation){NULL};
  MlirOperation comb = mlirOpResultGetOwner(next);
  if (!identityOf(comb) || mlirOperationGetBlock(comb).ptr != body.ptr)
    return (MlirOperation){NULL};
  /* The accumulator feeds the combiner alone, once. */
  MlirOpOperand use = mlirValueGetFirstUse(acc);
  if (mlirOpOperandIsNull(use) || !mlirOpOperandIsNull(mlirOpOperandGetNextUse(use)) ||
      mlirOpOperandGetOwner(use).ptr != comb.ptr)
    return (MlirOperation){NULL};
  return comb;
}

bool pbcGpuIsRowReduction(MlirOperation par) {
  /* (Other loops go to the general mapping, which reports what it can't map.) */
  intptr_t dims = mlirOperationGetNumOperands(par) / 3;
  if (mlirOperationGetNumResults(par) > 0 || dims < 1 || dims > 8)
    return false;
  MlirOperation loop = onlyLoopOf(pbcGpuBody(par, 0));
  return !mlirOperationIsNull(loop) && !mlirOperationIsNull(combinerOf(loop));
}

/* A copy of the combiner (its attributes kept) on a and b, before `before`. */
static MlirValue combine(MlirOperation comb, MlirOperation before, MlirValue a, MlirValue b) {
  MlirOperation copy = mlirOperationClone(comb);
  mlirOperationSetOperand(copy, 0, a);
  mlirOperationSetOperand(copy, 1, b);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(before), before, copy);
  return mlirOperationGetResult(copy, 0);
}

/* The loop, now in a warp's body, reads the row with the warp's lanes. */
static void spreadOverLanes(MlirOperation loop, MlirValue lane, long long warp) {
  MlirOperation comb = combinerOf(loop);
  const char *identity = identityOf(comb);
  long long lb = pbcGpuConstantOf(mlirOperationGetOperand(loop, 0)),
            ub = pbcGpuConstantOf(mlirOperationGetOperand(loop, 1)),
            step = pbcGpuConstantOf(mlirOperationGetOperand(loop, 2));
  long long trip = (ub - lb + step - 1) / step, rounds = (trip + warp - 1) / warp;
  MlirValue init = mlirOperationGetOperand(loop, 3);
  mlirOperationSetOperand(loop, 0, pbcGpuConstIndex(loop, 0));
  mlirOperationSetOperand(loop, 1, pbcGpuConstIndex(loop, rounds));
  mlirOperationSetOperand(loop, 2, pbcGpuConstIndex(loop, 1));
  mlirOperationSetOperand(loop, 3, pbcGpuConstF32(loop, identity));

  /* Round k, lane l: element j = lb + (warp k + l) step, clamped to the
   * last; the loop's old index uses become j's. */
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(loop, 0));
  MlirValue k = mlirBlockGetArgument(body, 0);
  MlirOperation first = mlirBlockGetFirstOperation(body);
  MlirValue kw = pbcGpuArith(first, "muli", k, pbcGpuConstIndex(first, warp));
  MlirOperation kwOp = mlirOpResultGetOwner(kw);
  MlirValue pos = pbcGpuArith(first, "addi", kw, lane);
  MlirValue j = pbcGpuArith(first, "addi", pbcGpuConstIndex(first, lb),
                            pbcGpuArith(first, "muli", pos, pbcGpuConstIndex(first, step)));
  MlirValue jc = j;
  if (trip % warp)
    jc = pbcGpuArith(first, "minui", j, pbcGpuConstIndex(first, lb + (trip - 1) * step));
  mlirValueReplaceAllUsesOfWith(k, jc);
  mlirOperationSetOperand(kwOp, 0, k);
  if (trip % warp) {
    MlirValue acc = mlirBlockGetArgument(body, 1);
    int elem = mlirOperationGetOperand(comb, 0).ptr == acc.ptr ? 1 : 0;
    MlirValue in = pbcGpuLessThan(comb, pos, pbcGpuConstIndex(comb, trip));
    mlirOperationSetOperand(comb, elem,
                            pbcGpuSelect(comb, in, mlirOperationGetOperand(comb, elem),
                                         pbcGpuConstF32(comb, identity)));
  }

  /* The lanes' partial results meet by xor shuffles; then the initial
   * value joins, and the loop's users see the row's result. */
  MlirOperation after = mlirOperationGetNextInBlock(loop);
  MlirValue partial = mlirOperationGetResult(loop, 0);
  MlirValue sum = partial;
  for (long long off = warp / 2; off >= 1; off /= 2)
    sum = combine(comb, after, sum, pbcGpuShuffleXor(after, sum, (int)off, (int)warp));
  MlirValue result = combine(comb, after, init, sum);
  MlirOperation resultOp = mlirOpResultGetOwner(result);
  mlirValueReplaceAllUsesOfWith(partial, result);
  /* (The replacement also rewrote the uses of the partial result by the
   * shuffles and combiners just built, the last one included when there is
   * no shuffle: put them back.) */
  MlirOperation rest = mlirOperationGetNextInBlock(resultOp);
  for (MlirOperation op = mlirOperationGetNextInBlock(loop); op.ptr != rest.ptr;
       op = mlirOperationGetNextInBlock(op))
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i)
      if (mlirOperationGetOperand(op, i).ptr == result.ptr)
        mlirOperationSetOperand(op, i, partial);

  /* What follows the loop (the result's store) runs on lane 0 only. */
  MlirOperation term = mlirBlockGetTerminator(mlirOperationGetBlock(loop));
  if (rest.ptr == term.ptr)
    return;
  MlirContext ctx = mlirOperationGetContext(loop);
  MlirValue ops[2] = {lane, pbcGpuConstIndex(rest, 0)};
  MlirNamedAttribute eq = pbcGpuNamed(rest, "predicate",
                                      mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), 0));
  MlirValue lane0 = pbcGpuOp(rest, "arith.cmpi", 2, ops, mlirIntegerTypeGet(ctx, 1), 1, &eq);
  MlirOperation guard = pbcGpuBuildIf(rest, lane0);
  pbcGpuMoveRange(rest, term, mlirBlockGetTerminator(pbcGpuBody(guard, 0)));
}

bool pbcGpuMapRowReduction(MlirOperation par, long long threads, long long warp) {
  int n = (int)(mlirOperationGetNumOperands(par) / 3);
  long long rowsPerBlock = threads / warp; /* (warp <= threads: the pass's options) */
  static const char *const blockIds[] = {"block_x", "block_y", "block_z"};
  MlirValue lb[8], ub[8], step[8], outerStep[8];
  const char *outerProc[8];
  for (int d = 0; d < n; ++d) {
    lb[d] = mlirOperationGetOperand(par, d);
    ub[d] = mlirOperationGetOperand(par, n + d);
    step[d] = mlirOperationGetOperand(par, 2 * n + d);
    int rank = n - 1 - d;
    outerProc[d] = rank < 3 ? blockIds[rank] : "sequential";
    outerStep[d] = step[d];
  }
  outerStep[n - 1] =
      pbcGpuArith(par, "muli", step[n - 1], pbcGpuConstIndex(par, rowsPerBlock));
  MlirOperation outer = pbcGpuBuildParallel(par, n, lb, ub, outerStep);
  MlirBlock ob = pbcGpuBody(outer, 0);
  MlirValue zero = pbcGpuConstIndex(outer, 0), one = pbcGpuConstIndex(outer, 1),
            count = pbcGpuConstIndex(outer, rowsPerBlock * warp);
  MlirOperation inner = pbcGpuBuildParallel(mlirBlockGetTerminator(ob), 1, &zero, &count, &one);
  MlirBlock ib = pbcGpuBody(inner, 0);
  MlirOperation at = mlirBlockGetTerminator(ib);
  MlirValue tid = mlirBlockGetArgument(ib, 0);
  MlirValue lane = pbcGpuArith(at, "remui", tid, pbcGpuConstIndex(at, warp));
  MlirValue row = pbcGpuArith(at, "divui", tid, pbcGpuConstIndex(at, warp));
  MlirValue iv[8];
  for (int d = 0; d < n; ++d)
    iv[d] = mlirBlockGetArgument(ob, d);
  iv[n - 1] = pbcGpuArith(at, "addi", iv[n - 1], pbcGpuArith(at, "muli", row, step[n - 1]));
  long long l = pbcGpuConstantOf(lb[n - 1]), u = pbcGpuConstantOf(ub[n - 1]),
            s = pbcGpuConstantOf(step[n - 1]);
  long long trip = l >= 0 && u >= 0 && s > 0 ? (u - l + s - 1) / s : -1;
  MlirOperation dest = at;
  /* A warp past the last row skips it whole (the condition is the same on
   * all its lanes, as the shuffles need). */
  if (trip < 0 || trip % rowsPerBlock)
    dest = mlirBlockGetTerminator(
        pbcGpuBody(pbcGpuBuildIf(at, pbcGpuLessThan(at, iv[n - 1], ub[n - 1])), 0));
  MlirBlock body = pbcGpuBody(par, 0);
  for (int d = 0; d < n; ++d)
    mlirValueReplaceAllUsesOfWith(mlirBlockGetArgument(body, d), iv[d]);
  MlirOperation loop = onlyLoopOf(body);
  pbcGpuMoveRange(mlirBlockGetFirstOperation(body), mlirBlockGetTerminator(body), dest);
  spreadOverLanes(loop, lane, warp);
  static const char *const threadX[] = {"thread_x"};
  mlirOperationSetAttributeByName(outer, pbcStr("mapping"), pbcGpuLoopMapping(outer, outerProc, n));
  mlirOperationSetAttributeByName(inner, pbcStr("mapping"), pbcGpuLoopMapping(inner, threadX, 1));
  mlirOperationDestroy(par);
  return true;
}
