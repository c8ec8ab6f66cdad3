/* pbc-unroll-jam: register tiling. Loops the tiler marked `pbc.unroll_jam`
 * (the point loops of a register tile) are unrolled by their trip count and
 * their copies jammed into the innermost loops (MLIR's loopUnrollJamByFactor),
 * so the innermost (reduction) loop computes the whole register tile: MR x NV
 * vectors become MR * NV independent chains in the reduction loop. Inner
 * marks first: J's copies are jammed before I's, so the reduction body reads
 * "for each row i: broadcast a_i, one FMA per vector of B". Each broadcast
 * then dies after NV uses and the body needs MR*NV + NV + 1 registers (the
 * tiler's budget); jamming I first orders it B-vector-major, every broadcast
 * stays live across all NV vectors, and 14 x 2 tiles spill. */
#include <stdlib.h>

#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/marks.h"
#include "pbc/op_list.h"
#include "passes/passes.h"

typedef struct {
  long long maxFactor;
} State;


static MlirWalkResult collect(MlirOperation op, void *data) {
  if (pbcOpIsA(op, "affine.for") &&
      !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, pbcStr(PBC_MARK_UNROLL_JAM))))
    pbcOpListPush(data, op);
  return MlirWalkResultAdvance;
}

static bool run(MlirOperation func, void *state) {
  const State *st = state;
  PbcOpList marked = {0};
  mlirOperationWalk(func, collect, &marked, MlirWalkPreOrder);
  for (int i = marked.n - 1; i >= 0; --i) { /* pre-order collected: inner last */
    MlirOperation loop = marked.ops[i];
    mlirOperationRemoveAttributeByName(loop, pbcStr(PBC_MARK_UNROLL_JAM));
    long long trip = pbcExtAffineConstantTripCount(loop);
    if (trip < 2 || trip > st->maxFactor)
      continue;
    /* Unroll-jam by the full trip count leaves one iteration, and MLIR
     * then promotes (and erases) the loop itself. */
    pbcExtAffineUnrollJam(loop, (uint64_t)trip);
  }
  pbcOpListDestroy(&marked);
  return true;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcUnrollJamPass = {
    "pbc-unroll-jam", "func.func", "Unroll-and-jam the register-tile loops", run,
    sizeof(State),    createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  enum { MAX_FACTOR, NUM_OPTIONS };
  static const PbcCountOption kOptions[] = {
      [MAX_FACTOR] = {"max-factor", 32},
      [NUM_OPTIONS] = {NULL, 0}};
  long long v[NUM_OPTIONS];
  if (!pbcPassCountOptions(options, kOptions, v, err, errLen))
    return (MlirPass){NULL};
  State st = {v[MAX_FACTOR]};
  return pbcCPassCreate(&pbcUnrollJamPass, &st);
}
