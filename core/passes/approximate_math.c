/* pbc-approximate-math{ops=all|none|NAME,NAME... scope=module|device}: math
 * ops become polynomial approximations (MLIR's patterns), where a library
 * call would be missing or slow:
 *  - GPUs (scope=device: only the code in gpu.modules, never host code): the
 *    chip's device-math-approximation key; `all` where no device library
 *    exists for the ISA, a list (e.g. tanh) where it lacks those ops.
 *  - CPUs (scope=module): LLVM has no vector expf or tanhf on x86, so a
 *    math.exp on vector<16xf32> became 16 calls to libm (softmax spent most
 *    of its time there); the polynomial runs on the whole vector.
 * `none` leaves everything to the library. */
#include <stdio.h>
#include <string.h>

#include "pbc-ext/math.h"
#include "pbc/c_pass.h"
#include "pbc/passes.h"

enum { kMaxOps = 16 };

typedef struct {
  char names[kMaxOps][24];
  int n; /* 0: MLIR's default set (ops=all) */
  bool none;
  bool deviceOnly; /* scope=device */
} State;

static bool approximateIn(MlirOperation op, const State *st) {
  const char *ops[kMaxOps];
  for (int i = 0; i < st->n; ++i)
    ops[i] = st->names[i];
  if (pbcExtMathApproximate(op, ops, st->n))
    return true;
  pbcEmitOpError(op, "math approximation did not converge");
  return false;
}

static MlirWalkResult approximateDevice(MlirOperation op, void *data) {
  if (!pbcOpIsA(op, "gpu.module"))
    return MlirWalkResultAdvance;
  approximateIn(op, data);
  return MlirWalkResultSkip;
}

static bool run(MlirOperation module, void *state) {
  const State *st = state;
  if (st->none)
    return true;
  if (!st->deviceOnly)
    return approximateIn(module, st);
  mlirOperationWalk(module, approximateDevice, state, MlirWalkPreOrder);
  return true;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcApproximateMathPass = {
    "pbc-approximate-math", "builtin.module", "Math ops -> polynomial approximations", run,
    sizeof(State),          createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  static const char *const known[] = {"ops", "scope", NULL};
  if (!pbcPassOptionsCheck(options, known, err, errLen))
    return (MlirPass){NULL};
  char list[kMaxOps * 24] = "all";
  pbcPassOptionGet(options, "ops", list, sizeof(list));
  char scope[16] = "module";
  pbcPassOptionGet(options, "scope", scope, sizeof(scope));
  if (strcmp(scope, "module") != 0 && strcmp(scope, "device") != 0) {
    snprintf(err, errLen, "scope: 'module' or 'device', not '%s'", scope);
    return (MlirPass){NULL};
  }
  State st = {.none = strcmp(list, "none") == 0, .deviceOnly = strcmp(scope, "device") == 0};
  if (strcmp(list, "all") != 0 && !st.none)
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
      if (st.n == kMaxOps || strlen(tok) >= sizeof(st.names[0])) {
        snprintf(err, errLen, "ops: at most %d names of up to %zu characters", kMaxOps,
                 sizeof(st.names[0]) - 1);
        return (MlirPass){NULL};
      }
      snprintf(st.names[st.n++], sizeof(st.names[0]), "%s", tok);
    }
  return pbcCPassCreate(&pbcApproximateMathPass, &st);
}
