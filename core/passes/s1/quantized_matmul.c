/* pbc-quantized-matmul: a float matmul of two dequantized 8-bit tensors,
 *   %a = linalg.generic ins(%aq : i8, ..) { sitofp(ext(aq) - za) * sa }  (m, k)
 *   %b = linalg.generic ins(%bq : i8, ..) { sitofp(bq) * sb }            (k, n)
 *   %c = linalg.matmul ins(%a, %b) outs(%init)
 * becomes an integer matmul and the scales after it:
 *   %ci = linalg.generic { sum_k ext(aq) * bq }         (i32, from 0)
 *   %cs = linalg.generic { sum_k bq }                   (B's column sums, if za)
 *   %c  = linalg.generic ins(%ci, ..) outs(%init) { init + sitofp(ci - za cs) * sa * sb }
 * where each scale is one value (per tensor) or read per row of A (m) or
 * per column of B (n: per output channel). A's bytes may be u8 (extui) or
 * s8, with one constant zero point za (asymmetric activations, as
 * onnxruntime's quantizer writes them: u8 with 128); B's must be s8 with a
 * zero point that is zero (constants, or none: symmetric weights).
 *
 * Why: this is what quantized models look like once imported (torch-mlir
 * turns ONNX's QDQ MatMul with per-channel weight scales into exactly
 * this; per-tensor ones it fuses into linalg.quantized_matmul itself), and
 * as float it runs as an f32 GEMM on dequantized weights, four times the
 * bytes. As i8 it runs on the integer units (AVX-512 VNNI's vpdpbusd,
 * which multiplies u8 by s8 as such: pbc-dot-i8; mma.sync / MFMA i8 on
 * GPUs). The sums are exact in i32 (K up to 131,071 for s8 x s8, 65,535
 * with u8 or a zero point), then scaled once; the float form rounded
 * every partial sum, so the results differ by float rounding only.
 *
 * Applies to linalg.matmul with an f32 result whose two inputs are such
 * generics (all parallel, identity maps on the i8 input and the output,
 * used only by this matmul), each scale a value from outside the generic
 * or an input read through a map of A's row (or B's column) alone. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/op_list.h"
#include "passes/passes.h"
#include "passes/s1/layout.h"

/* i32 sums of K products: |s8 x s8| <= 2^14, |(u8 - zero point) x s8| < 2^15. */
enum { kMaxK = 131071, kMaxKWide = 65535 };

/* What a dequantizing generic gives: its i8 input, and its scale as a
 * value from outside (scalar) or an input with its indexing map. */
typedef struct {
  MlirOperation op;
  MlirValue q;        /* the i8 tensor */
  bool isUnsigned;    /* its bytes are u8 (extui), else s8 */
  long long zero;     /* the zero point, one constant */
  MlirValue scale;    /* a scalar from outside the generic, or */
  MlirValue scaleIn;  /* an input tensor of the generic, read through */
  MlirAttribute scaleMap;
} Dequant;

static MlirBlock bodyOf(MlirOperation g) {
  return mlirRegionGetFirstBlock(mlirOperationGetRegion(g, 0));
}

static MlirOperation defOp(MlirValue v) {
  return mlirValueIsAOpResult(v) ? mlirOpResultGetOwner(v) : (MlirOperation){NULL};
}

static bool isI8(MlirType t) { return mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) == 8; }

/* The one integer v always is (into *out): an integer constant, the
 * extension of one, or a block argument of g whose input is a splat
 * constant. */
static bool constantInt(MlirValue v, MlirOperation g, long long *out) {
  MlirOperation ext = defOp(v);
  if (!mlirOperationIsNull(ext) && (pbcOpIsA(ext, "arith.extsi") || pbcOpIsA(ext, "arith.extui"))) {
    bool zext = pbcOpIsA(ext, "arith.extui");
    MlirValue in = mlirOperationGetOperand(ext, 0);
    unsigned bits = mlirIntegerTypeGetWidth(mlirValueGetType(in));
    if (!constantInt(in, g, out) || bits >= 64)
      return false;
    if (zext)
      *out &= (1LL << bits) - 1;
    return true;
  }
  if (mlirValueIsABlockArgument(v)) {
    MlirBlock b = mlirBlockArgumentGetOwner(v);
    if (b.ptr != bodyOf(g).ptr)
      return false;
    v = mlirOperationGetOperand(g, mlirBlockArgumentGetArgNumber(v));
  }
  MlirOperation c = defOp(v);
  if (mlirOperationIsNull(c) || !pbcOpIsA(c, "arith.constant"))
    return false;
  MlirAttribute a = mlirOperationGetAttributeByName(c, pbcStr("value"));
  if (mlirAttributeIsADenseElements(a) && mlirDenseElementsAttrIsSplat(a))
    a = mlirDenseElementsAttrGetSplatValue(a);
  if (!mlirAttributeIsAInteger(a))
    return false;
  *out = mlirIntegerAttrGetValueInt(a);
  return true;
}

/* Whether map (over (d0, d1)) reads only dimension `dim`. */
static bool readsOnly(MlirAffineMap map, int dim) {
  for (intptr_t r = 0; r < mlirAffineMapGetNumResults(map); ++r)
    if (mlirAffineExprIsFunctionOfDim(mlirAffineMapGetResult(map, r), 1 - dim))
      return false;
  return true;
}

/* v is the result of a dequantizing generic whose scale depends on
 * dimension `dim` of its (2-D) iteration space at most. */
static bool matchDequant(MlirValue v, int dim, MlirOperation user, Dequant *d) {
  MlirOperation g = defOp(v);
  memset(d, 0, sizeof(*d));
  if (mlirOperationIsNull(g) || !pbcOpIsA(g, "linalg.generic") ||
      mlirOperationGetNumResults(g) != 1)
    return false;
  MlirOpOperand u = mlirValueGetFirstUse(v);
  if (mlirOpOperandIsNull(u) || !mlirOpOperandIsNull(mlirOpOperandGetNextUse(u)) ||
      mlirOpOperandGetOwner(u).ptr != user.ptr)
    return false;
  MlirAttribute maps = mlirOperationGetAttributeByName(g, pbcStr("indexing_maps"));
  MlirAttribute iters = mlirOperationGetAttributeByName(g, pbcStr("iterator_types"));
  intptr_t n = mlirOperationGetNumOperands(g);
  if (mlirAttributeIsNull(maps) || mlirArrayAttrGetNumElements(maps) != n ||
      mlirArrayAttrGetNumElements(iters) != 2 || n < 2)
    return false;
  for (intptr_t i = 0; i < 2; ++i)
    if (!mlirAttributeEqual(mlirArrayAttrGetElement(iters, i), pbcLinalgParallelIterator(mlirOperationGetContext(g))))
      return false;
  if (!mlirAffineMapIsIdentity(mlirAffineMapAttrGetValue(mlirArrayAttrGetElement(maps, n - 1))))
    return false;
  /* Body: [x' = extsi(x); z' = extsi(z); x'' = subi(x', z')] f = sitofp;
   * r = mulf(f, s) or mulf(s, f); yield r. */
  MlirBlock body = bodyOf(g);
  MlirOperation y = mlirBlockGetTerminator(body);
  MlirOperation mul = defOp(mlirOperationGetOperand(y, 0));
  if (mlirOperationIsNull(mul) || !pbcOpIsA(mul, "arith.mulf"))
    return false;
  int fi = -1;
  for (int i = 0; i < 2; ++i) {
    MlirOperation f = defOp(mlirOperationGetOperand(mul, i));
    if (!mlirOperationIsNull(f) && pbcOpIsA(f, "arith.sitofp"))
      fi = i;
  }
  if (fi < 0)
    return false;
  MlirOperation toF = defOp(mlirOperationGetOperand(mul, fi));
  MlirValue s = mlirOperationGetOperand(mul, 1 - fi);
  MlirValue x = mlirOperationGetOperand(toF, 0);
  int ops = 3; /* sitofp, mulf, yield */
  /* [x' = ext(x); x'' = subi(x', zero point)] with the zero point one
   * constant, maybe extended from a narrower one (an op of its own). */
  MlirOperation sub = defOp(x);
  if (!mlirOperationIsNull(sub) && pbcOpIsA(sub, "arith.subi")) {
    MlirOperation xe = defOp(mlirOperationGetOperand(sub, 0));
    MlirValue zp = mlirOperationGetOperand(sub, 1);
    if (mlirOperationIsNull(xe) ||
        !(pbcOpIsA(xe, "arith.extsi") || pbcOpIsA(xe, "arith.extui")) ||
        !constantInt(zp, g, &d->zero))
      return false;
    d->isUnsigned = pbcOpIsA(xe, "arith.extui");
    x = mlirOperationGetOperand(xe, 0);
    MlirOperation ze = defOp(zp);
    ops += 2 + (!mlirOperationIsNull(ze) && mlirOperationGetBlock(ze).ptr == body.ptr);
  }
  int count = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    ++count;
  if (count != ops || !mlirValueIsABlockArgument(x) ||
      mlirBlockArgumentGetOwner(x).ptr != body.ptr || !isI8(mlirValueGetType(x)))
    return false;
  intptr_t xi = mlirBlockArgumentGetArgNumber(x);
  if (xi >= n - 1 ||
      !mlirAffineMapIsIdentity(mlirAffineMapAttrGetValue(mlirArrayAttrGetElement(maps, xi))))
    return false;
  d->op = g;
  d->q = mlirOperationGetOperand(g, xi);
  if (mlirValueIsABlockArgument(s) && mlirBlockArgumentGetOwner(s).ptr == body.ptr) {
    intptr_t si = mlirBlockArgumentGetArgNumber(s);
    if (si >= n - 1 || !mlirTypeIsAF32(mlirValueGetType(s)))
      return false;
    d->scaleIn = mlirOperationGetOperand(g, si);
    d->scaleMap = mlirArrayAttrGetElement(maps, si);
    return readsOnly(mlirAffineMapAttrGetValue(d->scaleMap), dim);
  }
  d->scale = s; /* defined above the generic: one scale */
  return mlirTypeIsAF32(mlirValueGetType(s));
}

static MlirValue result(MlirOperation op) { return mlirOperationGetResult(op, 0); }

/* A zero-filled i32 tensor of `shape`, before `before`. */
static MlirValue zeros(MlirOperation before, int rank, const int64_t *shape) {
  MlirContext ctx = mlirOperationGetContext(before);
  MlirType i32 = mlirIntegerTypeGet(ctx, 32);
  MlirType t = mlirRankedTensorTypeGet(rank, shape, i32, mlirAttributeGetNull());
  MlirNamedAttribute zero = pbcNamedAttr(ctx, "value", mlirIntegerAttrGet(i32, 0));
  MlirValue ops[2] = {result(pbcBuildOp(before, "arith.constant", 0, NULL, i32, 1, &zero)),
                      result(pbcBuildOp(before, "tensor.empty", 0, NULL, t, 0, NULL))};
  return result(pbcBuildNamedLinalg(before, "linalg.fill", 1, ops, t, 0, NULL));
}

/* A linalg.generic before `before`: ins (n of them) then the init, maps
 * and iterators given as text, its body made by `body` on the new block. */
static MlirValue generic(MlirOperation before, int n, const MlirValue *operands, const char *maps,
                         const char *iterators, MlirBlock body) {
  MlirContext ctx = mlirOperationGetContext(before);
  MlirRegion region = mlirRegionCreate();
  mlirRegionAppendOwnedBlock(region, body);
  return result(pbcBuildLinalgGeneric(before, n, operands, mlirValueGetType(operands[n]),
                                      mlirAttributeParseGet(ctx, pbcStr(maps)),
                                      mlirAttributeParseGet(ctx, pbcStr(iterators)), region));
}

static MlirValue op1(MlirBlock b, const char *name, MlirValue x, MlirType t, MlirLocation loc) {
  return result(pbcAppendOp(b, name, 1, &x, t, loc));
}

static MlirValue op2(MlirBlock b, const char *name, MlirValue x, MlirValue y, MlirType t,
                     MlirLocation loc) {
  MlirValue ops[2] = {x, y};
  return result(pbcAppendOp(b, name, 2, ops, t, loc));
}

/* The column sums (i32) of `q`, a K x N constant of dense i8 (not splat),
 * as an arith.constant before `before`; null if q is no such constant. */
static MlirValue constantColumnSums(MlirOperation before, MlirValue q) {
  MlirOperation c = defOp(q);
  MlirAttribute v = mlirOperationIsNull(c) || !pbcOpIsA(c, "arith.constant")
                        ? mlirAttributeGetNull()
                        : mlirOperationGetAttributeByName(c, pbcStr("value"));
  if (mlirAttributeIsNull(v) || !mlirAttributeIsADenseElements(v) || mlirDenseElementsAttrIsSplat(v))
    return (MlirValue){NULL};
  MlirType t = mlirValueGetType(q);
  int64_t k = mlirShapedTypeGetDimSize(t, 0), n = mlirShapedTypeGetDimSize(t, 1);
  const int8_t *w = mlirDenseElementsAttrGetRawData(v);
  int32_t *sums = calloc((size_t)n, sizeof(int32_t));
  for (int64_t r = 0; r < k; ++r)
    for (int64_t j = 0; j < n; ++j)
      sums[j] += w[r * n + j];
  MlirContext ctx = mlirOperationGetContext(before);
  MlirType st = mlirRankedTensorTypeGet(1, &n, mlirIntegerTypeGet(ctx, 32), mlirAttributeGetNull());
  MlirNamedAttribute value = pbcNamedAttr(ctx, "value", mlirDenseElementsAttrInt32Get(st, n, sums));
  free(sums);
  return result(pbcBuildOp(before, "arith.constant", 0, NULL, st, 1, &value));
}

static void rewrite(MlirOperation mm, const Dequant *a, const Dequant *b) {
  MlirContext ctx = mlirOperationGetContext(mm);
  MlirLocation loc = mlirOperationGetLocation(mm);
  MlirValue c = mlirOperationGetResult(mm, 0), init = mlirOperationGetOperand(mm, 2);
  MlirType ct = mlirValueGetType(c), f32 = mlirF32TypeGet(ctx), i32 = mlirIntegerTypeGet(ctx, 32),
           i8 = mlirIntegerTypeGet(ctx, 8);
  int64_t shape[2] = {mlirShapedTypeGetDimSize(ct, 0), mlirShapedTypeGetDimSize(ct, 1)};
  MlirLocation locs[4] = {loc, loc, loc, loc};
  /* ci = sum_k ext(aq) * bq in i32 (A's bytes u8 or s8, B's s8). */
  MlirType prodTypes[3] = {i8, i8, i32};
  MlirBlock pb = mlirBlockCreate(3, prodTypes, locs);
  MlirValue ae = op1(pb, a->isUnsigned ? "arith.extui" : "arith.extsi", mlirBlockGetArgument(pb, 0), i32, loc);
  MlirValue be = op1(pb, "arith.extsi", mlirBlockGetArgument(pb, 1), i32, loc);
  MlirValue p = op2(pb, "arith.muli", ae, be, i32, loc);
  MlirValue sum = op2(pb, "arith.addi", mlirBlockGetArgument(pb, 2), p, i32, loc);
  pbcAppendOp(pb, "linalg.yield", 1, &sum, (MlirType){NULL}, loc);
  MlirValue prodOps[3] = {a->q, b->q, zeros(mm, 2, shape)};
  MlirValue ci = generic(mm, 2, prodOps,
                         "[affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, "
                         "affine_map<(d0, d1, d2) -> (d0, d1)>]",
                         "[#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>, "
                         "#linalg.iterator_type<reduction>]",
                         pb);
  /* A's zero point za: sum_k (a - za) b = ci - za * (the column sums of B):
   * a constant for a constant B, else a reduction. */
  MlirValue colSums = {NULL};
  if (a->zero)
    colSums = constantColumnSums(mm, b->q);
  if (a->zero && mlirValueIsNull(colSums)) {
    MlirType sumTypes[2] = {i8, i32};
    MlirBlock sb = mlirBlockCreate(2, sumTypes, locs);
    MlirValue s = op2(sb, "arith.addi", mlirBlockGetArgument(sb, 1),
                      op1(sb, "arith.extsi", mlirBlockGetArgument(sb, 0), i32, loc), i32, loc);
    pbcAppendOp(sb, "linalg.yield", 1, &s, (MlirType){NULL}, loc);
    MlirValue sumOps[2] = {b->q, zeros(mm, 1, &shape[1])};
    colSums = generic(mm, 1, sumOps,
                      "[affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>]",
                      "[#linalg.iterator_type<reduction>, #linalg.iterator_type<parallel>]", sb);
  }
  /* init + sitofp(ci - za * colsum) * sa * sb, the scales read per row or
   * column. */
  MlirAttribute id = mlirAffineMapAttrGet(mlirAffineMapMultiDimIdentityGet(ctx, 2));
  MlirAttribute col = mlirAttributeParseGet(ctx, pbcStr("affine_map<(d0, d1) -> (d1)>"));
  MlirValue operands[5] = {ci};
  MlirAttribute maps[5] = {id};
  MlirType argTypes[5] = {i32};
  int nIns = 1, aArg = -1, bArg = -1, zArg = -1;
  if (!mlirValueIsNull(colSums))
    zArg = nIns, operands[nIns] = colSums, maps[nIns] = col, argTypes[nIns++] = i32;
  if (!mlirValueIsNull(a->scaleIn))
    aArg = nIns, operands[nIns] = a->scaleIn, maps[nIns] = a->scaleMap, argTypes[nIns++] = f32;
  if (!mlirValueIsNull(b->scaleIn))
    bArg = nIns, operands[nIns] = b->scaleIn, maps[nIns] = b->scaleMap, argTypes[nIns++] = f32;
  operands[nIns] = init, maps[nIns] = id, argTypes[nIns] = f32;
  MlirLocation elocs[5] = {loc, loc, loc, loc, loc};
  MlirBlock body = mlirBlockCreate(nIns + 1, argTypes, elocs);
  MlirValue xi = mlirBlockGetArgument(body, 0);
  if (zArg >= 0) {
    MlirNamedAttribute za = pbcNamedAttr(ctx, "value", mlirIntegerAttrGet(i32, a->zero));
    MlirOperationState st = mlirOperationStateGet(pbcStr("arith.constant"), loc);
    mlirOperationStateAddResults(&st, 1, &i32);
    mlirOperationStateAddAttributes(&st, 1, &za);
    MlirOperation zc = mlirOperationCreate(&st);
    mlirBlockAppendOwnedOperation(body, zc);
    MlirValue shift = op2(body, "arith.muli", mlirBlockGetArgument(body, zArg), result(zc), i32, loc);
    xi = op2(body, "arith.subi", xi, shift, i32, loc);
  }
  MlirValue x = op1(body, "arith.sitofp", xi, f32, loc);
  MlirValue sa = aArg < 0 ? a->scale : mlirBlockGetArgument(body, aArg);
  MlirValue sbv = bArg < 0 ? b->scale : mlirBlockGetArgument(body, bArg);
  x = op2(body, "arith.mulf", x, sa, f32, loc);
  x = op2(body, "arith.mulf", x, sbv, f32, loc);
  x = op2(body, "arith.addf", mlirBlockGetArgument(body, nIns), x, f32, loc);
  pbcAppendOp(body, "linalg.yield", 1, &x, (MlirType){NULL}, loc);
  MlirRegion region = mlirRegionCreate();
  mlirRegionAppendOwnedBlock(region, body);
  MlirAttribute par = pbcLinalgParallelIterator(ctx);
  MlirAttribute iters[2] = {par, par};
  MlirOperation out = pbcBuildLinalgGeneric(mm, nIns, operands, ct, mlirArrayAttrGet(ctx, nIns + 1, maps),
                                            mlirArrayAttrGet(ctx, 2, iters), region);
  mlirValueReplaceAllUsesOfWith(c, mlirOperationGetResult(out, 0));
  mlirOperationDestroy(mm);
  mlirOperationDestroy(a->op);
  mlirOperationDestroy(b->op);
}

static void tryRewrite(MlirOperation mm) {
  if (mlirOperationGetNumOperands(mm) != 3 || mlirOperationGetNumResults(mm) != 1)
    return;
  MlirType ct = mlirValueGetType(mlirOperationGetResult(mm, 0));
  MlirType at = mlirValueGetType(mlirOperationGetOperand(mm, 0));
  if (!mlirTypeIsARankedTensor(ct) || !mlirShapedTypeHasStaticShape(ct) ||
      !mlirTypeIsAF32(mlirShapedTypeGetElementType(ct)) || !mlirTypeIsARankedTensor(at) ||
      !mlirShapedTypeHasStaticShape(at) || mlirShapedTypeGetDimSize(at, 1) > kMaxK)
    return;
  /* The plain A (m, k) x B (k, n) (not one with maps of its own). */
  MlirAttribute maps = mlirOperationGetAttributeByName(mm, pbcStr("indexing_maps"));
  MlirAttribute plain = mlirAttributeParseGet(
      mlirOperationGetContext(mm),
      pbcStr("[affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, "
             "affine_map<(d0, d1, d2) -> (d0, d1)>]"));
  if (!mlirAttributeIsNull(maps) && !mlirAttributeEqual(maps, plain))
    return;
  Dequant a, b;
  /* B symmetric and signed; A either way, with any one zero point (then
   * the sums must fit i32 with u8 magnitudes: K up to 65,535). */
  if (matchDequant(mlirOperationGetOperand(mm, 0), 0, mm, &a) &&
      matchDequant(mlirOperationGetOperand(mm, 1), 1, mm, &b) && !b.isUnsigned && b.zero == 0 &&
      ((!a.isUnsigned && a.zero == 0) || mlirShapedTypeGetDimSize(at, 1) <= kMaxKWide))
    rewrite(mm, &a, &b);
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  pbcOpListRewriteEach(func, "linalg.matmul", tryRewrite);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcQuantizedMatmulPass, "pbc-quantized-matmul", "func.func",
                           "matmul of dequantized i8 tensors -> i8 matmul, then the scales", run);
