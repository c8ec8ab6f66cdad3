/* pbc-promote-accumulators: keeps loop-carried values in registers. In a
 * loop, a load and a store of the same element whose subscripts don't move
 * with the loop (a matmul's C[i][j] in its k loop, after register tiling:
 * MR x NV vector accumulators) become an iter_arg: loaded once before the
 * loop, yielded each iteration, stored once after. Innermost loops first, so
 * accumulators climb out of nested reduction loops (a convolution's c, kw, kh).
 * Legal when every other access to that memref in the loop is provably
 * disjoint (pbc/affine_access.h), all memrefs in the loop are distinct root
 * buffers (no views that could alias), and nothing else in the loop has
 * unknown memory effects. */
#include <stdlib.h>
#include <string.h>

#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "passes/passes.h"

#define MAX_ACC 512

typedef struct {
  PbcAccess acc[MAX_ACC];
  int n;
  bool ok;
} Accesses;

static bool knownOp(MlirOperation op) {
  char name[64];
  pbcOpName(op, name, sizeof(name));
  return !strncmp(name, "arith.", 6) || !strncmp(name, "math.", 5) ||
         !strcmp(name, "vector.broadcast") || !strcmp(name, "affine.for") ||
         !strcmp(name, "affine.yield") || !strcmp(name, "affine.apply") ||
         !strcmp(name, "affine.if");
}

static MlirWalkResult gather(MlirOperation op, void *data) {
  Accesses *a = data;
  PbcAccess acc;
  if (pbcAccessGet(op, &acc)) {
    /* Views are fine when no other memref of the loop may alias them
     * (checked after the walk): legality compares accesses per memref.
     * Constant globals (a convolution's filter) alias only themselves. */
    MlirValue base = pbcMemrefBase(acc.memref);
    if (a->n == MAX_ACC || !(pbcMemrefIsRoot(base) || pbcMemrefIsGlobal(base)))
      a->ok = false;
    else
      a->acc[a->n++] = acc;
  } else if (!knownOp(op)) {
    a->ok = false;
  }
  return a->ok ? MlirWalkResultAdvance : MlirWalkResultInterrupt;
}

static bool operandsOutside(MlirOperation op, MlirOperation loop, int from) {
  for (intptr_t i = from; i < mlirOperationGetNumOperands(op); ++i)
    if (pbcValueIsDefinedInside(mlirOperationGetOperand(op, i), loop))
      return false;
  return true;
}

/* Promotes the pairs of one loop; returns the (possibly new) loop. */
static MlirOperation promoteLoop(MlirOperation loop) {
  Accesses *a = malloc(sizeof(Accesses)); /* large: only n entries are read */
  a->n = 0;
  a->ok = true;
  MlirBlock body = pbcLoopBody(loop);
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op) && a->ok;
       op = mlirOperationGetNextInBlock(op))
    mlirOperationWalk(op, gather, a, MlirWalkPreOrder);
  /* Distinct memrefs pairwise (a loop has a few, and hundreds of accesses). */
  MlirValue memrefs[MAX_ACC];
  int numMemrefs = 0;
  for (int i = 0; a->ok && i < a->n; ++i) {
    bool seen = false;
    for (int j = 0; j < numMemrefs && !seen; ++j)
      seen = mlirValueEqual(a->acc[i].memref, memrefs[j]);
    for (int j = 0; j < numMemrefs && !seen && a->ok; ++j)
      if (pbcMemrefsMayAlias(a->acc[i].memref, memrefs[j]))
        a->ok = false;
    if (!seen)
      memrefs[numMemrefs++] = a->acc[i].memref;
  }
  MlirOperation loads[MAX_ACC], stores[MAX_ACC];
  int n = 0;
  for (int s = 0; a->ok && s < a->n; ++s) {
    const PbcAccess *st = &a->acc[s];
    if (!st->isWrite || !mlirOperationEqual(mlirOperationGetParentOperation(st->op), loop) ||
        !operandsOutside(st->op, loop, 1))
      continue;
    int load = -1;
    bool clash = false;
    for (int o = 0; o < a->n && !clash; ++o) {
      const PbcAccess *x = &a->acc[o];
      if (o == s || !mlirValueEqual(x->memref, st->memref))
        continue;
      if (!x->isWrite && load < 0 && pbcAccessesSame(x, st) &&
          mlirOperationEqual(mlirOperationGetParentOperation(x->op), loop) &&
          mlirOperationIsBeforeInBlock(x->op, st->op) && operandsOutside(x->op, loop, 0))
        load = o;
      else if (!pbcAccessesDisjoint(x, st))
        clash = true;
    }
    if (load < 0 || clash)
      continue;
    loads[n] = a->acc[load].op;
    stores[n++] = st->op;
  }
  free(a);
  if (n == 0)
    return loop;
  MlirValue inits[MAX_ACC], yields[MAX_ACC];
  MlirBlock outer = mlirOperationGetBlock(loop);
  for (int i = 0; i < n; ++i) {
    MlirOperation init = mlirOperationClone(loads[i]);
    mlirBlockInsertOwnedOperationBefore(outer, loop, init);
    inits[i] = mlirOperationGetResult(init, 0);
    yields[i] = mlirOperationGetOperand(stores[i], 0);
  }
  int before = (int)mlirOperationGetNumResults(loop);
  /* The new loop keeps the old one's marks (pbc.kind on a root). */
  MlirNamedAttribute marks[16];
  int nMarks = 0;
  for (intptr_t i = 0; i < mlirOperationGetNumDiscardableAttributes(loop) && nMarks < 16; ++i)
    marks[nMarks++] = mlirOperationGetDiscardableAttribute(loop, i);
  MlirOperation newLoop = pbcExtAffineForAddIterArgs(loop, n, inits, yields);
  if (mlirOperationIsNull(newLoop))
    return loop; /* unreachable for affine.for; the clones are dead */
  for (int i = 0; i < nMarks; ++i)
    mlirOperationSetDiscardableAttributeByName(newLoop, mlirIdentifierStr(marks[i].name),
                                               marks[i].attribute);
  MlirBlock newBody = pbcLoopBody(newLoop);
  MlirOperation after = newLoop;
  for (int i = 0; i < n; ++i) {
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(loads[i], 0),
                                  mlirBlockGetArgument(newBody, 1 + before + i));
    MlirOperation fin = mlirOperationClone(stores[i]);
    mlirOperationSetOperand(fin, 0, mlirOperationGetResult(newLoop, before + i));
    mlirBlockInsertOwnedOperationAfter(outer, after, fin);
    after = fin;
    mlirOperationDestroy(stores[i]);
    mlirOperationDestroy(loads[i]);
  }
  return newLoop;
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  /* Inner first: a promoted loop is replaced only after its own turn. */
  int n;
  MlirOperation *loops = pbcLoopsInnerFirstAll(func, &n);
  for (int i = 0; i < n; ++i)
    promoteLoop(loops[i]);
  free(loops);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcPromoteAccumulatorsPass, "pbc-promote-accumulators", "func.func",
                           "Loop-invariant load/store pairs -> iter_args", run);
