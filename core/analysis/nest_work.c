/* Work of loop nests: see pbc/nest_work.h. */
#include "analysis/nest_work.h"

#include <limits.h>
#include <string.h>

#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"

long long pbcOpWork(MlirOperation op) {
  static const char *const slow[] = {"arith.divf", "arith.remf", "math.sqrt", "math.rsqrt", NULL};
  static const char *const cheapMath[] = {"math.absf",      "math.fma",   "math.copysign",
                                          "math.floor",     "math.ceil",  "math.round",
                                          "math.roundeven", "math.trunc", NULL};
  char name[64];
  pbcOpName(op, name, sizeof(name));
  for (int i = 0; slow[i]; ++i)
    if (!strcmp(name, slow[i]))
      return 4;
  if (strncmp(name, "math.", 5))
    return 1;
  for (int i = 0; cheapMath[i]; ++i)
    if (!strcmp(name, cheapMath[i]))
      return 1;
  return 16;
}

long long pbcNestWork(MlirOperation loop, int vectorBits) {
  long long trip = pbcExtAffineConstantTripCount(loop), inner = 0;
  if (trip < 0)
    return LLONG_MAX;
  bool innermost = true;
  MlirBlock body = pbcLoopBody(loop);
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    long long w = pbcOpWork(op);
    if (pbcOpIsA(op, "affine.for")) {
      innermost = false;
      w = pbcNestWork(op, vectorBits);
    }
    if (w == LLONG_MAX || inner > LLONG_MAX / 2 - w)
      return LLONG_MAX;
    inner += w;
  }
  if (innermost && vectorBits > 0) {
    long long full = vectorBits / 32;
    long long lanes = trip >= full ? full : pbcVectorLanes(vectorBits, 32, trip);
    if (lanes > 1)
      trip = (trip + lanes - 1) / lanes;
  }
  return inner > LLONG_MAX / (trip + 1) ? LLONG_MAX : trip * inner;
}
