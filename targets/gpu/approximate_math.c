/* pbc-gpu-approximate-math{ops=all|NAME,NAME...}: math ops in the device
 * code (every gpu.module) become polynomial approximations, for chips whose
 * device math library lacks them (the chip's device-math-approximation key):
 * `all` where no library exists for the ISA, a list (e.g. tanh) where the
 * library has no implementation of those. `none` leaves everything to the
 * library. Host code is left alone. */
#include <stdio.h>
#include <string.h>

#include "gpu_passes.h"
#include "pbc-ext/math.h"
#include "pbc/c_pass.h"

enum { kMaxOps = 16 };

typedef struct {
  char names[kMaxOps][24];
  int n; /* 0: MLIR's default set (ops=all) */
  bool none;
} State;

static MlirWalkResult approximate(MlirOperation op, void *data) {
  const State *st = data;
  if (!pbcOpIsA(op, "gpu.module"))
    return MlirWalkResultAdvance;
  const char *ops[kMaxOps];
  for (int i = 0; i < st->n; ++i)
    ops[i] = st->names[i];
  if (!pbcExtMathApproximate(op, ops, st->n))
    pbcEmitOpError(op, "math approximation did not converge");
  return MlirWalkResultSkip;
}

static bool run(MlirOperation module, void *state) {
  const State *st = state;
  if (!st->none)
    mlirOperationWalk(module, approximate, state, MlirWalkPreOrder);
  return true;
}

static const PbcCPassSpec kSpec = {"pbc-gpu-approximate-math", "builtin.module",
                                   "Math ops in device code -> polynomial approximations", run,
                                   sizeof(State)};

MlirPass pbcGpuCreateApproximateMathPass(const char *options, char *err, size_t errLen) {
  static const char *const known[] = {"ops", NULL};
  if (!pbcPassOptionsCheck(options, known, err, errLen))
    return (MlirPass){NULL};
  char list[kMaxOps * 24] = "all";
  pbcPassOptionGet(options, "ops", list, sizeof(list));
  State st = {.none = strcmp(list, "none") == 0};
  if (strcmp(list, "all") != 0 && !st.none)
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
      if (st.n == kMaxOps || strlen(tok) >= sizeof(st.names[0])) {
        snprintf(err, errLen, "ops: at most %d names of up to %zu characters", kMaxOps,
                 sizeof(st.names[0]) - 1);
        return (MlirPass){NULL};
      }
      snprintf(st.names[st.n++], sizeof(st.names[0]), "%s", tok);
    }
  return pbcCPassCreate(&kSpec, &st);
}
