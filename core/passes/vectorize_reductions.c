/* pbc-vectorize-reductions: reductions along a contiguous innermost loop
 * (row sums and maxima of softmax and layer norm, dot products over k when
 * both operands run along k) that pbc-vectorize leaves scalar: their
 * accumulator stays at one address along the loop. After
 * pbc-promote-accumulators the accumulator is an iter_arg; such a loop gets
 * one vector accumulator and a horizontal reduction after it (MLIR's
 * vectorizer does the rewrite; this reassociates the sum, as vendor
 * libraries do). A scalar chain waits on the add latency every element:
 * layer norm on 128 x 768 ran 3x slower than PyTorch eager.
 * Policy: innermost loops only, unit step, constant trip that the lanes
 * divide, every iter_arg a recognized reduction, no stores in the body and
 * every load contiguous or invariant along the loop (no gathers). */
#include <stdlib.h>

#include "mlir-c/BuiltinTypes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/passes.h"

typedef struct {
  int vectorBits;
} State;

enum { kMaxLoops = 4096 };

/* Lanes for the loop, or 0 if it is not a candidate. */
static int candidateLanes(MlirOperation loop, const State *st) {
  int nResults = (int)mlirOperationGetNumResults(loop);
  long long trip = pbcExtAffineConstantTripCount(loop);
  if (nResults == 0 || pbcLoopStep(loop) != 1 || trip <= 0)
    return 0;
  int bits = 0;
  for (int r = 0; r < nResults; ++r) {
    MlirType t = mlirValueGetType(mlirOperationGetResult(loop, r));
    if (!mlirTypeIsAFloat(t))
      return 0; /* vector or integer accumulators: not this pass's case */
    int b = (int)mlirFloatTypeGetWidth(t);
    bits = b > bits ? b : bits;
  }
  MlirBlock body = pbcLoopBody(loop);
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (mlirOperationGetNumRegions(op) != 0)
      return 0; /* not innermost */
    PbcAccess a;
    if (pbcAccessGet(op, &a)) {
      if (a.isWrite || a.lanes || pbcAccessStrideAlong(&a, loop) == PBC_STRIDE_OTHER)
        return 0;
    } else if (pbcOpIsA(op, "affine.load") || pbcOpIsA(op, "memref.load") ||
               pbcOpIsA(op, "memref.store") || pbcOpIsA(op, "func.call")) {
      return 0;
    }
  }
  int lanes = pbcVectorLanes(st->vectorBits, bits, trip); /* divides trip */
  return lanes > 1 ? lanes : 0;
}

static bool run(MlirOperation func, void *state) {
  MlirOperation *loops = calloc(kMaxLoops, sizeof(MlirOperation));
  int n = pbcLoopsInnerFirst(func, loops, kMaxLoops);
  for (int i = 0; i < n; ++i) {
    int lanes = candidateLanes(loops[i], state);
    if (lanes)
      pbcExtAffineVectorizeReduction(loops[i], lanes);
  }
  free(loops);
  return true;
}

static const PbcCPassSpec kSpec = {"pbc-vectorize-reductions", "func.func",
                                   "Vector accumulators for innermost reduction loops", run,
                                   sizeof(State)};

MlirPass pbcCreateVectorizeReductionsPass(const char *options, char *err, size_t errLen) {
  static const char *const known[] = {"vector-bits", NULL};
  if (!pbcPassOptionsCheck(options, known, err, errLen))
    return (MlirPass){NULL};
  State st = {(int)pbcPassOptionInt(options, "vector-bits", 256)};
  return pbcCPassCreate(&kSpec, &st);
}
