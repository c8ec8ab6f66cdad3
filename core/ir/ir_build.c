/* Generic construction of the ops pbc's C passes create (see
 * pbc/ir_build.h). */
#include "pbc/ir_build.h"
#include "pbc/c_pass.h"

#include <stdlib.h>

#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"


MlirNamedAttribute pbcNamedAttr(MlirContext ctx, const char *name, MlirAttribute a) {
  return mlirNamedAttributeGet(mlirIdentifierGet(ctx, pbcStr(name)), a);
}

MlirAttribute pbcLinalgParallelIterator(MlirContext ctx) {
  return mlirAttributeParseGet(ctx, pbcStr("#linalg.iterator_type<parallel>"));
}

static MlirOperation insert(MlirOperation before, MlirOperationState *st) {
  MlirOperation op = mlirOperationCreate(st);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(before), before, op);
  return op;
}

MlirOperation pbcBuildOp(MlirOperation before, const char *name, int n, const MlirValue *operands,
                         MlirType result, int nAttrs, const MlirNamedAttribute *attrs) {
  MlirOperationState st = mlirOperationStateGet(pbcStr(name), mlirOperationGetLocation(before));
  mlirOperationStateAddOperands(&st, n, operands);
  mlirOperationStateAddAttributes(&st, nAttrs, attrs);
  if (!mlirTypeIsNull(result))
    mlirOperationStateAddResults(&st, 1, &result);
  return insert(before, &st);
}

MlirValue pbcBuildIndexConstant(MlirOperation before, int64_t v) {
  MlirContext ctx = mlirOperationGetContext(before);
  MlirType index = mlirIndexTypeGet(ctx);
  MlirNamedAttribute value = pbcNamedAttr(ctx, "value", mlirIntegerAttrGet(index, v));
  return mlirOperationGetResult(pbcBuildOp(before, "arith.constant", 0, NULL, index, 1, &value), 0);
}

MlirValue pbcBuildFloatConstant(MlirOperation before, MlirType t, double v) {
  MlirContext ctx = mlirTypeGetContext(t);
  MlirNamedAttribute value = pbcNamedAttr(ctx, "value", mlirFloatAttrDoubleGet(ctx, t, v));
  return mlirOperationGetResult(pbcBuildOp(before, "arith.constant", 0, NULL, t, 1, &value), 0);
}

MlirOperation pbcBuildIf(MlirOperation before, MlirValue cond, bool withElse) {
  MlirLocation loc = mlirOperationGetLocation(before);
  MlirRegion regions[2] = {mlirRegionCreate(), mlirRegionCreate()};
  for (int r = 0; r < (withElse ? 2 : 1); ++r) {
    MlirBlock block = mlirBlockCreate(0, NULL, NULL);
    mlirRegionAppendOwnedBlock(regions[r], block);
    MlirOperationState yst = mlirOperationStateGet(pbcStr("scf.yield"), loc);
    mlirBlockAppendOwnedOperation(block, mlirOperationCreate(&yst));
  }
  MlirOperationState st = mlirOperationStateGet(pbcStr("scf.if"), loc);
  mlirOperationStateAddOperands(&st, 1, &cond);
  mlirOperationStateAddOwnedRegions(&st, 2, regions);
  return insert(before, &st);
}

MlirOperation pbcBuildAffineFor(MlirOperation before, int64_t ub, MlirLocation loc) {
  MlirContext ctx = mlirLocationGetContext(loc);
  MlirType index = mlirIndexTypeGet(ctx);
  int32_t segments[3] = {0, 0, 0};
  MlirNamedAttribute attrs[4] = {
      pbcNamedAttr(ctx, "lowerBoundMap", mlirAffineMapAttrGet(mlirAffineMapConstantGet(ctx, 0))),
      pbcNamedAttr(ctx, "upperBoundMap", mlirAffineMapAttrGet(mlirAffineMapConstantGet(ctx, ub))),
      pbcNamedAttr(ctx, "step", mlirIntegerAttrGet(index, 1)),
      pbcNamedAttr(ctx, "operandSegmentSizes", mlirDenseI32ArrayGet(ctx, 3, segments)),
  };
  MlirRegion region = mlirRegionCreate();
  MlirBlock body = mlirBlockCreate(1, &index, &loc);
  mlirRegionAppendOwnedBlock(region, body);
  MlirOperationState yst = mlirOperationStateGet(pbcStr("affine.yield"), loc);
  mlirBlockAppendOwnedOperation(body, mlirOperationCreate(&yst));
  MlirOperationState st = mlirOperationStateGet(pbcStr("affine.for"), loc);
  mlirOperationStateAddAttributes(&st, 4, attrs);
  mlirOperationStateAddOwnedRegions(&st, 1, &region);
  return insert(before, &st);
}

/* result: the loaded type (null: the element type; unused for stores). */
static MlirOperation access(const char *name, MlirOperation before, MlirValue value,
                            MlirValue memref, const MlirValue *indices, int rank, MlirType result,
                            MlirLocation loc) {
  MlirContext ctx = mlirLocationGetContext(loc);
  MlirValue operands[16];
  int n = 0;
  if (!mlirValueIsNull(value))
    operands[n++] = value;
  operands[n++] = memref;
  for (int i = 0; i < rank && n < 16; ++i)
    operands[n++] = indices[i];
  MlirNamedAttribute map =
      pbcNamedAttr(ctx, "map", mlirAffineMapAttrGet(mlirAffineMapMultiDimIdentityGet(ctx, rank)));
  MlirOperationState st = mlirOperationStateGet(pbcStr(name), loc);
  mlirOperationStateAddOperands(&st, n, operands);
  mlirOperationStateAddAttributes(&st, 1, &map);
  if (mlirValueIsNull(value)) {
    if (mlirTypeIsNull(result))
      result = mlirShapedTypeGetElementType(mlirValueGetType(memref));
    mlirOperationStateAddResults(&st, 1, &result);
  }
  return insert(before, &st);
}

MlirOperation pbcBuildAffineLoad(MlirOperation before, MlirValue memref, const MlirValue *indices,
                                 int rank, MlirLocation loc) {
  return access("affine.load", before, (MlirValue){NULL}, memref, indices, rank, (MlirType){NULL},
                loc);
}

MlirOperation pbcBuildAffineVectorLoad(MlirOperation before, MlirValue memref,
                                       const MlirValue *indices, int rank, MlirType vectorType,
                                       MlirLocation loc) {
  return access("affine.vector_load", before, (MlirValue){NULL}, memref, indices, rank, vectorType,
                loc);
}

MlirOperation pbcBuildAffineStore(MlirOperation before, MlirValue value, MlirValue memref,
                                  const MlirValue *indices, int rank, MlirLocation loc) {
  return access("affine.store", before, value, memref, indices, rank, (MlirType){NULL}, loc);
}

MlirOperation pbcBuildAffineVectorStore(MlirOperation before, MlirValue value, MlirValue memref,
                                        const MlirValue *indices, int rank, MlirLocation loc) {
  return access("affine.vector_store", before, value, memref, indices, rank, (MlirType){NULL}, loc);
}

void pbcEraseWithUsers(MlirOperation op) {
  for (intptr_t r = 0; r < mlirOperationGetNumResults(op); ++r) {
    MlirValue v = mlirOperationGetResult(op, r);
    while (!mlirOpOperandIsNull(mlirValueGetFirstUse(v)))
      mlirOperationDestroy(mlirOpOperandGetOwner(mlirValueGetFirstUse(v)));
  }
  mlirOperationDestroy(op);
}

MlirOperation pbcLoopPeel(MlirOperation forOp, bool last) {
  PbcLinearForm lb, ub;
  if (!pbcLoopBoundForm(forOp, false, &lb) || lb.nTerms || !pbcLoopBoundForm(forOp, true, &ub) ||
      ub.nTerms || pbcLoopHasBoundOperands(forOp) || pbcExtAffineConstantTripCount(forOp) < 2)
    return (MlirOperation){NULL};
  long long step = pbcLoopStep(forOp);
  long long cut = last ? lb.constant + (ub.constant - lb.constant - 1) / step * step
                       : lb.constant + step;
  MlirOperation clone = mlirOperationClone(forOp);
  MlirBlock block = mlirOperationGetBlock(forOp);
  if (last) {
    mlirBlockInsertOwnedOperationAfter(block, forOp, clone);
    pbcLoopSetLowerBound(clone, cut);
    pbcLoopSetUpperBound(forOp, cut);
  } else {
    mlirBlockInsertOwnedOperationBefore(block, forOp, clone);
    pbcLoopSetUpperBound(clone, cut);
    pbcLoopSetLowerBound(forOp, cut);
  }
  return clone;
}

void pbcLoopUnpeel(MlirOperation forOp, MlirOperation clone, bool last) {
  PbcLinearForm bound;
  pbcLoopBoundForm(clone, last, &bound);
  if (last)
    pbcLoopSetUpperBound(forOp, bound.constant);
  else
    pbcLoopSetLowerBound(forOp, bound.constant);
  mlirOperationDestroy(clone);
}

bool pbcEraseIfWriteOnly(MlirValue buffer) {
  if (!mlirValueIsAOpResult(buffer) || !pbcOpIsA(mlirOpResultGetOwner(buffer), "memref.alloc"))
    return false;
  for (MlirOpOperand u = mlirValueGetFirstUse(buffer); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    bool storeInto = (pbcOpIsA(user, "affine.store") || pbcOpIsA(user, "affine.vector_store")) &&
                     mlirOpOperandGetOperandNumber(u) == 1;
    if (!storeInto && !pbcOpIsA(user, "memref.dealloc"))
      return false;
  }
  pbcEraseWithUsers(mlirOpResultGetOwner(buffer));
  return true;
}

static MlirAffineMap accessMap(MlirOperation op) {
  return mlirAffineMapAttrGetValue(mlirOperationGetInherentAttributeByName(op, pbcStr("map")));
}

MlirAffineExpr pbcAccessSubscriptExpr(MlirOperation op, intptr_t r) {
  return mlirAffineMapGetResult(accessMap(op), r);
}

void pbcAccessSetSubscriptExpr(MlirOperation op, intptr_t r, MlirAffineExpr e) {
  MlirAffineMap map = accessMap(op);
  intptr_t n = mlirAffineMapGetNumResults(map);
  MlirAffineExpr *results = malloc((size_t)n * sizeof(MlirAffineExpr));
  for (intptr_t i = 0; i < n; ++i)
    results[i] = i == r ? e : mlirAffineMapGetResult(map, i);
  map = mlirAffineMapGet(mlirOperationGetContext(op), mlirAffineMapGetNumDims(map),
                         mlirAffineMapGetNumSymbols(map), n, results);
  free(results);
  mlirOperationSetInherentAttributeByName(op, pbcStr("map"), mlirAffineMapAttrGet(map));
}

void pbcAccessOffsetSubscript(MlirOperation op, intptr_t r, int64_t delta) {
  if (delta)
    pbcAccessSetSubscriptExpr(
        op, r,
        mlirAffineAddExprGet(pbcAccessSubscriptExpr(op, r),
                             mlirAffineConstantExprGet(mlirOperationGetContext(op), delta)));
}

void pbcAccessPermuteSubscripts(MlirOperation op, const int *perm) {
  MlirAffineMap map = accessMap(op);
  intptr_t n = mlirAffineMapGetNumResults(map);
  MlirAffineExpr *results = malloc((size_t)n * sizeof(MlirAffineExpr));
  for (intptr_t q = 0; q < n; ++q)
    results[q] = mlirAffineMapGetResult(map, perm[q]);
  map = mlirAffineMapGet(mlirOperationGetContext(op), mlirAffineMapGetNumDims(map),
                         mlirAffineMapGetNumSymbols(map), n, results);
  free(results);
  mlirOperationSetInherentAttributeByName(op, pbcStr("map"), mlirAffineMapAttrGet(map));
}

MlirOperation pbcBuildAlloc(MlirOperation before, MlirType type, MlirLocation loc) {
  MlirContext ctx = mlirLocationGetContext(loc);
  int32_t seg[2] = {0, 0};
  MlirNamedAttribute attrs[2] = {
      pbcNamedAttr(ctx, "operandSegmentSizes", mlirDenseI32ArrayGet(ctx, 2, seg)),
      pbcNamedAttr(ctx, "alignment", mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), 64))};
  MlirOperationState st = mlirOperationStateGet(pbcStr("memref.alloc"), loc);
  mlirOperationStateAddResults(&st, 1, &type);
  mlirOperationStateAddAttributes(&st, 2, attrs);
  return insert(before, &st);
}

MlirOperation pbcBuildDealloc(MlirOperation before, MlirValue buffer, MlirLocation loc) {
  MlirOperationState st = mlirOperationStateGet(pbcStr("memref.dealloc"), loc);
  mlirOperationStateAddOperands(&st, 1, &buffer);
  return insert(before, &st);
}

MlirStringRef pbcBuildGlobal(MlirOperation module, MlirSymbolTable symbols, const char *name,
                             MlirType type, MlirAttribute init, bool constant) {
  MlirContext ctx = mlirOperationGetContext(module);
  MlirNamedAttribute attrs[] = {
      pbcNamedAttr(ctx, "sym_name", mlirStringAttrGet(ctx, pbcStr(name))),
      pbcNamedAttr(ctx, "sym_visibility", mlirStringAttrGet(ctx, pbcStr("private"))),
      pbcNamedAttr(ctx, "type", mlirTypeAttrGet(type)),
      pbcNamedAttr(ctx, "initial_value", mlirAttributeIsNull(init) ? mlirUnitAttrGet(ctx) : init),
      pbcNamedAttr(ctx, "alignment", mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), 64)),
      pbcNamedAttr(ctx, "constant", mlirUnitAttrGet(ctx)),
  };
  MlirOperationState st = mlirOperationStateGet(pbcStr("memref.global"), mlirOperationGetLocation(module));
  mlirOperationStateAddAttributes(&st, constant ? 6 : 5, attrs);
  MlirOperation global = mlirOperationCreate(&st);
  MlirStringRef given = mlirStringAttrGetValue(mlirSymbolTableInsert(symbols, global));
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  mlirOperationMoveBefore(global, mlirBlockGetFirstOperation(body));
  return given;
}

MlirValue pbcBuildGetGlobal(MlirOperation within, MlirStringRef name, MlirType type) {
  MlirContext ctx = mlirOperationGetContext(within);
  MlirOperation func = within;
  while (!pbcOpIsA(func, "func.func"))
    func = mlirOperationGetParentOperation(func);
  MlirBlock entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  MlirNamedAttribute sym = pbcNamedAttr(ctx, "name", mlirFlatSymbolRefAttrGet(ctx, name));
  return mlirOperationGetResult(
      pbcBuildOp(mlirBlockGetFirstOperation(entry), "memref.get_global", 0, NULL, type, 1, &sym), 0);
}

MlirOperation pbcBuildAffineNest(MlirOperation before, const int64_t *shape, int rank,
                                 MlirLocation loc, MlirValue *ivs, MlirOperation *innermostEnd) {
  MlirOperation outer = {NULL};
  for (int d = 0; d < rank; ++d) {
    MlirOperation loop = pbcBuildAffineFor(before, shape[d], loc);
    if (d == 0)
      outer = loop;
    ivs[d] = pbcLoopIv(loop);
    before = mlirBlockGetTerminator(pbcLoopBody(loop));
  }
  *innermostEnd = before;
  return outer;
}

MlirValue pbcBuildAffineApply(MlirOperation before, MlirAffineMap map, const MlirValue *operands,
                              int n, MlirLocation loc) {
  MlirContext ctx = mlirLocationGetContext(loc);
  MlirNamedAttribute attr = pbcNamedAttr(ctx, "map", mlirAffineMapAttrGet(map));
  MlirType index = mlirIndexTypeGet(ctx);
  MlirOperationState st = mlirOperationStateGet(pbcStr("affine.apply"), loc);
  mlirOperationStateAddOperands(&st, n, operands);
  mlirOperationStateAddResults(&st, 1, &index);
  mlirOperationStateAddAttributes(&st, 1, &attr);
  return mlirOperationGetResult(insert(before, &st), 0);
}

MlirOperation pbcBuildAffinePrefetch(MlirOperation before, const MlirValue *operands, int n,
                                     MlirAttribute mapAttr, bool isWrite, MlirLocation loc) {
  MlirContext ctx = mlirLocationGetContext(loc);
  MlirNamedAttribute attrs[4] = {
      pbcNamedAttr(ctx, "map", mapAttr),
      pbcNamedAttr(ctx, "isWrite", mlirBoolAttrGet(ctx, isWrite)),
      pbcNamedAttr(ctx, "localityHint", mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 32), 3)),
      pbcNamedAttr(ctx, "isDataCache", mlirBoolAttrGet(ctx, 1)),
  };
  MlirOperationState st = mlirOperationStateGet(pbcStr("affine.prefetch"), loc);
  mlirOperationStateAddOperands(&st, n, operands);
  mlirOperationStateAddAttributes(&st, 4, attrs);
  return insert(before, &st);
}

/* The body the index's affine.apply goes to: the innermost loop's of the
 * perfect band below `loop` when every use of the index is in there (the
 * band stays perfect for the passes that tile it), else `loop`'s own. */
static MlirBlock restrictAnchor(MlirOperation loop) {
  MlirOperation band[PBC_MAX_BAND];
  MlirOperation inner = band[pbcLoopBand(loop, band, PBC_MAX_BAND) - 1];
  for (MlirOpOperand u = mlirValueGetFirstUse(pbcLoopIv(loop)); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u))
    if (!pbcOpIsInside(mlirOpOperandGetOwner(u), inner) ||
        mlirOperationEqual(mlirOpOperandGetOwner(u), inner))
      return pbcLoopBody(loop);
  return pbcLoopBody(inner);
}

void pbcLoopRestrict(MlirOperation loop, long long extent, MlirValue origin) {
  pbcLoopSetUpperBound(loop, extent);
  pbcLoopShiftIndex(loop, origin, 1);
}

void pbcLoopShiftIndex(MlirOperation loop, MlirValue origin, long long scale) {
  MlirContext ctx = mlirOperationGetContext(loop);
  MlirBlock anchor = restrictAnchor(loop);
  MlirValue iv = pbcLoopIv(loop);
  MlirAffineExpr sum = mlirAffineAddExprGet(
      mlirAffineMulExprGet(mlirAffineDimExprGet(ctx, 0), mlirAffineConstantExprGet(ctx, scale)),
      mlirAffineDimExprGet(ctx, 1));
  MlirValue ops[2] = {origin, iv};
  MlirValue at =
      pbcBuildAffineApply(mlirBlockGetFirstOperation(anchor), mlirAffineMapGet(ctx, 2, 0, 1, &sum),
                          ops, 2, mlirOperationGetLocation(loop));
  MlirOperation apply = mlirOpResultGetOwner(at);
  mlirValueReplaceAllUsesExcept(iv, at, 1, &apply);
}

MlirOperation pbcCloneNestRestricted(MlirOperation nest, MlirOperation before, int n,
                                     const int loops[], const long long extent[],
                                     const MlirValue origin[], MlirOperation band[]) {
  MlirOperation clone = mlirOperationClone(nest), own[PBC_MAX_BAND];
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(before), before, clone);
  if (!band)
    band = own;
  pbcLoopBand(clone, band, PBC_MAX_BAND);
  for (int i = 0; i < n; ++i)
    pbcLoopRestrict(band[loops[i]], extent[i], origin[i]);
  return clone;
}

void pbcMoveBodyBefore(MlirBlock from, MlirOperation anchor) {
  MlirOperation terminator = mlirBlockGetTerminator(from);
  for (MlirOperation op = mlirBlockGetFirstOperation(from); !mlirOperationIsNull(op);) {
    MlirOperation next = mlirOperationGetNextInBlock(op);
    if (!mlirOperationEqual(op, terminator))
      mlirOperationMoveBefore(op, anchor);
    op = next;
  }
}

void pbcMoveDeallocsAfter(MlirOperation first, MlirOperation second) {
  for (MlirOperation d = mlirOperationGetNextInBlock(first); !mlirOperationEqual(d, second);) {
    MlirOperation next = mlirOperationGetNextInBlock(d);
    if (pbcOpIsA(d, "memref.dealloc"))
      mlirOperationMoveAfter(d, second);
    d = next;
  }
}

MlirValue pbcBuildCollapseLastTwo(MlirOperation before, MlirValue memref) {
  MlirType t = mlirValueGetType(memref);
  MlirContext ctx = mlirTypeGetContext(t);
  int r = (int)mlirShapedTypeGetRank(t);
  int64_t shape[PBC_MAX_RANK];
  MlirAttribute groups[PBC_MAX_RANK];
  MlirType i64 = mlirIntegerTypeGet(ctx, 64);
  for (int d = 0; d < r - 1; ++d) {
    shape[d] = mlirShapedTypeGetDimSize(t, d);
    MlirAttribute dims[2] = {mlirIntegerAttrGet(i64, d), mlirIntegerAttrGet(i64, d + 1)};
    groups[d] = mlirArrayAttrGet(ctx, d == r - 2 ? 2 : 1, dims);
  }
  shape[r - 2] *= mlirShapedTypeGetDimSize(t, r - 1);
  MlirType collapsed = mlirMemRefTypeGet(mlirShapedTypeGetElementType(t), r - 1, shape,
                                         mlirAttributeGetNull(), mlirMemRefTypeGetMemorySpace(t));
  MlirNamedAttribute reassoc = pbcNamedAttr(ctx, "reassociation", mlirArrayAttrGet(ctx, r - 1, groups));
  return mlirOperationGetResult(
      pbcBuildOp(before, "memref.collapse_shape", 1, &memref, collapsed, 1, &reassoc), 0);
}

MlirType pbcTypeWithElement(MlirType t, MlirType elem) {
  if (!mlirTypeIsAVector(t))
    return elem;
  int64_t rank = mlirShapedTypeGetRank(t), shape[8];
  if (rank > 8)
    return (MlirType){NULL};
  for (int64_t d = 0; d < rank; ++d)
    shape[d] = mlirShapedTypeGetDimSize(t, d);
  return mlirVectorTypeGet(rank, shape, elem);
}

void pbcGuardNaNBeforeConversion(MlirOperation conv) {
  MlirValue x = mlirOperationGetOperand(conv, 0);
  MlirType t = mlirValueGetType(x);
  MlirContext ctx = mlirOperationGetContext(conv);
  MlirType boolType = pbcTypeWithElement(t, mlirIntegerTypeGet(ctx, 1));
  if (mlirTypeIsNull(boolType))
    return; /* no such vectors come out of the approximations */
  MlirType elem = mlirTypeIsAVector(t) ? mlirShapedTypeGetElementType(t) : t;
  MlirAttribute zero = mlirFloatAttrDoubleGet(ctx, elem, 0.0);
  if (mlirTypeIsAVector(t))
    zero = mlirDenseElementsAttrSplatGet(t, zero);
  MlirNamedAttribute value = pbcNamedAttr(ctx, "value", zero);
  MlirValue z = mlirOperationGetResult(pbcBuildOp(conv, "arith.constant", 0, NULL, t, 1, &value), 0);
  MlirNamedAttribute ordered = pbcNamedAttr(
      ctx, "predicate", mlirAttributeParseGet(ctx, mlirStringRefCreateFromCString("7 : i64")));
  MlirValue xx[2] = {x, x};
  MlirValue isNum =
      mlirOperationGetResult(pbcBuildOp(conv, "arith.cmpf", 2, xx, boolType, 1, &ordered), 0);
  MlirValue sel[3] = {isNum, x, z};
  MlirValue safe = mlirOperationGetResult(pbcBuildOp(conv, "arith.select", 3, sel, t, 0, NULL), 0);
  mlirOperationSetOperand(conv, 0, safe);
}
