/* pbc-vectorize: widens a loop by the target's vector width, using the
 * contiguity analysis (pbc/affine_access.h). Every op under the loop that
 * depends on its iv becomes a vector op: contiguous loads/stores become
 * affine.vector_load/store, arith/math ops get vector types, invariant
 * operands are broadcast. Nested loops (e.g. a matmul's k loop inside its
 * vectorized j loop: outer-loop vectorization) are kept if their bounds don't
 * depend on the loop.
 * Policy (C, here): loops marked `pbc.vectorize` by the tiler, and the
 * innermost loop of every other nest, if legal, with a constant trip count
 * that is a multiple of the lanes (vector-bits / widest element, halved
 * until they divide the trip count: see pbcVectorLanes); an innermost loop
 * from 0 longer than the full lanes that they do not divide runs them up
 * to their last multiple and its tail in a copy (tryVectorize); where the
 * innermost loop can't be widened, an enclosing one that can
 * (vectorizeEnclosing). */
#include <stdlib.h>
#include <string.h>

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

#define MAX_OPS 4096

typedef struct {
  MlirOperation loop;
  MlirOperation ops[MAX_OPS]; /* ops under the loop that depend on its iv */
  int nOps;
  int maxBits;
  bool ok;
  PbcAccess accesses[256]; /* every access under the loop */
  int nAccesses;
} Plan;


static bool inPlan(const Plan *p, MlirOperation op) {
  for (int i = 0; i < p->nOps; ++i)
    if (mlirOperationEqual(p->ops[i], op))
      return true;
  return false;
}

static bool valueVaries(const Plan *p, MlirValue v) {
  if (mlirValueEqual(v, pbcLoopIv(p->loop)))
    return true;
  return mlirValueIsAOpResult(v) && inPlan(p, mlirOpResultGetOwner(v));
}

static bool isElementwise(MlirOperation op) {
  char name[64];
  pbcOpName(op, name, sizeof(name));
  if (strncmp(name, "arith.", 6) && strncmp(name, "math.", 5))
    return false;
  if (mlirOperationGetNumRegions(op) != 0 || mlirOperationGetNumResults(op) != 1)
    return false;
  MlirType t = mlirValueGetType(mlirOperationGetResult(op, 0));
  return mlirTypeIsAFloat(t) || (mlirTypeIsAInteger(t) && !mlirTypeIsAIndex(t));
}

static void analyze(Plan *p, MlirBlock block);

/* True if every use of v is a subscript of an affine load or store whose
 * subscripts are linear: the access analysis then sees through v. */
static bool onlyLinearSubscriptsUse(MlirValue v) {
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    unsigned at = mlirOpOperandGetOperandNumber(u);
    PbcAccess acc;
    if (!(pbcOpIsA(user, "affine.load") && at >= 1) && !(pbcOpIsA(user, "affine.store") && at >= 2))
      return false;
    if (!pbcAccessGet(user, &acc))
      return false;
  }
  return true;
}

static void analyzeOp(Plan *p, MlirOperation op) {
  if (!p->ok)
    return;
  if (pbcOpIsA(op, "affine.yield")) {
    if (mlirOperationGetNumOperands(op) != 0)
      p->ok = false;
    return;
  }
  if (pbcOpIsA(op, "affine.for")) {
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i)
      if (valueVaries(p, mlirOperationGetOperand(op, i)))
        p->ok = false; /* bounds move with the loop, or iter_args */
    if (mlirOperationGetNumResults(op) != 0)
      p->ok = false;
    analyze(p, pbcLoopBody(op));
    return;
  }
  if (pbcOpIsA(op, "affine.apply")) {
    /* Index arithmetic (a split nest's origin + iv) stays scalar, as the
     * iv does: fine where only linear subscripts use it (the accesses'
     * strides then account for it); else the op is not vectorizable. */
    if (!onlyLinearSubscriptsUse(mlirOperationGetResult(op, 0)))
      for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i)
        if (valueVaries(p, mlirOperationGetOperand(op, i)))
          p->ok = false;
    return;
  }
  PbcAccess acc;
  if (pbcAccessGet(op, &acc)) {
    if (acc.lanes) {
      p->ok = false; /* already vector */
      return;
    }
    /* Only memrefs whose last dimension is contiguous. */
    MlirType mt = mlirValueGetType(acc.memref);
    if (!pbcMemrefLastDimContiguous(mt))
      p->ok = false;
    if (p->nAccesses == 256)
      p->ok = false;
    else
      p->accesses[p->nAccesses++] = acc;
    int bits = pbcElementBits(mt);
    if (bits > p->maxBits)
      p->maxBits = bits;
    PbcStride s = pbcAccessStrideAlong(&acc, p->loop);
    if (s == PBC_STRIDE_OTHER || (acc.isWrite && s == PBC_STRIDE_INVARIANT)) {
      p->ok = false;
      return;
    }
    if (acc.isWrite && !valueVaries(p, mlirOperationGetOperand(op, 0)) &&
        s != PBC_STRIDE_CONTIGUOUS)
      p->ok = false;
    /* Buffers of i1 hold a byte per element; a vector of i1 is bit-packed
     * (a vector<16xi1> load reads 2 bytes): such elements stay scalar. */
    if (bits < 8 && s == PBC_STRIDE_CONTIGUOUS)
      p->ok = false;
    if (s == PBC_STRIDE_CONTIGUOUS || acc.isWrite) {
      if (p->nOps == MAX_OPS)
        p->ok = false;
      else
        p->ops[p->nOps++] = op;
    }
    return;
  }
  bool varies = false;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i)
    varies |= valueVaries(p, mlirOperationGetOperand(op, i));
  if (!varies) {
    /* Invariant, but nothing with effects or regions we can't reason about. */
    if (mlirOperationGetNumRegions(op) != 0)
      p->ok = false;
    return;
  }
  if (!isElementwise(op) || p->nOps == MAX_OPS) {
    p->ok = false;
    return;
  }
  int bits = pbcElementBits(mlirValueGetType(mlirOperationGetResult(op, 0)));
  if (bits > p->maxBits)
    p->maxBits = bits;
  p->ops[p->nOps++] = op;
}

static void analyze(Plan *p, MlirBlock block) {
  for (MlirOperation op = mlirBlockGetFirstOperation(block); !mlirOperationIsNull(op) && p->ok;
       op = mlirOperationGetNextInBlock(op))
    analyzeOp(p, op);
}

/* True if the accesses differ by a nonzero constant in a subscript the loop
 * doesn't move: they never meet, in any pair of iterations. */
static bool differInFixedDim(const PbcAccess *a, const PbcAccess *b, MlirValue iv) {
  for (int d = 0; d < a->rank && d < b->rank; ++d) {
    if (pbcLinearCoeff(&a->subscripts[d], iv) || pbcLinearCoeff(&b->subscripts[d], iv))
      continue;
    PbcAccess da = *a, db = *b;
    da.rank = db.rank = 1;
    da.subscripts[0] = a->subscripts[d];
    db.subscripts[0] = b->subscripts[d];
    da.lanes = db.lanes = 0;
    if (pbcAccessesDisjoint(&da, &db))
      return true;
  }
  return false;
}

/* Widening reorders accesses across iterations: a memref both read and
 * written under the loop must be accessed at the same element or at provably
 * disjoint ones (no loop-carried dependence through it). */
static bool accessesIndependent(const Plan *p) {
  for (int i = 0; i < p->nAccesses; ++i)
    for (int j = 0; j < p->nAccesses; ++j) {
      const PbcAccess *a = &p->accesses[i], *b = &p->accesses[j];
      if (i == j || !a->isWrite)
        continue;
      if (!mlirValueEqual(a->memref, b->memref)) {
        if (pbcMemrefsMayAlias(a->memref, b->memref))
          return false; /* e.g. a view of the written buffer */
        continue;
      }
      if (pbcAccessStrideAlong(b, p->loop) == PBC_STRIDE_INVARIANT && !b->isWrite)
        return false; /* reads an element some lane writes */
      if (!pbcAccessesSame(a, b) && !differInFixedDim(a, b, pbcLoopIv(p->loop)))
        return false;
    }
  return true;
}

static MlirType vectorOf(MlirType elem, int lanes) {
  int64_t shape[1] = {lanes};
  return mlirVectorTypeGet(1, shape, elem);
}

static MlirOperation create(const char *name, MlirLocation loc, int nOperands,
                            const MlirValue *operands, MlirType *result, MlirAttribute mapAttr) {
  MlirOperationState st = mlirOperationStateGet(pbcStr(name), loc);
  mlirOperationStateAddOperands(&st, nOperands, operands);
  if (result)
    mlirOperationStateAddResults(&st, 1, result);
  if (!mlirAttributeIsNull(mapAttr)) {
    MlirNamedAttribute na = mlirNamedAttributeGet(
        mlirIdentifierGet(mlirAttributeGetContext(mapAttr), pbcStr("map")), mapAttr);
    mlirOperationStateAddAttributes(&st, 1, &na);
  }
  return mlirOperationCreate(&st);
}

typedef struct {
  MlirValue from[MAX_OPS];
  MlirValue to[MAX_OPS];
  int n;
} ValueMap;

static MlirValue lookup(const ValueMap *m, MlirValue v) {
  for (int i = m->n - 1; i >= 0; --i)
    if (mlirValueEqual(m->from[i], v))
      return m->to[i];
  return (MlirValue){NULL};
}

/* The vector form of operand v for an op inserted before `at`. The loop's
 * iv used as a value (a mask's `j > i`) is the vector of its lanes' own
 * ivs, iv + [0, 1, ..., lanes-1]; any other operand not in `m` is
 * invariant and broadcast. */
static MlirValue vectorOperand(ValueMap *m, MlirValue iv, MlirValue v, int lanes,
                               MlirOperation at) {
  MlirValue mapped = lookup(m, v);
  if (!mlirValueIsNull(mapped))
    return mapped;
  MlirLocation loc = mlirOperationGetLocation(at);
  MlirType vt = vectorOf(mlirValueGetType(v), lanes);
  MlirOperation b = create("vector.broadcast", loc, 1, &v, &vt, (MlirAttribute){NULL});
  if (!mlirValueEqual(v, iv)) {
    mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(at), at, b);
    return mlirOperationGetResult(b, 0);
  }
  /* At the top of the loop's body, so that it dominates every later use. */
  MlirBlock body = mlirBlockArgumentGetOwner(iv);
  MlirOperation step = create("vector.step", loc, 0, NULL, &vt, (MlirAttribute){NULL});
  MlirValue sum[2] = {mlirOperationGetResult(b, 0), mlirOperationGetResult(step, 0)};
  MlirOperation add = create("arith.addi", loc, 2, sum, &vt, (MlirAttribute){NULL});
  mlirBlockInsertOwnedOperation(body, 0, add);
  mlirBlockInsertOwnedOperation(body, 0, step);
  mlirBlockInsertOwnedOperation(body, 0, b);
  if (m->n < MAX_OPS) {
    m->from[m->n] = v;
    m->to[m->n++] = mlirOperationGetResult(add, 0);
  }
  return mlirOperationGetResult(add, 0);
}

static void widen(Plan *p, int lanes) {
  /* The iv itself is not widened: subscripts keep it scalar (the vector
   * access starts at it). Ops are visited in program order. */
  ValueMap *m = calloc(1, sizeof(ValueMap));
  MlirValue iv = pbcLoopIv(p->loop);
  for (int i = 0; i < p->nOps; ++i) {
    MlirOperation op = p->ops[i];
    MlirLocation loc = mlirOperationGetLocation(op);
    MlirBlock blk = mlirOperationGetBlock(op);
    MlirAttribute mapAttr = mlirOperationGetInherentAttributeByName(op, pbcStr("map"));
    MlirOperation repl;
    if (pbcOpIsA(op, "affine.load")) {
      intptr_t n = mlirOperationGetNumOperands(op);
      MlirValue operands[PBC_MAX_TERMS * 2 + 1];
      for (intptr_t k = 0; k < n; ++k)
        operands[k] = mlirOperationGetOperand(op, k);
      MlirType vt = vectorOf(mlirValueGetType(mlirOperationGetResult(op, 0)), lanes);
      repl = create("affine.vector_load", loc, (int)n, operands, &vt, mapAttr);
    } else if (pbcOpIsA(op, "affine.store")) {
      intptr_t n = mlirOperationGetNumOperands(op);
      MlirValue operands[PBC_MAX_TERMS * 2 + 2];
      for (intptr_t k = 0; k < n; ++k)
        operands[k] = mlirOperationGetOperand(op, k);
      operands[0] = vectorOperand(m, iv, operands[0], lanes, op);
      repl = create("affine.vector_store", loc, (int)n, operands, NULL, mapAttr);
    } else {
      repl = mlirOperationClone(op);
      for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); ++k)
        mlirOperationSetOperand(repl, k,
                                vectorOperand(m, iv, mlirOperationGetOperand(op, k), lanes, op));
      MlirValue r = mlirOperationGetResult(repl, 0);
      mlirValueSetType(r, vectorOf(mlirValueGetType(r), lanes));
    }
    mlirBlockInsertOwnedOperationBefore(blk, op, repl);
    if (mlirOperationGetNumResults(op) == 1 && m->n < MAX_OPS) {
      m->from[m->n] = mlirOperationGetResult(op, 0);
      m->to[m->n++] = mlirOperationGetResult(repl, 0);
    }
  }
  for (int i = p->nOps - 1; i >= 0; --i)
    mlirOperationDestroy(p->ops[i]);
  pbcLoopSetStep(p->loop, pbcLoopStep(p->loop) * lanes);
  free(m);
}

/* Vectorizes `loop` if legal; returns true if it did. With `splitTail`, a
 * loop from 0 whose trip the full lanes do not divide runs them up to the
 * last multiple, and a copy of it the rest (vectorized by itself, in the
 * lanes that divide it): a 1000-wide row of a softmax was vectorized 8
 * lanes wide throughout, at half the rate of its 16-lane main loop now. */
static bool tryVectorize(MlirOperation loop, bool splitTail, const State *st) {
  if (pbcLoopStep(loop) != 1)
    return false;
  long long trip = pbcExtAffineConstantTripCount(loop);
  Plan *p = calloc(1, sizeof(Plan));
  p->loop = loop;
  p->ok = true;
  analyze(p, pbcLoopBody(loop));
  int lanes = pbcVectorLanes(st->vectorBits, p->maxBits, trip);
  int full = p->maxBits > 0 ? st->vectorBits / p->maxBits : 0;
  bool done = false;
  if (p->ok && p->nOps > 0 && accessesIndependent(p) && (lanes > 1 || full > 1)) {
    if (splitTail && lanes < full && trip > full && pbcLoopZeroBasedTrip(loop) == trip) {
      long long main = trip - trip % full, rest = trip % full;
      int outer = 0;
      MlirValue origin = pbcBuildIndexConstant(loop, main);
      MlirOperation tail = pbcCloneNestRestricted(loop, mlirOperationGetNextInBlock(loop), 1,
                                                  &outer, &rest, &origin, NULL);
      pbcLoopSetUpperBound(loop, main);
      lanes = full;
      tryVectorize(tail, false, st);
    }
    if (lanes > 1) {
      widen(p, lanes);
      done = true;
    }
  }
  free(p);
  return done;
}

static bool hasLoopInside(MlirOperation forOp) {
  for (MlirOperation op = mlirBlockGetFirstOperation(pbcLoopBody(forOp)); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (pbcOpIsA(op, "affine.for") || pbcOpIsA(op, "affine.if") || pbcOpIsA(op, "affine.parallel"))
      return true;
  return false;
}

/* Outer-loop vectorization where the innermost loop can't be widened:
 * the nearest enclosing affine.for (up to kMaxOuterLevels out) that can,
 * its inner loops kept. A pooling window's loops (kh, kw: stride along the
 * rows) inside the channel loop (contiguous): 16 channels per vector.
 * (LLVM had vectorized the scalar loop, which pbc no longer leaves to it.) */
enum { kMaxOuterLevels = 3 };

static void vectorizeEnclosing(MlirOperation loop, const State *st) {
  for (int level = 0; level < kMaxOuterLevels; ++level) {
    loop = mlirOperationGetParentOperation(loop);
    if (mlirOperationIsNull(loop) || !pbcOpIsA(loop, "affine.for") ||
        mlirOperationGetNumResults(loop) || tryVectorize(loop, false, st))
      return;
  }
}

typedef struct {
  PbcOpList marked, innermost;
} Candidates;

static MlirWalkResult collect(MlirOperation op, void *data) {
  Candidates *c = data;
  if (!pbcOpIsA(op, "affine.for"))
    return MlirWalkResultAdvance;
  if (!mlirAttributeIsNull(mlirOperationGetAttributeByName(op, pbcStr(PBC_MARK_VECTORIZE)))) {
    pbcOpListPush(&c->marked, op);
    return MlirWalkResultSkip;
  }
  if (!hasLoopInside(op))
    pbcOpListPush(&c->innermost, op);
  return MlirWalkResultAdvance;
}

static bool run(MlirOperation func, void *state) {
  Candidates c = {{0}, {0}};
  mlirOperationWalk(func, collect, &c, MlirWalkPreOrder);
  for (int i = 0; i < c.marked.n; ++i) {
    tryVectorize(c.marked.ops[i], false, state);
    mlirOperationRemoveAttributeByName(c.marked.ops[i], pbcStr(PBC_MARK_VECTORIZE));
  }
  for (int i = 0; i < c.innermost.n; ++i)
    if (!tryVectorize(c.innermost.ops[i], true, state))
      vectorizeEnclosing(c.innermost.ops[i], state);
  pbcOpListDestroy(&c.marked);
  pbcOpListDestroy(&c.innermost);
  return true;
}

PBC_C_PASS_WITH_VECTOR_BITS(pbcVectorizePass, "pbc-vectorize", "func.func",
                            "Contiguity-driven loop vectorization", run);
