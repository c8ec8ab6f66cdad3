/* A GEMV's reduction split between the cores: see split_gemv.h. */
#include "passes/s3/tiling/split_gemv.h"

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/marks.h"

/* Whether `op` (an affine.load or affine.store) accesses `memref` (or any
 * memref, if null) at identity subscripts (i, j). */
static bool accessesAtIJ(MlirOperation op, MlirValue memref, MlirValue i, MlirValue j) {
  intptr_t m = pbcOpIsA(op, "affine.store") ? 1 : 0; /* the memref operand */
  MlirAttribute map = mlirOperationGetAttributeByName(op, pbcStr("map"));
  return mlirOperationGetNumOperands(op) == m + 3 && !mlirAttributeIsNull(map) &&
         mlirAffineMapIsIdentity(mlirAffineMapAttrGetValue(map)) &&
         (mlirValueIsNull(memref) || mlirValueEqual(mlirOperationGetOperand(op, m), memref)) &&
         mlirValueEqual(mlirOperationGetOperand(op, m + 1), i) &&
         mlirValueEqual(mlirOperationGetOperand(op, m + 2), j);
}

/* The accumulation in k's body: its only store (to C at (i, j)) and the
 * only load of C there (also at (i, j)); no other op with regions or
 * memory writes. */
static bool findAccumulation(MlirOperation k, MlirValue i, MlirValue j, MlirOperation *load,
                             MlirOperation *store) {
  MlirBlock body = pbcLoopBody(k);
  *store = (MlirOperation){NULL};
  *load = (MlirOperation){NULL};
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (pbcOpIsA(op, "affine.store")) {
      if (!mlirOperationIsNull(*store) || !accessesAtIJ(op, (MlirValue){NULL}, i, j))
        return false;
      *store = op;
    } else if (mlirOperationGetNumRegions(op) > 0 ||
               !(pbcOpIsA(op, "affine.load") || pbcOpIsA(op, "affine.yield") ||
                 mlirOperationGetNumResults(op) == 1)) {
      return false;
    }
  }
  if (mlirOperationIsNull(*store))
    return false;
  MlirValue c = mlirOperationGetOperand(*store, 1);
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!pbcOpIsA(op, "affine.load") || !mlirValueEqual(mlirOperationGetOperand(op, 0), c))
      continue;
    if (!mlirOperationIsNull(*load) || !accessesAtIJ(op, c, i, j))
      return false;
    *load = op;
  }
  return !mlirOperationIsNull(*load);
}

/* C[i, j] += P[0, i, j] + ... + P[parts - 1, i, j] over C's 1 x N, before
 * `before`; returns the nest. */
static MlirOperation buildSum(MlirOperation before, MlirValue c, MlirValue p, int parts,
                              long long n, MlirType elem, MlirLocation loc) {
  int64_t shape[2] = {1, n};
  MlirValue iv[2];
  MlirOperation end;
  MlirOperation sum = pbcBuildAffineNest(before, shape, 2, loc, iv, &end);
  MlirValue acc = mlirOperationGetResult(pbcBuildAffineLoad(end, c, iv, 2, loc), 0);
  for (int q = 0; q < parts; ++q) {
    MlirValue idx[3] = {pbcBuildIndexConstant(sum, q), iv[0], iv[1]};
    MlirValue operands[2] = {acc, mlirOperationGetResult(pbcBuildAffineLoad(end, p, idx, 3, loc), 0)};
    acc = mlirOperationGetResult(pbcBuildOp(end, "arith.addf", 2, operands, elem, 0, NULL), 0);
  }
  pbcBuildAffineStore(end, acc, c, iv, 2, loc);
  pbcNestSetKind(sum, "pointwise");
  return sum;
}

bool pbcSplitGemvK(MlirOperation band[3], int parts, int kRows, int lanes) {
  MlirOperation root = band[0];
  for (int d = 0; d < 3; ++d)
    if (pbcLoopZeroBasedTrip(band[d]) <= 0) /* from 0, step 1, a constant bound */
      return false;
  long long n = pbcLoopZeroBasedTrip(band[1]), k = pbcLoopZeroBasedTrip(band[2]);
  if (parts < 2 || kRows < 1 || pbcLoopZeroBasedTrip(band[0]) != 1 || k % (parts * kRows) != 0 ||
      !mlirOperationEqual(pbcOnlyLoopIn(band[0]), band[1]) ||
      !mlirOperationEqual(pbcOnlyLoopIn(band[1]), band[2]))
    return false;
  MlirOperation cLoad, cStore;
  if (!findAccumulation(band[2], pbcLoopIv(band[0]), pbcLoopIv(band[1]), &cLoad, &cStore))
    return false;
  MlirValue c = mlirOperationGetOperand(cStore, 1);
  MlirType elem = mlirShapedTypeGetElementType(mlirValueGetType(c));
  /* f32 and wider only: a sum in f16 or bf16 keeps few bits of its small
   * terms, so its order decides much of the result (two half sums of 1024
   * bf16 products came out 30.75 where one running sum gave 36.25); a
   * narrow GEMV keeps its column split and the one order per column. */
  if (!mlirTypeIsAFloat(elem) || mlirFloatTypeGetWidth(elem) < 32)
    return false;
  MlirLocation loc = mlirOperationGetLocation(root);
  MlirContext ctx = mlirLocationGetContext(loc);

  /* The partial rows, each starting at a whole vector (a row at an odd half
   * vector splits every load and store of it in two: 1x1000x2048 ran at
   * 0.070 ms instead of 0.050 in some processes), and the loop over the
   * parts (the new root). */
  int64_t shape[3] = {parts, 1, lanes > 1 ? (n + lanes - 1) / lanes * lanes : n};
  MlirType pType = mlirMemRefTypeContiguousGet(elem, 3, shape, mlirAttributeGetNull());
  MlirValue p = mlirOperationGetResult(pbcBuildAlloc(root, pType, loc), 0);
  MlirValue zero = pbcBuildFloatConstant(root, elem, 0.0);
  MlirOperation tLoop = pbcBuildAffineFor(root, parts, loc);
  MlirValue t = pbcLoopIv(tLoop);
  mlirOperationMoveBefore(root, mlirBlockGetTerminator(pbcLoopBody(tLoop)));
  MlirAttribute kind = mlirOperationGetAttributeByName(root, pbcStr(PBC_MARK_KIND));
  mlirOperationRemoveAttributeByName(root, pbcStr(PBC_MARK_KIND));
  if (!mlirAttributeIsNull(kind))
    mlirOperationSetAttributeByName(tLoop, pbcStr(PBC_MARK_KIND), kind);
  pbcOpSetUnitAttr(tLoop, PBC_MARK_PARALLEL);

  /* P[t] = 0, then the nest accumulates into P[t] instead of C. */
  int64_t rowShape[2] = {1, n};
  MlirValue fill[2];
  MlirOperation fillEnd;
  pbcBuildAffineNest(root, rowShape, 2, loc, fill, &fillEnd);
  MlirValue fillIdx[3] = {t, fill[0], fill[1]};
  pbcBuildAffineStore(fillEnd, zero, p, fillIdx, 3, loc);
  MlirValue idx[3] = {t, pbcLoopIv(band[0]), pbcLoopIv(band[1])};
  MlirOperation load = pbcBuildAffineLoad(cLoad, p, idx, 3, loc);
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(cLoad, 0), mlirOperationGetResult(load, 0));
  mlirOperationDestroy(cLoad);
  pbcBuildAffineStore(cStore, mlirOperationGetOperand(cStore, 0), p, idx, 3, loc);
  mlirOperationDestroy(cStore);

  /* k over this part's rows, kRows at a time in the outermost loop. */
  long long rows = k / parts;
  MlirAffineExpr first = mlirAffineMulExprGet(mlirAffineDimExprGet(ctx, 0),
                                              mlirAffineConstantExprGet(ctx, rows));
  MlirValue origin = pbcBuildAffineApply(root, mlirAffineMapGet(ctx, 1, 0, 1, &first), &t, 1, loc);
  pbcLoopRestrict(band[2], rows, origin);
  unsigned size = (unsigned)kRows;
  MlirOperation kTiles[2];
  if (pbcExtAffineTile(&band[2], 1, &size, kTiles)) {
    /* [i j kT] -> [kT i j]: i and j are parallel, so k keeps its order for
     * every element of P. */
    MlirOperation outer[3] = {band[0], band[1], kTiles[0]};
    unsigned perm[3] = {1, 2, 0};
    pbcExtAffinePermuteLegal(outer, 3, perm);
  }
  pbcOpSetUnitAttr(band[1], PBC_MARK_VECTORIZE);
  long long rest = n % lanes;
  if (rest && n > rest) { /* whole vectors, then the rest columns */
    int j = 0;
    MlirValue restOrigin = pbcBuildIndexConstant(tLoop, n - rest);
    pbcCloneNestRestricted(band[1], mlirOperationGetNextInBlock(band[1]), 1, &j, &rest, &restOrigin,
                           NULL);
    pbcLoopSetUpperBound(band[1], n - rest);
  }

  MlirOperation sum = buildSum(mlirOperationGetNextInBlock(tLoop), c, p, parts, n, elem, loc);
  pbcBuildDealloc(mlirOperationGetNextInBlock(sum), p, loc);
  return true;
}
