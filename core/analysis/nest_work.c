/* Work of loop nests: see pbc/nest_work.h. */
#include "analysis/nest_work.h"

#include <limits.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
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

/* An index constant's value, or -1. */
static long long indexConstant(MlirValue v) {
  if (!mlirValueIsAOpResult(v) || !pbcOpIsA(mlirOpResultGetOwner(v), "arith.constant"))
    return -1;
  MlirAttribute a = mlirOperationGetAttributeByName(mlirOpResultGetOwner(v), pbcStr("value"));
  return mlirAttributeIsAInteger(a) ? mlirIntegerAttrGetValueInt(a) : -1;
}

static long long addWork(long long a, long long b) {
  return a == LLONG_MAX || b == LLONG_MAX || a > LLONG_MAX / 2 - b ? LLONG_MAX : a + b;
}

/* Work of an op with regions that is no affine.for (kernels written with
 * scf loops and ifs, e.g. pbc-fuse-attention's): its regions' ops, an
 * scf.for's times its trip where the bounds are constants; an scf.if's
 * branches both counted (an upper bound). */
static long long regionOpWork(MlirOperation op, int vectorBits) {
  long long w = 0;
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); ++r)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r)); !mlirBlockIsNull(b);
         b = mlirBlockGetNextInRegion(b))
      for (MlirOperation o = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(o);
           o = mlirOperationGetNextInBlock(o))
        w = addWork(w, pbcOpIsA(o, "affine.for")              ? pbcNestWork(o, vectorBits)
                       : mlirOperationGetNumRegions(o) > 0 ? regionOpWork(o, vectorBits)
                                                           : pbcOpWork(o));
  if (pbcOpIsA(op, "scf.for")) {
    long long lb = indexConstant(mlirOperationGetOperand(op, 0)),
              ub = indexConstant(mlirOperationGetOperand(op, 1)),
              step = indexConstant(mlirOperationGetOperand(op, 2));
    long long trip = lb >= 0 && ub >= lb && step > 0 ? (ub - lb + step - 1) / step : 1;
    w = trip > 0 && w > LLONG_MAX / trip ? LLONG_MAX : w * (trip > 0 ? trip : 1);
  }
  return w;
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
    } else if (mlirOperationGetNumRegions(op) > 0) {
      innermost = false;
      w = regionOpWork(op, vectorBits);
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

/* The bytes one store writes: its element's, times its vector's lanes. */
static long long storeBytes(MlirOperation op) {
  MlirType t = mlirValueGetType(mlirOperationGetOperand(op, 0));
  long long lanes = 1;
  if (mlirTypeIsAVector(t)) {
    for (intptr_t d = 0; d < mlirShapedTypeGetRank(t); ++d)
      lanes *= mlirShapedTypeGetDimSize(t, d);
    t = mlirShapedTypeGetElementType(t);
  }
  long long bits = mlirTypeIsAFloat(t)     ? mlirFloatTypeGetWidth(t)
                   : mlirTypeIsAInteger(t) ? mlirIntegerTypeGetWidth(t)
                                           : 64;
  return lanes * ((bits + 7) / 8);
}

long long pbcNestStoredBytes(MlirOperation loop) {
  long long trip = pbcExtAffineConstantTripCount(loop), inner = 0;
  if (trip < 0)
    return LLONG_MAX;
  for (MlirOperation op = mlirBlockGetFirstOperation(pbcLoopBody(loop)); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    long long b = pbcOpIsA(op, "affine.for")                                         ? pbcNestStoredBytes(op)
                  : pbcOpIsA(op, "affine.store") || pbcOpIsA(op, "affine.vector_store") ? storeBytes(op)
                                                                                     : 0;
    inner = addWork(inner, b);
  }
  return inner == LLONG_MAX || (trip > 0 && inner > LLONG_MAX / trip) ? LLONG_MAX : trip * inner;
}

double pbcStaticSplitBusyShare(long long items, long long cores) {
  if (items <= 0 || cores < 2)
    return 1.0;
  long long rounds = (items + cores - 1) / cores;
  return (double)items / (double)(rounds * cores);
}
