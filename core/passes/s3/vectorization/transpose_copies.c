/* pbc-transpose-copies{vector-bits}: copies that transpose, in registers.
 * A copy nest (marked pbc.copy) whose innermost two loops read along one
 * loop and write along the other (a transposed input, a packed tile of a
 * GEMM's B stored as N x K) moves one element per iteration, and either its
 * reads or its writes jump a row at every step: the vectorizer can make
 * only one side contiguous. Here such a pair of loops walks whole blocks of
 * lanes x lanes instead: per block, `lanes` vector loads along the input's
 * rows, a transpose in registers (log2(lanes) rounds of vector.shuffle,
 * each swapping the off-diagonal halves of 2b x 2b blocks: bits b of row
 * and lane exchanged), and `lanes` vector stores along the copy's rows.
 * Every cache line is read and written whole, once.
 *
 * Applies where both loops have unit steps and constant trips of at least
 * the lanes; the partial blocks' strips stay element by element. The nest
 * keeps its loop order (the input's row blocks outermost streams the input
 * from a few pages at a time). Runs after pbc-pack, before pbc-vectorize,
 * which leaves the blocked nests alone. */
#include <stdlib.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/marks.h"
#include "pbc/op_list.h"
#include "passes/passes.h"

typedef struct {
  int vectorBits;
} State;

enum { kMaxLanes = 16, kMaxOperands = 2 + PBC_MAX_TERMS };


/* The side of the square blocks a copy of `elem` is transposed in, in
 * vectors of vectorBits: a power of two, at most 16 (16 vectors plus the
 * shuffles' temporaries fit 32 registers; 8 fit 16); 0 for elements
 * narrower than a byte (vectors of i1 are bit-packed, buffers are not), or
 * not ints or floats. */
static int transposeLanes(int vectorBits, MlirType elem) {
  int bits = mlirTypeIsAFloat(elem)     ? (int)mlirFloatTypeGetWidth(elem)
             : mlirTypeIsAInteger(elem) ? (int)mlirIntegerTypeGetWidth(elem)
                                        : 0;
  int lanes = bits >= 8 ? vectorBits / bits : 0;
  lanes = lanes > kMaxLanes ? kMaxLanes : lanes;
  return lanes >= 2 && (lanes & (lanes - 1)) == 0 ? lanes : 0;
}

/* The only op of `loop`'s body besides its terminator, or null. */
static MlirOperation onlyOp(MlirOperation loop) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(loop, 0));
  MlirOperation first = mlirBlockGetFirstOperation(body);
  MlirOperation next = mlirOperationGetNextInBlock(first);
  bool single =
      !mlirOperationIsNull(next) && mlirOperationIsNull(mlirOperationGetNextInBlock(next));
  return single ? first : (MlirOperation){NULL};
}

/* A copy of (vector) access `op` at the same subscripts, each shifted along
 * `iv` by `shift` steps: subscript d + coeff(d, iv) * shift. */
static MlirOperation shiftedAccess(MlirOperation at, MlirOperation op, const PbcAccess *a,
                                   MlirValue iv, int shift, const char *name, MlirValue value,
                                   MlirType result) {
  MlirValue operands[kMaxOperands];
  intptr_t n = mlirOperationGetNumOperands(op);
  for (intptr_t k = 0; k < n; ++k)
    operands[k] = mlirOperationGetOperand(op, k);
  if (!mlirValueIsNull(value))
    operands[0] = value;
  MlirNamedAttribute map =
      mlirNamedAttributeGet(mlirIdentifierGet(mlirOperationGetContext(op), pbcStr("map")),
                            mlirOperationGetInherentAttributeByName(op, pbcStr("map")));
  MlirOperation access = pbcBuildOp(at, name, (int)n, operands, result, 1, &map);
  for (int d = 0; d < a->rank; ++d)
    pbcAccessOffsetSubscript(access, d, pbcLinearCoeff(&a->subscripts[d], iv) * shift);
  return access;
}

/* The single-result bound map `name` of an affine.for plus `delta`. */
static bool shiftBound(MlirOperation loop, const char *name, long long delta) {
  MlirAffineMap map =
      mlirAffineMapAttrGetValue(mlirOperationGetInherentAttributeByName(loop, pbcStr(name)));
  if (mlirAffineMapGetNumResults(map) != 1)
    return false;
  MlirContext ctx = mlirOperationGetContext(loop);
  MlirAffineExpr e =
      mlirAffineAddExprGet(mlirAffineMapGetResult(map, 0), mlirAffineConstantExprGet(ctx, delta));
  map = mlirAffineMapGet(ctx, mlirAffineMapGetNumDims(map), mlirAffineMapGetNumSymbols(map), 1, &e);
  mlirOperationSetInherentAttributeByName(loop, pbcStr(name), mlirAffineMapAttrGet(map));
  return true;
}

/* The last `rest` of `loop`'s `trip` iterations (step 1) as a clone of
 * `nest` (an ancestor of loop, or loop itself) after it, where loop runs
 * only them; loop itself stops before them. False (nothing changed) if a
 * bound is a min or max. */
static bool splitOff(MlirOperation nest, MlirOperation loop, long long trip, long long rest) {
  if (!shiftBound(loop, "upperBoundMap", 0) || !shiftBound(loop, "lowerBoundMap", 0))
    return false;
  MlirOperation clone = mlirOperationClone(nest);
  mlirBlockInsertOwnedOperationAfter(mlirOperationGetBlock(nest), nest, clone);
  shiftBound(loop, "upperBoundMap", -rest);
  /* The clone's copy of loop: at the same depth below the clone. */
  MlirOperation cloned = clone;
  if (!mlirOperationEqual(nest, loop))
    cloned = onlyOp(clone);
  shiftBound(cloned, "lowerBoundMap", trip - rest);
  return true;
}

/* `inner`'s body (a scalar load and the store of its value) as blocks of
 * lanes x lanes, if it transposes along `outer` and `inner`. Iterations
 * past the last whole block of either loop (the strips of partial blocks)
 * stay element by element, in clones of the pair after it. */
static bool blockPair(MlirOperation outer, MlirOperation inner, int vectorBits) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(inner, 0));
  MlirOperation load = mlirBlockGetFirstOperation(body);
  MlirOperation store = mlirOperationGetNextInBlock(load);
  PbcAccess ld, sto;
  if (!pbcOpIsA(load, "affine.load") || !pbcOpIsA(store, "affine.store") ||
      !pbcOpIsA(mlirOperationGetNextInBlock(store), "affine.yield") || !pbcAccessGet(load, &ld) ||
      !pbcAccessGet(store, &sto) ||
      !mlirValueEqual(mlirOperationGetOperand(store, 0), mlirOperationGetResult(load, 0)) ||
      mlirOperationGetNumOperands(store) > kMaxOperands ||
      mlirOperationGetNumOperands(load) > kMaxOperands)
    return false;
  /* The loop the reads walk contiguously, and the one the writes do. */
  MlirOperation alongLoad, alongStore;
  if (pbcAccessStrideAlong(&ld, inner) == PBC_STRIDE_CONTIGUOUS &&
      pbcAccessStrideAlong(&sto, outer) == PBC_STRIDE_CONTIGUOUS) {
    alongLoad = inner;
    alongStore = outer;
  } else if (pbcAccessStrideAlong(&ld, outer) == PBC_STRIDE_CONTIGUOUS &&
             pbcAccessStrideAlong(&sto, inner) == PBC_STRIDE_CONTIGUOUS) {
    alongLoad = outer;
    alongStore = inner;
  } else {
    return false;
  }
  if (pbcAccessStrideAlong(&ld, alongStore) != PBC_STRIDE_OTHER ||
      pbcAccessStrideAlong(&sto, alongLoad) != PBC_STRIDE_OTHER)
    return false;
  MlirType elem = mlirShapedTypeGetElementType(mlirValueGetType(ld.memref));
  int lanes = transposeLanes(vectorBits, elem);
  MlirOperation loops[2] = {outer, inner};
  long long trip[2];
  for (int l = 0; l < 2; ++l) {
    trip[l] = pbcExtAffineConstantTripCount(loops[l]);
    if (lanes == 0 || pbcLoopStep(loops[l]) != 1 || trip[l] < lanes)
      return false;
  }
  /* The bottom strip (outer's partial block, all of inner), then the right
   * one (outer's whole blocks, inner's partial block). */
  if ((trip[0] % lanes && !splitOff(outer, outer, trip[0], trip[0] % lanes)) ||
      (trip[1] % lanes && !splitOff(outer, inner, trip[1], trip[1] % lanes)))
    return false;
  MlirContext ctx = mlirOperationGetContext(load);
  MlirType vt = mlirVectorTypeGet(1, (int64_t[]){lanes}, elem);
  MlirValue loadIv = pbcLoopIv(alongLoad), storeIv = pbcLoopIv(alongStore);
  MlirValue v[kMaxLanes];
  for (int r = 0; r < lanes; ++r)
    v[r] = mlirOperationGetResult(
        shiftedAccess(load, load, &ld, storeIv, r, "affine.vector_load", (MlirValue){NULL}, vt), 0);
  for (int b = lanes / 2; b >= 1; b /= 2) {
    int64_t lowMask[kMaxLanes], highMask[kMaxLanes];
    for (int c = 0; c < lanes; ++c) {
      lowMask[c] = c & b ? lanes + c - b : c;
      highMask[c] = c & b ? lanes + c : c + b;
    }
    MlirNamedAttribute masks[2] = {
        mlirNamedAttributeGet(mlirIdentifierGet(ctx, pbcStr("mask")),
                              mlirDenseI64ArrayGet(ctx, lanes, lowMask)),
        mlirNamedAttributeGet(mlirIdentifierGet(ctx, pbcStr("mask")),
                              mlirDenseI64ArrayGet(ctx, lanes, highMask))};
    for (int r = 0; r < lanes; ++r) {
      if (r & b)
        continue;
      MlirValue pair[2] = {v[r], v[r + b]};
      v[r] =
          mlirOperationGetResult(pbcBuildOp(load, "vector.shuffle", 2, pair, vt, 1, &masks[0]), 0);
      v[r + b] =
          mlirOperationGetResult(pbcBuildOp(load, "vector.shuffle", 2, pair, vt, 1, &masks[1]), 0);
    }
  }
  for (int c = 0; c < lanes; ++c)
    shiftedAccess(load, store, &sto, loadIv, c, "affine.vector_store", v[c], (MlirType){NULL});
  mlirOperationDestroy(store);
  mlirOperationDestroy(load);
  pbcLoopSetStep(outer, lanes);
  pbcLoopSetStep(inner, lanes);
  return true;
}

static MlirWalkResult findCopies(MlirOperation op, void *data) {
  if (pbcOpIsA(op, "affine.for") && pbcOpHasAttr(op, PBC_MARK_COPY)) {
    pbcOpListPush(data, op);
    return MlirWalkResultSkip;
  }
  return MlirWalkResultAdvance;
}

static bool run(MlirOperation func, void *state) {
  const State *st = state;
  PbcOpList copies = {0};
  mlirOperationWalk(func, findCopies, &copies, MlirWalkPreOrder);
  for (int i = 0; i < copies.n; ++i) {
    /* The innermost two loops of the nest's perfect band. */
    MlirOperation outer = {NULL}, inner = copies.ops[i], next;
    while (!mlirOperationIsNull(next = onlyOp(inner)) && pbcOpIsA(next, "affine.for")) {
      outer = inner;
      inner = next;
    }
    if (!mlirOperationIsNull(outer))
      blockPair(outer, inner, st->vectorBits);
  }
  pbcOpListDestroy(&copies);
  return true;
}

PBC_C_PASS_WITH_VECTOR_BITS(pbcTransposeCopiesPass, "pbc-transpose-copies", "func.func",
                            "Transposing copy nests as register-blocked transposes", run);
