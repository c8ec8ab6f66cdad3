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
 * Every cache line is read and written whole, once (64x4096x1024 with B as
 * N x K: 16 ms for a scalar transposed copy, 2.5 with B as K x N).
 *
 * Applies where both loops have constant trips that are multiples of the
 * lanes (callers split off partial blocks; pbc-pad-gemm pads a GEMM's N)
 * and unit steps; the nest keeps its loop order (the input's row blocks
 * outermost streams the input from a few pages at a time). Runs after
 * pbc-pack, before pbc-vectorize, which leaves the blocked nests alone. */
#include <stdlib.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/passes.h"
#include "pbc/transpose_input.h"

typedef struct {
  int vectorBits;
} State;

enum { kMaxNests = 1024, kMaxLanes = 16 };

static MlirStringRef str(const char *s) { return mlirStringRefCreateFromCString(s); }

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
  MlirValue operands[2 * PBC_MAX_TERMS + 2];
  intptr_t n = mlirOperationGetNumOperands(op);
  if (n > 2 * PBC_MAX_TERMS + 2)
    n = 2 * PBC_MAX_TERMS + 2;
  for (intptr_t k = 0; k < n; ++k)
    operands[k] = mlirOperationGetOperand(op, k);
  if (!mlirValueIsNull(value))
    operands[0] = value;
  MlirNamedAttribute map =
      mlirNamedAttributeGet(mlirIdentifierGet(mlirOperationGetContext(op), str("map")),
                            mlirOperationGetInherentAttributeByName(op, str("map")));
  MlirOperation access = pbcBuildOp(at, name, (int)n, operands, result, 1, &map);
  for (int d = 0; d < a->rank; ++d)
    pbcAccessOffsetSubscript(access, d, pbcLinearCoeff(&a->subscripts[d], iv) * shift);
  return access;
}

/* `inner`'s body (a scalar load and the store of its value) as blocks of
 * lanes x lanes, if it transposes along `outer` and `inner`. */
static bool blockPair(MlirOperation outer, MlirOperation inner, int vectorBits) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(inner, 0));
  MlirOperation load = mlirBlockGetFirstOperation(body);
  MlirOperation store = mlirOperationGetNextInBlock(load);
  PbcAccess ld, sto;
  if (!pbcOpIsA(load, "affine.load") || !pbcOpIsA(store, "affine.store") ||
      !pbcOpIsA(mlirOperationGetNextInBlock(store), "affine.yield") || !pbcAccessGet(load, &ld) ||
      !pbcAccessGet(store, &sto) ||
      !mlirValueEqual(mlirOperationGetOperand(store, 0), mlirOperationGetResult(load, 0)))
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
  int lanes = pbcTransposeLanes(vectorBits, elem);
  MlirOperation loops[2] = {outer, inner};
  for (int l = 0; l < 2; ++l) {
    long long trip = pbcExtAffineConstantTripCount(loops[l]);
    if (lanes == 0 || pbcLoopStep(loops[l]) != 1 || trip <= 0 || trip % lanes)
      return false;
  }
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
        mlirNamedAttributeGet(mlirIdentifierGet(ctx, str("mask")),
                              mlirDenseI64ArrayGet(ctx, lanes, lowMask)),
        mlirNamedAttributeGet(mlirIdentifierGet(ctx, str("mask")),
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

typedef struct {
  MlirOperation nests[kMaxNests];
  int n;
} Nests;

static MlirWalkResult findCopies(MlirOperation op, void *data) {
  Nests *c = data;
  if (pbcOpIsA(op, "affine.for") && pbcOpHasAttr(op, "pbc.copy")) {
    if (c->n < kMaxNests)
      c->nests[c->n++] = op;
    return MlirWalkResultSkip;
  }
  return MlirWalkResultAdvance;
}

static bool run(MlirOperation func, void *state) {
  const State *st = state;
  Nests *c = calloc(1, sizeof(Nests));
  mlirOperationWalk(func, findCopies, c, MlirWalkPreOrder);
  for (int i = 0; i < c->n; ++i) {
    /* The innermost two loops of the nest's perfect band. */
    MlirOperation outer = {NULL}, inner = c->nests[i], next;
    while (!mlirOperationIsNull(next = onlyOp(inner)) && pbcOpIsA(next, "affine.for")) {
      outer = inner;
      inner = next;
    }
    if (!mlirOperationIsNull(outer))
      blockPair(outer, inner, st->vectorBits);
  }
  free(c);
  return true;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcTransposeCopiesPass = {
    "pbc-transpose-copies",
    "func.func",
    "Transposing copy nests as register-blocked transposes",
    run,
    sizeof(State),
    createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  static const char *const known[] = {"vector-bits", NULL};
  if (!pbcPassOptionsCheckCounts(options, known, err, errLen))
    return (MlirPass){NULL};
  State st = {(int)pbcPassOptionInt(options, "vector-bits", 256)};
  return pbcCPassCreate(&pbcTransposeCopiesPass, &st);
}
