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
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include "pbc-ext/math.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "passes/passes.h"

enum { kMaxOps = 16 };

typedef struct {
  char names[kMaxOps][24];
  int n; /* 0: MLIR's default set (ops=all) */
  bool none;
  bool deviceOnly; /* scope=device */
} State;

/* The float-to-int conversions of `root`, before or after approximating. */
typedef struct {
  MlirOperation *ops;
  int n, cap;
} Conversions;

static MlirWalkResult collectConversions(MlirOperation op, void *data) {
  Conversions *c = data;
  if (!pbcOpIsA(op, "arith.fptosi") && !pbcOpIsA(op, "arith.fptoui"))
    return MlirWalkResultAdvance;
  if (c->n == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 64;
    c->ops = realloc(c->ops, (size_t)c->cap * sizeof(MlirOperation));
  }
  c->ops[c->n++] = op;
  return MlirWalkResultAdvance;
}

static bool among(const Conversions *c, MlirOperation op) {
  for (int i = 0; i < c->n; ++i)
    if (mlirOperationEqual(c->ops[i], op))
      return true;
  return false;
}

static bool approximateIn(MlirOperation op, const State *st) {
  const char *ops[kMaxOps];
  for (int i = 0; i < st->n; ++i)
    ops[i] = st->names[i];
  Conversions before = {0}, after = {0};
  mlirOperationWalk(op, collectConversions, &before, MlirWalkPreOrder);
  bool ok = pbcExtMathApproximate(op, ops, st->n);
  if (ok) {
    mlirOperationWalk(op, collectConversions, &after, MlirWalkPreOrder);
    for (int i = 0; i < after.n; ++i)
      if (!among(&before, after.ops[i]))
        /* MLIR's polynomials take 2^n's exponent from fptosi(n), n NaN
         * where the input is (exp(x * NaN) once folded lost its stores). */
        pbcGuardNaNBeforeConversion(after.ops[i]);
  }
  free(before.ops);
  free(after.ops);
  if (!ok)
    pbcEmitOpError(op, "math approximation did not converge");
  return ok;
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
