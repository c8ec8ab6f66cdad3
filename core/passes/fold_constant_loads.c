/* pbc-fold-constant-loads: a read at constant subscripts of a value known at
 * compile time becomes that constant. The values are those of a constant
 * global (a filter given as arith.constant), read directly or through the
 * copies pbc makes of it (pbc-interleave's per-channel replicas: a
 * pbc.copy nest that writes each element once, R[i] = G[f(i)]).
 *
 * Why: pbc-hoist-invariant-loads keeps a stencil's filter vectors in
 * registers, but read from a replica they are opaque to LLVM. The fused
 * blur holds 30 of them (5 taps x 3 phases, two stencils) and spilled every
 * iteration; as constants they are 3 distinct splats (1/16, 1/4, 3/8), which
 * LLVM keeps in 3 registers, and the fused loop no longer spills. Blur
 * 4096^2 (tools/bench/bench_blur, quiet spells, runs back to back): 8.9 ->
 * 6.2 ms; in busy spells, when both run at the copy's memory floor,
 * 9.3 -> 8.9 ms. A replica left without readers is erased with its copy
 * nest. */
#include <stdlib.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/passes.h"

enum { kMaxLoads = 4096, kMaxLanes = 64, kMaxDepth = 4 };

static MlirStringRef str(const char *s) { return mlirStringRefCreateFromCString(s); }

/* Values of some loop ivs (a copy nest's, at one element). */
typedef struct {
  MlirValue iv[PBC_MAX_RANK];
  long long value[PBC_MAX_RANK];
  int n;
} Binding;

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

static bool evalMap(MlirAffineMap map, MlirOperation op, intptr_t firstOperand, const Binding *b,
                    long long *results);

/* The constant an index value has (given the ivs in b). */
static bool evalValue(MlirValue v, const Binding *b, long long *out) {
  for (int i = 0; i < b->n; ++i)
    if (mlirValueEqual(v, b->iv[i])) {
      *out = b->value[i];
      return true;
    }
  if (!mlirValueIsAOpResult(v))
    return false;
  MlirOperation def = mlirOpResultGetOwner(v);
  if (pbcOpIsA(def, "arith.constant")) {
    MlirAttribute a = mlirOperationGetAttributeByName(def, str("value"));
    if (!mlirAttributeIsAInteger(a))
      return false;
    *out = mlirIntegerAttrGetValueInt(a);
    return true;
  }
  if (pbcOpIsA(def, "affine.apply")) {
    MlirAffineMap map = mlirAffineMapAttrGetValue(mlirOperationGetAttributeByName(def, str("map")));
    return mlirAffineMapGetNumResults(map) == 1 && evalMap(map, def, 0, b, out);
  }
  return false;
}

/* All results of `map` over op's operands from `firstOperand` on. */
static bool evalMap(MlirAffineMap map, MlirOperation op, intptr_t firstOperand, const Binding *b,
                    long long *results) {
  intptr_t nOps = mlirAffineMapGetNumDims(map) + mlirAffineMapGetNumSymbols(map);
  if (nOps > PBC_MAX_TERMS || mlirOperationGetNumOperands(op) != firstOperand + nOps)
    return false;
  long long operands[PBC_MAX_TERMS];
  for (intptr_t i = 0; i < nOps; ++i)
    if (!evalValue(mlirOperationGetOperand(op, firstOperand + i), b, &operands[i]))
      return false;
  for (intptr_t r = 0; r < mlirAffineMapGetNumResults(map); ++r)
    if (!evalExpr(mlirAffineMapGetResult(map, r), operands, (int)mlirAffineMapGetNumDims(map),
                  &results[r]))
      return false;
  return true;
}

/* The subscripts of an affine load or store (memref operand `memrefPos`). */
static bool evalSubscripts(MlirOperation access, intptr_t memrefPos, const Binding *b,
                           long long *idx) {
  MlirAffineMap map =
      mlirAffineMapAttrGetValue(mlirOperationGetAttributeByName(access, str("map")));
  return mlirAffineMapGetNumResults(map) <= PBC_MAX_RANK &&
         evalMap(map, access, memrefPos + 1, b, idx);
}

/* True if `nest` comes before `op`, or before an ancestor of it, in its block. */
static bool precedes(MlirOperation nest, MlirOperation op) {
  MlirBlock block = mlirOperationGetBlock(nest);
  while (!mlirOperationIsNull(op) && !mlirBlockEqual(mlirOperationGetBlock(op), block))
    op = mlirOperationGetParentOperation(op);
  if (mlirOperationIsNull(op))
    return false;
  for (MlirOperation o = mlirOperationGetNextInBlock(nest); !mlirOperationIsNull(o);
       o = mlirOperationGetNextInBlock(o))
    if (mlirOperationEqual(o, op))
      return true;
  return false;
}

/* The outermost pbc.copy loop around `op`, or null. */
static MlirOperation copyNestOf(MlirOperation op) {
  MlirOperation nest = {NULL};
  for (MlirOperation p = mlirOperationGetParentOperation(op); !mlirOperationIsNull(p);
       p = mlirOperationGetParentOperation(p))
    if (pbcOpHasAttr(p, "pbc.copy"))
      nest = p;
  return nest;
}

/* The one store into a fresh buffer, if its other users only read it or free
 * it and that store sits in a pbc.copy nest. */
static MlirOperation onlyCopyStore(MlirValue buffer) {
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
  if (mlirOperationIsNull(store) || mlirOperationIsNull(copyNestOf(store)))
    return (MlirOperation){NULL};
  return store;
}

static bool resolve(MlirOperation reader, MlirValue memref, const long long *idx, int depth,
                    MlirSymbolTable globals, MlirAttribute *out);

/* The element a copy store wrote at idx: its subscripts must be the nest's
 * ivs, one per dimension, each loop 0..ub step 1 with idx inside. */
static bool resolveCopy(MlirOperation reader, MlirOperation store, const long long *idx, int depth,
                        MlirSymbolTable globals, MlirAttribute *out) {
  MlirOperation nest = copyNestOf(store);
  if (!precedes(nest, reader))
    return false;
  MlirAffineMap map = mlirAffineMapAttrGetValue(mlirOperationGetAttributeByName(store, str("map")));
  Binding b = {.n = 0};
  for (intptr_t r = 0; r < mlirAffineMapGetNumResults(map); ++r) {
    MlirAffineExpr e = mlirAffineMapGetResult(map, r);
    if (!mlirAffineExprIsADim(e) || b.n == PBC_MAX_RANK)
      return false;
    MlirValue iv = mlirOperationGetOperand(store, 2 + mlirAffineDimExprGetPosition(e));
    if (!mlirValueIsABlockArgument(iv))
      return false;
    MlirOperation loop = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(iv));
    if (!pbcOpIsA(loop, "affine.for") || pbcLoopStep(loop) != 1 ||
        pbcLoopUpperFromZero(loop) <= idx[r] || idx[r] < 0)
      return false;
    long long bound;
    if (evalValue(iv, &b, &bound)) { /* R[i, i]: only the diagonal written */
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
    MlirOperation store = onlyCopyStore(memref);
    return !mlirOperationIsNull(store) && resolveCopy(reader, store, idx, depth, globals, out);
  }
  if (!pbcOpIsA(def, "memref.get_global"))
    return false;
  MlirAttribute name = mlirOperationGetAttributeByName(def, str("name"));
  if (!mlirAttributeIsAFlatSymbolRef(name))
    return false;
  MlirOperation global = mlirSymbolTableLookup(globals, mlirFlatSymbolRefAttrGetValue(name));
  if (mlirOperationIsNull(global) || !pbcOpHasAttr(global, "constant"))
    return false;
  MlirAttribute init = mlirOperationGetAttributeByName(global, str("initial_value"));
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

/* Replaces a load at constant subscripts with its value; true if folded. */
static bool fold(MlirOperation load, MlirSymbolTable globals) {
  MlirValue memref = mlirOperationGetOperand(load, 0);
  long long idx[PBC_MAX_RANK];
  Binding none = {.n = 0};
  if (!evalSubscripts(load, 0, &none, idx))
    return false;
  MlirType type = mlirValueGetType(mlirOperationGetResult(load, 0));
  int rank = (int)mlirShapedTypeGetRank(mlirValueGetType(memref));
  MlirAttribute value;
  if (mlirTypeIsAVector(type)) {
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
    value = mlirDenseElementsAttrGet(type, (intptr_t)lanes, elems);
  } else if (!resolve(load, memref, idx, 0, globals, &value)) {
    return false;
  }
  MlirNamedAttribute attr =
      mlirNamedAttributeGet(mlirIdentifierGet(mlirOperationGetContext(load), str("value")), value);
  MlirOperation c = pbcBuildOp(load, "arith.constant", 0, NULL, type, 1, &attr);
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(load, 0), mlirOperationGetResult(c, 0));
  mlirOperationDestroy(load);
  return true;
}

/* Loads whose subscripts are all constant (no operands, or constant ones). */
typedef struct {
  MlirOperation ops[kMaxLoads];
  int n;
} Loads;

static MlirWalkResult gather(MlirOperation op, void *data) {
  Loads *l = data;
  if ((pbcOpIsA(op, "affine.load") || pbcOpIsA(op, "affine.vector_load")) && l->n < kMaxLoads)
    l->ops[l->n++] = op;
  return MlirWalkResultAdvance;
}

/* A copy buffer nobody reads any more: its nest, frees and allocation go. */
static void eraseIfUnread(MlirValue buffer) {
  MlirOperation store = onlyCopyStore(buffer);
  if (mlirOperationIsNull(store))
    return;
  for (MlirOpOperand u = mlirValueGetFirstUse(buffer); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u))
    if (!pbcOpIsA(mlirOpOperandGetOwner(u), "memref.dealloc") &&
        !mlirOperationEqual(mlirOpOperandGetOwner(u), store))
      return;
  mlirOperationDestroy(copyNestOf(store));
  pbcEraseWithUsers(mlirOpResultGetOwner(buffer));
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  MlirOperation module = mlirOperationGetParentOperation(func);
  MlirSymbolTable globals =
      mlirOperationIsNull(module) ? (MlirSymbolTable){NULL} : mlirSymbolTableCreate(module);
  if (mlirSymbolTableIsNull(globals))
    return true;
  Loads *loads = malloc(sizeof(Loads));
  loads->n = 0;
  mlirOperationWalk(func, gather, loads, MlirWalkPreOrder);
  MlirValue buffers[kMaxLoads];
  int nBuffers = 0;
  for (int i = 0; i < loads->n; ++i) {
    MlirValue memref = mlirOperationGetOperand(loads->ops[i], 0);
    if (!fold(loads->ops[i], globals) || !mlirValueIsAOpResult(memref) ||
        !pbcOpIsA(mlirOpResultGetOwner(memref), "memref.alloc"))
      continue;
    bool seen = false;
    for (int k = 0; k < nBuffers; ++k)
      seen |= mlirValueEqual(buffers[k], memref);
    if (!seen)
      buffers[nBuffers++] = memref;
  }
  for (int k = 0; k < nBuffers; ++k)
    eraseIfUnread(buffers[k]);
  free(loads);
  mlirSymbolTableDestroy(globals);
  return true;
}

static const PbcCPassSpec kSpec = {"pbc-fold-constant-loads", "func.func",
                                   "Fold reads of compile-time constants at constant subscripts",
                                   run, 0};

MlirPass pbcCreateFoldConstantLoadsPass(const char *options, char *err, size_t errLen) {
  static const char *const known[] = {NULL};
  if (!pbcPassOptionsCheck(options, known, err, errLen))
    return (MlirPass){NULL};
  return pbcCPassCreate(&kSpec, NULL);
}
