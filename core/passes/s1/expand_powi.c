/* pbc-expand-powi: math.fpowi by a constant integer becomes multiplications
 * (x^n by repeated squaring; 1 / x^|n| for n < 0; 1 for n = 0), as LLVM's
 * powi computes it too. Frameworks write x^2 and x^3 so (GPT-2's gelu_new
 * through torch-mlir: math.fpowi %x, 3 : f32, i64), and LLVM's powi takes
 * only an i32 exponent, which a vectorized i64 one is not: the kernels'
 * lowering left invalid IR. A 64-bit exponent that is not a constant is a
 * located error (narrowing it could change the result's sign or size). */
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/op_list.h"
#include "passes/passes.h"

/* The exponent if it is an integer arith.constant; false otherwise. */
static bool constantExponent(MlirValue e, long long *n) {
  if (!mlirValueIsAOpResult(e) || !pbcOpIsA(mlirOpResultGetOwner(e), "arith.constant"))
    return false;
  MlirAttribute v = mlirOperationGetAttributeByName(mlirOpResultGetOwner(e), pbcStr("value"));
  if (!mlirAttributeIsAInteger(v))
    return false;
  *n = (long long)mlirIntegerAttrGetValueInt(v);
  return true;
}

static MlirValue mul(MlirOperation before, MlirValue a, MlirValue b) {
  MlirValue ops[2] = {a, b};
  return mlirOperationGetResult(
      pbcBuildOp(before, "arith.mulf", 2, ops, mlirValueGetType(a), 0, NULL), 0);
}

/* x^n for n >= 1 by repeated squaring, before `before`. */
static MlirValue power(MlirOperation before, MlirValue x, long long n) {
  MlirValue result = {NULL}, square = x;
  for (; n; n >>= 1) {
    if (n & 1)
      result = mlirValueIsNull(result) ? square : mul(before, result, square);
    if (n > 1)
      square = mul(before, square, square);
  }
  return result;
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  PbcOpList l = {0};
  pbcOpListCollect(&l, func, "math.fpowi");
  bool ok = true;
  for (int i = 0; i < l.n && ok; ++i) {
    MlirOperation op = l.ops[i];
    MlirValue x = mlirOperationGetOperand(op, 0), e = mlirOperationGetOperand(op, 1);
    MlirType t = mlirValueGetType(x);
    long long n;
    if (!constantExponent(e, &n) || !mlirTypeIsAFloat(t) || n < -64 || n > 64) {
      MlirType et = mlirValueGetType(e);
      if (mlirTypeIsAInteger(et) && mlirIntegerTypeGetWidth(et) > 32) {
        pbcEmitOpError(op, "math.fpowi with a 64-bit exponent that is not a constant "
                           "(or past 64) is not supported");
        ok = false;
      }
      continue;
    }
    MlirValue r;
    if (n == 0) {
      r = pbcBuildFloatConstant(op, t, 1.0);
    } else {
      r = power(op, x, n < 0 ? -n : n);
      if (n < 0) {
        MlirValue ops[2] = {pbcBuildFloatConstant(op, t, 1.0), r};
        r = mlirOperationGetResult(pbcBuildOp(op, "arith.divf", 2, ops, t, 0, NULL), 0);
      }
    }
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), r);
    mlirOperationDestroy(op);
  }
  pbcOpListDestroy(&l);
  return ok;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcExpandPowiPass, "pbc-expand-powi", "func.func",
                           "math.fpowi by a constant integer becomes multiplications", run);
