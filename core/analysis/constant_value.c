/*===- constant_value.c - Values known at compile time -------------------===*\
|* What a load reads when its value is fixed at compile time: an element of  *|
|* a constant global, read directly or through the copies pbc makes of one   *|
|* (pbc-interleave's per-channel replicas: a pbc.copy nest whose one store   *|
|* writes each element once, R[i] = G[f(i)]). Used by                        *|
|* pbc-fold-constant-loads (to fold them) and pbc-hoist-invariant-loads (to  *|
|* count the registers such values take: equal constants share one).        *|
\*===----------------------------------------------------------------------===*/
#include "analysis/constant_value.h"

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"

enum { kMaxLanes = 64, kMaxDepth = 4 };


/* Floor division and its remainder, as affine maps define them. */
static long long floorDiv(long long a, long long b) {
  long long q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static bool evalExpr(MlirAffineExpr e, const long long *operands, int nDims, long long *out) {
  if (mlirAffineExprIsAConstant(e)) {
    *out = mlirAffineConstantExprGetValue(e);
    return true;
  }
  if (mlirAffineExprIsADim(e)) {
    *out = operands[mlirAffineDimExprGetPosition(e)];
    return true;
  }
  if (mlirAffineExprIsASymbol(e)) {
    *out = operands[nDims + mlirAffineSymbolExprGetPosition(e)];
    return true;
  }
  if (!mlirAffineExprIsABinary(e))
    return false;
  long long l, r;
  if (!evalExpr(mlirAffineBinaryOpExprGetLHS(e), operands, nDims, &l) ||
      !evalExpr(mlirAffineBinaryOpExprGetRHS(e), operands, nDims, &r))
    return false;
  if (mlirAffineExprIsAAdd(e))
    *out = l + r;
  else if (mlirAffineExprIsAMul(e))
    *out = l * r;
  else if (r == 0)
    return false;
  else if (mlirAffineExprIsAFloorDiv(e))
    *out = floorDiv(l, r);
  else if (mlirAffineExprIsACeilDiv(e))
    *out = -floorDiv(-l, r);
  else if (mlirAffineExprIsAMod(e))
    *out = l - floorDiv(l, r) * r;
  else
    return false;
  return true;
}

static bool evalMap(MlirAffineMap map, MlirOperation op, intptr_t firstOperand,
                    const PbcIvValues *b, long long *results);

/* The constant an index value has (given the ivs in b). */
bool pbcEvalIndex(MlirValue v, const PbcIvValues *b, long long *out) {
  for (int i = 0; i < b->n; ++i)
    if (mlirValueEqual(v, b->iv[i])) {
      *out = b->value[i];
      return true;
    }
  if (!mlirValueIsAOpResult(v))
    return false;
  MlirOperation def = mlirOpResultGetOwner(v);
  if (pbcOpIsA(def, "arith.constant")) {
    MlirAttribute a = mlirOperationGetAttributeByName(def, pbcStr("value"));
    if (!mlirAttributeIsAInteger(a))
      return false;
    *out = mlirIntegerAttrGetValueInt(a);
    return true;
  }
  if (pbcOpIsA(def, "affine.apply")) {
    MlirAffineMap map = mlirAffineMapAttrGetValue(mlirOperationGetAttributeByName(def, pbcStr("map")));
    return mlirAffineMapGetNumResults(map) == 1 && evalMap(map, def, 0, b, out);
  }
  return false;
}

/* All results of `map` over op's operands from `firstOperand` on. */
static bool evalMap(MlirAffineMap map, MlirOperation op, intptr_t firstOperand,
                    const PbcIvValues *b, long long *results) {
  intptr_t nOps = mlirAffineMapGetNumDims(map) + mlirAffineMapGetNumSymbols(map);
  if (nOps > PBC_MAX_TERMS || mlirOperationGetNumOperands(op) != firstOperand + nOps)
    return false;
  long long operands[PBC_MAX_TERMS];
  for (intptr_t i = 0; i < nOps; ++i)
    if (!pbcEvalIndex(mlirOperationGetOperand(op, firstOperand + i), b, &operands[i]))
      return false;
  for (intptr_t r = 0; r < mlirAffineMapGetNumResults(map); ++r)
    if (!evalExpr(mlirAffineMapGetResult(map, r), operands, (int)mlirAffineMapGetNumDims(map),
                  &results[r]))
      return false;
  return true;
}

/* The subscripts of an affine load or store (memref operand `memrefPos`). */
static bool evalSubscripts(MlirOperation access, intptr_t memrefPos, const PbcIvValues *b,
                           long long *idx) {
  MlirAffineMap map =
      mlirAffineMapAttrGetValue(mlirOperationGetAttributeByName(access, pbcStr("map")));
  return mlirAffineMapGetNumResults(map) <= PBC_MAX_RANK &&
         evalMap(map, access, memrefPos + 1, b, idx);
}

/* True if `nest` comes before `op`, or before an ancestor of it, in its block. */
static bool precedes(MlirOperation nest, MlirOperation op) {
  MlirBlock block = mlirOperationGetBlock(nest);
  while (!mlirOperationIsNull(op) && !mlirBlockEqual(mlirOperationGetBlock(op), block))
    op = mlirOperationGetParentOperation(op);
  return !mlirOperationIsNull(op) && pbcOpFollowsInBlock(op, nest);
}

/* The one store into a fresh buffer, if its other users only read it or free
 * it and that store sits in a pbc.copy nest. */
MlirOperation pbcCopyBufferStore(MlirValue buffer) {
  MlirOperation store = {NULL};
  for (MlirOpOperand u = mlirValueGetFirstUse(buffer); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    if (pbcOpIsA(user, "memref.dealloc") ||
        ((pbcOpIsA(user, "affine.load") || pbcOpIsA(user, "affine.vector_load")) &&
         mlirOpOperandGetOperandNumber(u) == 0))
      continue;
    if (!pbcOpIsA(user, "affine.store") || mlirOpOperandGetOperandNumber(u) != 1 ||
        !mlirOperationIsNull(store))
      return (MlirOperation){NULL};
    store = user;
  }
  if (mlirOperationIsNull(store) || mlirOperationIsNull(pbcCopyNestOf(store)))
    return (MlirOperation){NULL};
  return store;
}

static bool resolve(MlirOperation reader, MlirValue memref, const long long *idx, int depth,
                    MlirSymbolTable globals, MlirAttribute *out);

/* The element a copy store wrote at idx: its subscripts must be the nest's
 * ivs, one per dimension, each loop 0..ub step 1 with idx inside. */
static bool resolveCopy(MlirOperation reader, MlirOperation store, const long long *idx, int depth,
                        MlirSymbolTable globals, MlirAttribute *out) {
  MlirOperation nest = pbcCopyNestOf(store);
  if (!precedes(nest, reader))
    return false;
  MlirAffineMap map = mlirAffineMapAttrGetValue(mlirOperationGetAttributeByName(store, pbcStr("map")));
  PbcIvValues b = {.n = 0};
  for (intptr_t r = 0; r < mlirAffineMapGetNumResults(map); ++r) {
    MlirAffineExpr e = mlirAffineMapGetResult(map, r);
    if (!mlirAffineExprIsADim(e) || b.n == PBC_MAX_BAND)
      return false;
    MlirValue iv = mlirOperationGetOperand(store, 2 + mlirAffineDimExprGetPosition(e));
    if (!mlirValueIsABlockArgument(iv))
      return false;
    MlirOperation loop = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(iv));
    if (!pbcOpIsA(loop, "affine.for") || pbcLoopStep(loop) != 1 ||
        pbcLoopUpperFromZero(loop) <= idx[r] || idx[r] < 0)
      return false;
    long long bound;
    if (pbcEvalIndex(iv, &b, &bound)) { /* R[i, i]: only the diagonal written */
      if (bound != idx[r])
        return false;
      continue;
    }
    b.iv[b.n] = iv;
    b.value[b.n++] = idx[r];
  }
  /* Every loop of the nest bound: the store writes idx exactly once. */
  for (MlirOperation p = mlirOperationGetParentOperation(store);;
       p = mlirOperationGetParentOperation(p)) {
    if (!pbcOpIsA(p, "affine.for"))
      return false;
    bool bound = false;
    for (int i = 0; i < b.n; ++i)
      bound |= mlirValueEqual(pbcLoopIv(p), b.iv[i]);
    if (!bound)
      return false;
    if (mlirOperationEqual(p, nest))
      break;
  }
  MlirValue stored = mlirOperationGetOperand(store, 0);
  if (!mlirValueIsAOpResult(stored))
    return false;
  MlirOperation load = mlirOpResultGetOwner(stored);
  long long src[PBC_MAX_RANK];
  return pbcOpIsA(load, "affine.load") && evalSubscripts(load, 0, &b, src) &&
         resolve(nest, mlirOperationGetOperand(load, 0), src, depth + 1, globals, out);
}

/* The value of memref[idx] as `reader` sees it, from a constant global or
 * a copy of one. */
static bool resolve(MlirOperation reader, MlirValue memref, const long long *idx, int depth,
                    MlirSymbolTable globals, MlirAttribute *out) {
  if (depth > kMaxDepth || !mlirValueIsAOpResult(memref))
    return false;
  MlirOperation def = mlirOpResultGetOwner(memref);
  if (pbcOpIsA(def, "memref.alloc")) {
    MlirOperation store = pbcCopyBufferStore(memref);
    return !mlirOperationIsNull(store) && resolveCopy(reader, store, idx, depth, globals, out);
  }
  if (!pbcOpIsA(def, "memref.get_global"))
    return false;
  MlirAttribute name = mlirOperationGetAttributeByName(def, pbcStr("name"));
  if (!mlirAttributeIsAFlatSymbolRef(name))
    return false;
  MlirOperation global = mlirSymbolTableLookup(globals, mlirFlatSymbolRefAttrGetValue(name));
  if (mlirOperationIsNull(global) || !pbcOpHasAttr(global, "constant"))
    return false;
  MlirAttribute init = mlirOperationGetAttributeByName(global, pbcStr("initial_value"));
  intptr_t rank = mlirShapedTypeGetRank(mlirValueGetType(memref));
  if (mlirAttributeIsNull(init) || !mlirAttributeIsADenseElements(init) || rank > PBC_MAX_RANK)
    return false;
  uint64_t at[PBC_MAX_RANK];
  for (intptr_t d = 0; d < rank; ++d) {
    if (idx[d] < 0)
      return false;
    at[d] = (uint64_t)idx[d];
  }
  if (!mlirElementsAttrIsValidIndex(init, rank, at))
    return false;
  *out = mlirElementsAttrGetValue(init, rank, at);
  return true;
}

MlirSymbolTable pbcModuleGlobals(MlirOperation func) {
  MlirOperation module = mlirOperationGetParentOperation(func);
  return mlirOperationIsNull(module) ? (MlirSymbolTable){NULL} : mlirSymbolTableCreate(module);
}

bool pbcLoadConstantValue(MlirOperation load, const PbcIvValues *ivs, MlirSymbolTable globals,
                          MlirAttribute *value) {
  MlirValue memref = mlirOperationGetOperand(load, 0);
  long long idx[PBC_MAX_RANK];
  if (!evalSubscripts(load, 0, ivs, idx))
    return false;
  MlirType type = mlirValueGetType(mlirOperationGetResult(load, 0));
  int rank = (int)mlirShapedTypeGetRank(mlirValueGetType(memref));
  if (!mlirTypeIsAVector(type))
    return resolve(load, memref, idx, 0, globals, value);
  /* A vector load reads consecutive elements of the last dimension. */
  long long lanes = mlirShapedTypeGetDimSize(type, 0);
  if (mlirShapedTypeGetRank(type) != 1 || lanes > kMaxLanes || rank == 0)
    return false;
  MlirAttribute elems[kMaxLanes];
  long long at[PBC_MAX_RANK];
  for (int d = 0; d < rank; ++d)
    at[d] = idx[d];
  for (long long l = 0; l < lanes; ++l) {
    at[rank - 1] = idx[rank - 1] + l;
    if (!resolve(load, memref, at, 0, globals, &elems[l]))
      return false;
  }
  *value = mlirDenseElementsAttrGet(type, (intptr_t)lanes, elems);
  return true;
}
