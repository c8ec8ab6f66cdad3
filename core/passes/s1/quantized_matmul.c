/* pbc-quantized-matmul: a float matmul of two dequantized i8 tensors,
 *   %a = linalg.generic ins(%aq : i8, ..) { sitofp(aq) * sa }      (m, k)
 *   %b = linalg.generic ins(%bq : i8, ..) { sitofp(bq - zb) * sb }  (k, n)
 *   %c = linalg.matmul ins(%a, %b) outs(%init)
 * becomes an integer matmul and the scales after it:
 *   %ci = linalg.matmul ins(%aq, %bq : i8, i8) outs(fill 0 : i32)
 *   %c  = linalg.generic ins(%ci, ..) outs(%init) { init + sitofp(ci) * sa * sb }
 * where each scale is one value (per tensor) or read per row of A (m) or
 * per column of B (n: per output channel), and zero points, if any, are
 * constants that are all zero (symmetric quantization).
 *
 * Why: this is what quantized models look like once imported (torch-mlir
 * turns ONNX's QDQ MatMul with per-channel weight scales into exactly
 * this; per-tensor ones it fuses into linalg.quantized_matmul itself), and
 * as float it runs as an f32 GEMM on dequantized weights, four times the
 * bytes. As i8 it runs on the integer units (AVX-512 VNNI's vpdpbusd:
 * pbc-dot-i8; mma.sync / MFMA i8 on GPUs). The sums are exact in i32 (at
 * most 2^14 per product: K up to 131,071), then scaled once; the float
 * form rounded every partial sum, so the results differ by float rounding
 * only.
 *
 * Applies to linalg.matmul with an f32 result whose two inputs are such
 * generics (all parallel, identity maps on the i8 input and the output,
 * used only by this matmul), each scale a value from outside the generic
 * or an input read through a map of A's row (or B's column) alone. */
#include <stdbool.h>
#include <string.h>

#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/op_list.h"
#include "passes/passes.h"
#include "passes/s1/layout.h"

enum { kMaxK = 131071 };

/* What a dequantizing generic gives: its i8 input, and its scale as a
 * value from outside (scalar) or an input with its indexing map. */
typedef struct {
  MlirOperation op;
  MlirValue q;        /* the i8 tensor */
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

/* v is 0: an integer constant 0, or a block argument of g whose input is a
 * dense constant that is all zero. */
static bool isZero(MlirValue v, MlirOperation g) {
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
  if (mlirAttributeIsAInteger(a))
    return mlirIntegerAttrGetValueInt(a) == 0;
  return mlirAttributeIsADenseElements(a) && mlirDenseElementsAttrIsSplat(a) &&
         mlirAttributeIsAInteger(mlirDenseElementsAttrGetSplatValue(a)) &&
         mlirIntegerAttrGetValueInt(mlirDenseElementsAttrGetSplatValue(a)) == 0;
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
  MlirOperation sub = defOp(x);
  if (!mlirOperationIsNull(sub) && pbcOpIsA(sub, "arith.subi")) {
    MlirOperation xe = defOp(mlirOperationGetOperand(sub, 0)),
                  ze = defOp(mlirOperationGetOperand(sub, 1));
    if (mlirOperationIsNull(xe) || mlirOperationIsNull(ze) || !pbcOpIsA(xe, "arith.extsi") ||
        !pbcOpIsA(ze, "arith.extsi") || !isZero(mlirOperationGetOperand(ze, 0), g))
      return false;
    x = mlirOperationGetOperand(xe, 0);
    ops += 3;
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

static void rewrite(MlirOperation mm, const Dequant *a, const Dequant *b) {
  MlirContext ctx = mlirOperationGetContext(mm);
  MlirLocation loc = mlirOperationGetLocation(mm);
  MlirValue c = mlirOperationGetResult(mm, 0), init = mlirOperationGetOperand(mm, 2);
  MlirType ct = mlirValueGetType(c), f32 = mlirF32TypeGet(ctx), i32 = mlirIntegerTypeGet(ctx, 32);
  int64_t shape[2] = {mlirShapedTypeGetDimSize(ct, 0), mlirShapedTypeGetDimSize(ct, 1)};
  MlirType it = mlirRankedTensorTypeGet(2, shape, i32, mlirAttributeGetNull());
  /* The integer product into a zero-filled i32 tensor. */
  MlirNamedAttribute zero = pbcNamedAttr(ctx, "value", mlirIntegerAttrGet(i32, 0));
  MlirValue z = mlirOperationGetResult(pbcBuildOp(mm, "arith.constant", 0, NULL, i32, 1, &zero), 0);
  MlirValue e = mlirOperationGetResult(pbcBuildOp(mm, "tensor.empty", 0, NULL, it, 0, NULL), 0);
  MlirValue fillOps[2] = {z, e};
  MlirValue fill = mlirOperationGetResult(pbcBuildNamedLinalg(mm, "linalg.fill", 1, fillOps, it, 0, NULL), 0);
  MlirValue mmOps[3] = {a->q, b->q, fill};
  MlirValue ci = mlirOperationGetResult(pbcBuildNamedLinalg(mm, "linalg.matmul", 2, mmOps, it, 0, NULL), 0);
  /* init + sitofp(ci) * sa * sb, the scales read per row or column. */
  MlirAttribute id = mlirAffineMapAttrGet(mlirAffineMapMultiDimIdentityGet(ctx, 2));
  MlirValue operands[4] = {ci};
  MlirAttribute maps[4] = {id};
  MlirType argTypes[4] = {i32};
  int nIns = 1, aArg = -1, bArg = -1;
  if (!mlirValueIsNull(a->scaleIn))
    aArg = nIns, operands[nIns] = a->scaleIn, maps[nIns] = a->scaleMap, argTypes[nIns++] = f32;
  if (!mlirValueIsNull(b->scaleIn))
    bArg = nIns, operands[nIns] = b->scaleIn, maps[nIns] = b->scaleMap, argTypes[nIns++] = f32;
  operands[nIns] = init, maps[nIns] = id, argTypes[nIns] = f32;
  MlirLocation locs[4] = {loc, loc, loc, loc};
  MlirBlock body = mlirBlockCreate(nIns + 1, argTypes, locs);
  MlirValue x0 = mlirBlockGetArgument(body, 0);
  MlirValue x = mlirOperationGetResult(pbcAppendOp(body, "arith.sitofp", 1, &x0, f32, loc), 0);
  MlirValue sa = aArg < 0 ? a->scale : mlirBlockGetArgument(body, aArg);
  MlirValue sb = bArg < 0 ? b->scale : mlirBlockGetArgument(body, bArg);
  MlirValue m1[2] = {x, sa};
  x = mlirOperationGetResult(pbcAppendOp(body, "arith.mulf", 2, m1, f32, loc), 0);
  MlirValue m2[2] = {x, sb};
  x = mlirOperationGetResult(pbcAppendOp(body, "arith.mulf", 2, m2, f32, loc), 0);
  MlirValue add[2] = {mlirBlockGetArgument(body, nIns), x};
  x = mlirOperationGetResult(pbcAppendOp(body, "arith.addf", 2, add, f32, loc), 0);
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
  if (matchDequant(mlirOperationGetOperand(mm, 0), 0, mm, &a) &&
      matchDequant(mlirOperationGetOperand(mm, 1), 1, mm, &b))
    rewrite(mm, &a, &b);
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  pbcOpListRewriteEach(func, "linalg.matmul", tryRewrite);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcQuantizedMatmulPass, "pbc-quantized-matmul", "func.func",
                           "matmul of dequantized i8 tensors -> i8 matmul, then the scales", run);
