/* pbc-exp-ldexp{ldexp=avx512|native|library}: math.exp on f32 (scalars
 * and vectors) becomes a polynomial scaled by a power of two in one vector
 * instruction, where the chip has one (its `ldexp` key): `avx512` scales
 * 16-lane vectors by vscalefps on the float exponent itself (and others as
 * `native`), `native` calls llvm.ldexp on the exponent as integers. With
 * `library` the pass does nothing and pbc-approximate-math's form (MLIR's)
 * stays: it builds 2^k from the exponent's bits, which takes clamps of k
 * and shifts that the scaling instruction does itself, and LLVM would call
 * libm's ldexpf per element where there is no such instruction.
 *
 *   x' = min(max(x, -104), 89)   (NaN stays NaN; outside, exp is 0 or inf)
 *   k  = roundeven(x' log2(e))   (in [-150, 129])
 *   r  = x' - k ln2              (two steps: ln2 = hi + lo, hi exact in 9 bits)
 *   p  = e^r on [-ln2/2, ln2/2]  (degree 7, Horner; Cephes' expf coefficients)
 *   exp(x) = p 2^k               (inf above FLT_MAX, denormals, 0 below)
 *
 * Within 2 ulp of exp over the normal range (tests/e2e checks against
 * numpy). SiLU's epilogue: 31 instructions a vector with MLIR's form, 22
 * with llvm.ldexp, 18 with vscalefps (tools/bench/README.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "passes/passes.h"

typedef enum { kLibrary, kNative, kAvx512 } Ldexp;

typedef struct {
  Ldexp ldexp;
} State;

/* `t`'s counterpart with element `elem` if `t` is f32 or a vector of f32;
 * else null. */
static MlirType withElement(MlirType t, MlirType elem) {
  bool f32 = mlirTypeIsAF32(t) ||
             (mlirTypeIsAVector(t) && mlirTypeIsAF32(mlirShapedTypeGetElementType(t)));
  return f32 ? pbcTypeWithElement(t, elem) : (MlirType){NULL};
}

typedef struct {
  MlirOperation at; /* new ops go before it */
  MlirContext ctx;
  MlirType t;       /* f32 or vector<...xf32> */
} Builder;

static MlirValue op(const Builder *b, const char *name, int n, const MlirValue *args,
                    MlirType result, int nAttrs, const MlirNamedAttribute *attrs) {
  return mlirOperationGetResult(pbcBuildOp(b->at, name, n, args, result, nAttrs, attrs), 0);
}

static MlirValue constant(const Builder *b, double v) {
  MlirAttribute a = mlirFloatAttrDoubleGet(b->ctx, mlirF32TypeGet(b->ctx), v);
  if (mlirTypeIsAVector(b->t))
    a = mlirDenseElementsAttrSplatGet(b->t, a);
  MlirNamedAttribute value = pbcNamedAttr(b->ctx, "value", a);
  return op(b, "arith.constant", 0, NULL, b->t, 1, &value);
}

static MlirValue binary(const Builder *b, const char *name, MlirValue x, MlirValue y) {
  MlirValue xy[2] = {x, y};
  return op(b, name, 2, xy, b->t, 0, NULL);
}

static MlirValue fma3(const Builder *b, MlirValue x, MlirValue y, MlirValue z) {
  MlirValue xyz[3] = {x, y, z};
  return op(b, "math.fma", 3, xyz, b->t, 0, NULL);
}

/* arith.cmpf `pred` (its number) of x and y. */
static MlirValue compare(const Builder *b, int pred, MlirValue x, MlirValue y) {
  char text[16];
  snprintf(text, sizeof(text), "%d : i64", pred);
  MlirNamedAttribute p = pbcNamedAttr(
      b->ctx, "predicate", mlirAttributeParseGet(b->ctx, mlirStringRefCreateFromCString(text)));
  MlirValue xy[2] = {x, y};
  return op(b, "arith.cmpf", 2, xy, withElement(b->t, mlirIntegerTypeGet(b->ctx, 1)), 1, &p);
}

static MlirValue select3(const Builder *b, MlirValue c, MlirValue x, MlirValue y) {
  MlirValue cxy[3] = {c, x, y};
  return op(b, "arith.select", 3, cxy, b->t, 0, NULL);
}

enum { kOLT = 4 }; /* arith.cmpf predicate: ordered, less than */

/* A call of the LLVM intrinsic `name` on args, of b's type. */
static MlirValue intrinsic(const Builder *b, const char *name, int n, const MlirValue *args) {
  MlirContext c = b->ctx;
  MlirNamedAttribute attrs[3] = {
      pbcNamedAttr(c, "intrin", mlirStringAttrGet(c, mlirStringRefCreateFromCString(name))),
      pbcNamedAttr(c, "op_bundle_sizes", mlirDenseI32ArrayGet(c, 0, NULL)),
      pbcNamedAttr(c, "operandSegmentSizes", mlirDenseI32ArrayGet(c, 2, (int32_t[]){n, 0})),
  };
  return op(b, "llvm.call_intrinsic", n, args, b->t, 3, attrs);
}

static MlirValue integer(const Builder *b, MlirType t, long long v) {
  MlirNamedAttribute value = pbcNamedAttr(b->ctx, "value", mlirIntegerAttrGet(t, v));
  return op(b, "arith.constant", 0, NULL, t, 1, &value);
}

/* p * 2^k, k a whole float (never NaN where p is a number). On 16 f32
 * lanes with `avx512`, vscalefps itself (its exponent is a float: no
 * conversion to integers and back, no guard); else llvm.ldexp of k as
 * integers, where k reads 0 for NaN (fptosi(NaN) is poison; p is NaN
 * there already). (MLIR's llvm.intr.ldexp takes a scalar exponent only:
 * calls of the overloaded intrinsic instead.) */
static MlirValue scaleByPowerOf2(const Builder *b, MlirValue p, MlirValue k, Ldexp how) {
  if (how == kAvx512 && mlirTypeIsAVector(b->t) && mlirShapedTypeGetRank(b->t) == 1 &&
      mlirShapedTypeGetDimSize(b->t, 0) == 16) {
    MlirValue args[5] = {p, k, constant(b, 0.0), integer(b, mlirIntegerTypeGet(b->ctx, 16), -1),
                         integer(b, mlirIntegerTypeGet(b->ctx, 32), 4)}; /* all lanes; MXCSR rounding */
    return intrinsic(b, "llvm.x86.avx512.mask.scalef.ps.512", 5, args);
  }
  MlirOperation n = pbcBuildOp(b->at, "arith.fptosi", 1, &k,
                               withElement(b->t, mlirIntegerTypeGet(b->ctx, 32)), 0, NULL);
  pbcGuardNaNBeforeConversion(n);
  return intrinsic(b, "llvm.ldexp", 2, (MlirValue[]){p, mlirOperationGetResult(n, 0)});
}

static void rewrite(MlirOperation exp, Ldexp how) {
  MlirValue x = mlirOperationGetOperand(exp, 0);
  Builder b = {exp, mlirOperationGetContext(exp), mlirValueGetType(x)};
  /* (c < v ? c : v) and (v < c ? c : v): x86's min and max, which keep a
   * NaN v (the comparison is false). */
  MlirValue hi = constant(&b, 89.0), lo = constant(&b, -104.0);
  MlirValue xc = select3(&b, compare(&b, kOLT, hi, x), hi, x);
  xc = select3(&b, compare(&b, kOLT, xc, lo), lo, xc);
  MlirValue k = op(&b, "math.roundeven", 1,
                   (MlirValue[]){binary(&b, "arith.mulf", xc, constant(&b, 1.44269504088896341))},
                   b.t, 0, NULL);
  MlirValue r = fma3(&b, k, constant(&b, -0.693359375), xc);
  r = fma3(&b, k, constant(&b, 2.12194440e-4), r);
  static const double kCoeffs[] = {1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3,
                                   4.1665795894E-2, 1.6666665459E-1, 5.0000001201E-1,
                                   1.0,             1.0};
  MlirValue p = constant(&b, kCoeffs[0]);
  for (size_t i = 1; i < sizeof(kCoeffs) / sizeof(kCoeffs[0]); ++i)
    p = fma3(&b, p, r, constant(&b, kCoeffs[i]));
  MlirValue y = scaleByPowerOf2(&b, p, k, how);
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(exp, 0), y);
  mlirOperationDestroy(exp);
}

typedef struct {
  MlirOperation *ops;
  int n, cap;
} Exps;

static MlirWalkResult collect(MlirOperation o, void *data) {
  Exps *e = data;
  if (pbcOpIsA(o, "math.exp") &&
      !mlirTypeIsNull(withElement(mlirValueGetType(mlirOperationGetOperand(o, 0)),
                                  mlirF32TypeGet(mlirOperationGetContext(o))))) {
    if (e->n == e->cap) {
      e->cap = e->cap ? 2 * e->cap : 64;
      e->ops = realloc(e->ops, (size_t)e->cap * sizeof(MlirOperation));
    }
    e->ops[e->n++] = o;
  }
  return MlirWalkResultAdvance;
}

static bool run(MlirOperation module, void *state) {
  Ldexp how = ((const State *)state)->ldexp;
  if (how == kLibrary)
    return true;
  Exps e = {0};
  mlirOperationWalk(module, collect, &e, MlirWalkPreOrder);
  for (int i = 0; i < e.n; ++i)
    rewrite(e.ops[i], how);
  free(e.ops);
  return true;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcExpLdexpPass = {
    "pbc-exp-ldexp", "builtin.module", "math.exp on f32 -> a polynomial scaled by ldexp", run,
    sizeof(State),   createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  static const char *const known[] = {"ldexp", NULL};
  if (!pbcPassOptionsCheck(options, known, err, errLen))
    return (MlirPass){NULL};
  char how[16] = "library";
  pbcPassOptionGet(options, "ldexp", how, sizeof(how));
  State st;
  if (strcmp(how, "native") == 0)
    st.ldexp = kNative;
  else if (strcmp(how, "avx512") == 0)
    st.ldexp = kAvx512;
  else if (strcmp(how, "library") == 0)
    st.ldexp = kLibrary;
  else {
    snprintf(err, errLen, "ldexp: 'avx512', 'native' or 'library', not '%s'", how);
    return (MlirPass){NULL};
  }
  return pbcCPassCreate(&pbcExpLdexpPass, &st);
}
