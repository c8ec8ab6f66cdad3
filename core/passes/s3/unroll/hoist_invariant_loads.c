/* pbc-hoist-invariant-loads{vector-registers}: keep a stencil's taps in
 * registers. A vector loop over an image row (the blur's horizontal pass:
 * for w { for phase < 3 { for tap < 5 { acc += x[..] * f[tap][phase] } } })
 * reads the same 15 filter vectors in every iteration, but only once its
 * short inner loops are unrolled does each read become loop-invariant. LLVM
 * unrolls them, and then can't hoist the reads: the filter and the output
 * reach the OpenMP body as plain pointers that may alias. So every output
 * vector paid 10 loads for 5 FMAs, and the loop ran at the load ports' rate.
 *
 * Here, where memrefs are still distinct buffers: for each loop L that is
 * not short (more than kMaxShortTrip iterations) and holds only short loops
 * of constant trip counts (at most kMaxCopies body copies in all), if some
 * loads become L-invariant once those loops are unrolled, and their distinct
 * copies fit half the vector registers (the rest is for the body; copies
 * of a constant filter count as their distinct values, which
 * pbc-fold-constant-loads makes constants: a 7-tap blur's 21 filter
 * vectors per pass, equal across channels, are 5 splats), the short
 * loops are fully unrolled and the invariant loads moved before L, and on
 * out of each enclosing loop that holds nothing else and where they stay
 * invariant (above a second nest they would hold registers it needs). A
 * load moves out of
 * a loop only if nothing in that loop may write its buffer and the loop runs
 * at least once (constant trip counts: a hoisted load never reads an element
 * the loop would not have read). */
#include <stdlib.h>

#include "mlir-c/BuiltinTypes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "analysis/constant_value.h"
#include "passes/passes.h"

typedef struct {
  long long vectorRegisters;
} State;

enum { kMaxLoops = 4096, kMaxShortTrip = 8, kMaxCopies = 32, kMaxConstants = 64 };

static bool isLoad(MlirOperation op) {
  return pbcOpIsA(op, "affine.load") || pbcOpIsA(op, "affine.vector_load");
}

/* Ops that only compute an index: safe to evaluate earlier. */
static bool isIndexOp(MlirOperation op) {
  return pbcOpIsA(op, "affine.apply") || pbcOpIsA(op, "arith.constant");
}

/* The short loops a load's subscripts read (each once). */
typedef struct {
  MlirOperation loop[PBC_MAX_BAND];
  int n;
  bool overflow;
} ShortLoops;

static void noteLoop(ShortLoops *s, MlirOperation loop) {
  for (int i = 0; i < s->n; ++i)
    if (mlirOperationEqual(s->loop[i], loop))
      return;
  if (s->n == PBC_MAX_BAND)
    s->overflow = true;
  else
    s->loop[s->n++] = loop;
}

/* True if `v` is (or, after the short loops in L are unrolled, becomes) the
 * same value in every iteration of L. *trips multiplies in the trip count of
 * each short loop whose iv `v` reads: the number of distinct copies; those
 * loops go into `reads`. */
static bool invariantAfterUnroll(MlirValue v, MlirOperation L, long long *trips,
                                 ShortLoops *reads) {
  if (!pbcValueIsDefinedInside(v, L))
    return true;
  if (mlirValueIsABlockArgument(v)) {
    MlirOperation owner = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v));
    if (mlirOperationEqual(owner, L) || !pbcOpIsA(owner, "affine.for") ||
        mlirBlockArgumentGetArgNumber(v) != 0) /* L's iv, or an iter_arg */
      return false;
    *trips *= pbcExtAffineConstantTripCount(owner);
    noteLoop(reads, owner);
    return true;
  }
  MlirOperation def = mlirOpResultGetOwner(v);
  if (!isIndexOp(def))
    return false;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(def); ++i)
    if (!invariantAfterUnroll(mlirOperationGetOperand(def, i), L, trips, reads))
      return false;
  return true;
}

/* L's loops below it, inner first; false if one is not short, or together
 * they make more than kMaxCopies copies of the body. */
static int shortLoopsIn(MlirOperation L, MlirOperation *loops, int max) {
  int n = pbcLoopsInnerFirst(L, loops, max) - 1; /* L itself comes last */
  long long copies = 1;
  for (int i = 0; i < n; ++i) {
    long long trip = pbcExtAffineConstantTripCount(loops[i]);
    if (trip < 1 || trip > kMaxShortTrip)
      return -1;
    /* Nested loops multiply; sibling loops add (bounded by the product). */
    copies *= trip;
    if (copies > kMaxCopies)
      return -1;
  }
  return n;
}

typedef struct {
  MlirOperation L;
  long long copies; /* distinct loads that will leave L, values not constant */
  MlirSymbolTable globals;
  MlirAttribute constants[kMaxConstants]; /* distinct values of the others */
  int nConstants;
} Count;

/* Adds the values `load` reads in each iteration of the short loops it
 * reads to c's distinct constants, if all are known at compile time (a
 * constant filter: equal taps become one register once folded). */
static bool countConstants(MlirOperation load, const ShortLoops *reads, Count *c) {
  if (reads->overflow || mlirSymbolTableIsNull(c->globals))
    return false;
  PbcIvValues at = {.n = reads->n};
  long long ub[PBC_MAX_BAND], step[PBC_MAX_BAND];
  for (int i = 0; i < reads->n; ++i) {
    at.iv[i] = pbcLoopIv(reads->loop[i]);
    at.value[i] = 0;
    ub[i] = pbcLoopUpperFromZero(reads->loop[i]);
    step[i] = pbcLoopStep(reads->loop[i]);
    if (ub[i] <= 0 || step[i] <= 0)
      return false;
  }
  MlirAttribute found[kMaxConstants];
  int n = 0;
  for (;;) { /* every point of the loops' box, odometer order */
    MlirAttribute v;
    if (!pbcLoadConstantValue(load, &at, c->globals, &v))
      return false;
    bool seen = false;
    for (int k = 0; k < c->nConstants && !seen; ++k)
      seen = mlirAttributeEqual(c->constants[k], v);
    for (int k = 0; k < n && !seen; ++k)
      seen = mlirAttributeEqual(found[k], v);
    if (!seen) {
      if (c->nConstants + n == kMaxConstants)
        return false;
      found[n++] = v;
    }
    int i = 0;
    while (i < reads->n && (at.value[i] += step[i]) >= ub[i])
      at.value[i++] = 0;
    if (i == reads->n)
      break;
  }
  for (int k = 0; k < n; ++k)
    c->constants[c->nConstants++] = found[k];
  return true;
}

static MlirWalkResult countInvariantLoads(MlirOperation op, void *data) {
  Count *c = data;
  if (!isLoad(op))
    return MlirWalkResultAdvance;
  for (MlirOperation p = mlirOperationGetParentOperation(op); !mlirOperationEqual(p, c->L);
       p = mlirOperationGetParentOperation(p))
    if (!pbcOpIsA(p, "affine.for")) /* under an affine.if: not unrolled flat */
      return MlirWalkResultAdvance;
  long long trips = 1;
  ShortLoops reads = {.n = 0};
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i)
    if (!invariantAfterUnroll(mlirOperationGetOperand(op, i), c->L, &trips, &reads))
      return MlirWalkResultAdvance;
  if (!pbcMayWriteMemref(c->L, mlirOperationGetOperand(op, 0)) && !countConstants(op, &reads, c))
    c->copies += trips;
  return MlirWalkResultAdvance;
}

/* Moves `op` before `loop`, after the index ops inside the loop it reads. */
static void moveBefore(MlirOperation op, MlirOperation loop) {
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    MlirValue v = mlirOperationGetOperand(op, i);
    if (mlirValueIsAOpResult(v) && pbcValueIsDefinedInside(v, loop))
      moveBefore(mlirOpResultGetOwner(v), loop);
  }
  mlirOperationMoveBefore(op, loop);
}

static bool operandsDefinedOutside(MlirOperation op, MlirOperation loop) {
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    MlirValue v = mlirOperationGetOperand(op, i);
    if (!pbcValueIsDefinedInside(v, loop))
      continue;
    if (!mlirValueIsAOpResult(v) || !isIndexOp(mlirOpResultGetOwner(v)) ||
        !operandsDefinedOutside(mlirOpResultGetOwner(v), loop))
      return false;
  }
  return true;
}

/* True if `loop` holds a loop other than `child` (the register budget is
 * per vector loop: values hoisted above two nests would be live in both). */
static bool holdsOtherLoops(MlirOperation loop, MlirOperation child) {
  for (MlirOperation op = mlirBlockGetFirstOperation(pbcLoopBody(loop)); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (!mlirOperationEqual(op, child) &&
        (pbcOpIsA(op, "affine.for") || pbcOpIsA(op, "affine.parallel")))
      return true;
  return false;
}

/* Moves the load out of its loop, and of each enclosing loop that holds no
 * other loop, while it stays invariant and unwritten there. */
static void hoist(MlirOperation load) {
  MlirValue memref = mlirOperationGetOperand(load, 0);
  MlirOperation loop = mlirOperationGetParentOperation(load);
  while (pbcLoopRunsAtLeastOnce(loop) && operandsDefinedOutside(load, loop) &&
         !pbcMayWriteMemref(loop, memref)) {
    moveBefore(load, loop);
    MlirOperation up = mlirOperationGetParentOperation(load);
    if (!pbcLoopRunsAtLeastOnce(up) || holdsOtherLoops(up, loop))
      break;
    loop = up;
  }
}

static void hoistFrom(MlirOperation L, const State *st, MlirSymbolTable globals) {
  MlirOperation *inner = calloc(kMaxLoops, sizeof(MlirOperation));
  int n = shortLoopsIn(L, inner, kMaxLoops);
  Count *c = calloc(1, sizeof(Count));
  c->L = L;
  c->globals = globals;
  if (n >= 0)
    mlirOperationWalk(L, countInvariantLoads, c, MlirWalkPreOrder);
  long long registers = c->copies + c->nConstants;
  free(c);
  if (registers > 0 && registers <= st->vectorRegisters / 2) {
    for (int i = 0; i < n; ++i) /* inner first: no stale handles */
      pbcExtAffineUnrollFull(inner[i]);
    MlirOperation op = mlirBlockGetFirstOperation(pbcLoopBody(L));
    while (!mlirOperationIsNull(op)) {
      MlirOperation next = mlirOperationGetNextInBlock(op);
      if (isLoad(op))
        hoist(op);
      op = next;
    }
  }
  free(inner);
}

static bool run(MlirOperation func, void *state) {
  int n, m = 0;
  MlirOperation *loops = pbcLoopsInnerFirstAll(func, &n);
  /* The candidates, before any unrolling erases loops. None holds another:
   * a candidate holds only short loops, and candidates are not short. */
  for (int i = 0; i < n; ++i) {
    long long trip = pbcExtAffineConstantTripCount(loops[i]);
    if (pbcOpIsA(loops[i], "affine.for") && (trip < 0 || trip > kMaxShortTrip))
      loops[m++] = loops[i];
  }
  MlirSymbolTable globals = pbcModuleGlobals(func);
  for (int i = 0; i < m; ++i)
    hoistFrom(loops[i], state, globals);
  if (!mlirSymbolTableIsNull(globals))
    mlirSymbolTableDestroy(globals);
  free(loops);
  return true;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcHoistInvariantLoadsPass = {
    "pbc-hoist-invariant-loads",
    "func.func",
    "Unroll short loops to hoist the loads they make invariant",
    run,
    sizeof(State),
    createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  enum { VECTOR_REGISTERS, NUM_OPTIONS };
  static const PbcCountOption kOptions[] = {
      [VECTOR_REGISTERS] = {"vector-registers", 16},
      [NUM_OPTIONS] = {NULL, 0}};
  long long v[NUM_OPTIONS];
  if (!pbcPassCountOptions(options, kOptions, v, err, errLen))
    return (MlirPass){NULL};
  State st = {v[VECTOR_REGISTERS]};
  return pbcCPassCreate(&pbcHoistInvariantLoadsPass, &st);
}
