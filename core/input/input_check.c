/* The front door: what pbc accepts as a tensor program, checked before S1 so
 * users get one located error instead of a failure deep in a stage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Diagnostics.h"
#include "pbc/c_pass.h"
#include "pbc/importer_checks.h"
#include "pbc/ir_build.h"
#include "pbc/entry_sig.h"
#include "pbc/session.h"

/* Dialects a frontend's tensor program may use. */
static const char *const kAccepted[] = {"builtin", "func",  "arith", "math",
                                        "linalg",  "tensor", "tosa", NULL};

static bool accepted(MlirOperation op) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  const char *dot = memchr(n.data, '.', n.length);
  size_t ns = dot ? (size_t)(dot - n.data) : n.length;
  for (const char *const *d = kAccepted; *d; ++d)
    if (strlen(*d) == ns && strncmp(n.data, *d, ns) == 0)
      return true;
  return false;
}

typedef struct {
  bool ok;
} WalkState;

/* The largest buffer pbc compiles for: 2^47 bytes, the user address space
 * of x86-64 and AArch64 Linux. A larger (or overflowing) byte count would
 * wrap in the generated allocation and sizes. */
static const int64_t kMaxBufferBytes = (int64_t)1 << 47;

/* Bytes of a statically shaped tensor or memref type; -1 when they exceed
 * kMaxBufferBytes (computed without overflow); 0 for other types. */
static int64_t shapedBytes(MlirType t) {
  if (!mlirTypeIsARankedTensor(t) && !mlirTypeIsAMemRef(t))
    return 0;
  MlirType e = mlirShapedTypeGetElementType(t);
  int64_t bytes = mlirTypeIsAFloat(e)     ? (mlirFloatTypeGetWidth(e) + 7) / 8
                  : mlirTypeIsAInteger(e) ? (mlirIntegerTypeGetWidth(e) + 7) / 8
                                          : 8;
  if (bytes <= 0)
    bytes = 1;
  for (intptr_t d = 0; d < mlirShapedTypeGetRank(t); ++d) {
    int64_t n = mlirShapedTypeGetDimSize(t, d);
    if (mlirShapedTypeIsDynamicSize(n))
      return 0; /* reported by the signature check, or by a stage */
    if (n != 0 && bytes > kMaxBufferBytes / n)
      return -1;
    bytes *= n;
  }
  return bytes;
}

static bool checkSizes(MlirOperation op) {
  char name[128];
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i)
    if (shapedBytes(mlirValueGetType(mlirOperationGetResult(op, i))) < 0) {
      pbcEmitOpError(op, "result %ld of '%s' is larger than the 2^47 bytes pbc can address",
                     (long)i, pbcOpName(op, name, sizeof(name)));
      return false;
    }
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); ++r)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r)); !mlirBlockIsNull(b);
         b = mlirBlockGetNextInRegion(b))
      for (intptr_t i = 0; i < mlirBlockGetNumArguments(b); ++i)
        if (shapedBytes(mlirValueGetType(mlirBlockGetArgument(b, i))) < 0) {
          pbcEmitOpError(op, "argument %ld of '%s' is larger than the 2^47 bytes pbc can address",
                         (long)i, pbcOpName(op, name, sizeof(name)));
          return false;
        }
  return true;
}

/* Every element of a dense integer attribute (elements or i64 array) is at
 * least `min`; true for an absent attribute. */
static bool allAtLeast(MlirAttribute a, int64_t min) {
  if (mlirAttributeIsNull(a))
    return true;
  if (mlirAttributeIsADenseI64Array(a)) {
    for (intptr_t i = 0; i < mlirDenseArrayGetNumElements(a); ++i)
      if (mlirDenseI64ArrayGetElement(a, i) < min)
        return false;
    return true;
  }
  if (mlirAttributeIsADenseIntElements(a)) {
    for (intptr_t i = 0; i < mlirElementsAttrGetNumElements(a); ++i)
      if (mlirDenseElementsAttrGetInt64Value(a, i) < min)
        return false;
  }
  return true;
}

/* What MLIR's verifiers let through and the stages cannot lower: negative
 * padding (bufferization crashed on it), and convolution or pooling strides
 * and dilations below 1 (they read outside the input). */
static bool checkAttributes(MlirOperation op) {
  char name[128];
  pbcOpName(op, name, sizeof(name));
  if (pbcOpIsA(op, "tensor.pad")) {
    static const char *const pads[] = {"static_low", "static_high"};
    for (int k = 0; k < 2; ++k)
      if (!allAtLeast(mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(pads[k])),
                      0)) {
        pbcEmitOpError(op, "'tensor.pad' with a negative padding is not supported");
        return false;
      }
  }
  if (strncmp(name, "linalg.conv", 11) == 0 || strncmp(name, "linalg.depthwise", 16) == 0 ||
      strncmp(name, "linalg.pooling", 14) == 0) {
    static const char *const keys[] = {"strides", "dilations"};
    for (int k = 0; k < 2; ++k)
      if (!allAtLeast(mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(keys[k])),
                      1)) {
        pbcEmitOpError(op, "'%s' %s must be at least 1", name, keys[k]);
        return false;
      }
  }
  return true;
}

/* A linalg.generic output whose subscripts are not distinct loop indices
 * (d0 floordiv 2; a constant other than 0 into a dimension of 1), or that
 * leaves out a parallel loop, is written by several iterations at some
 * elements (which one lands is undefined) and may leave others unwritten:
 * MLIR's verifier lets it through, and pbc's code and a naive reference
 * then disagree. */
static bool checkGenericOutputs(MlirOperation op) {
  if (!pbcOpIsA(op, "linalg.generic"))
    return true;
  MlirAttribute seg = mlirOperationGetAttributeByName(op, pbcStr("operandSegmentSizes"));
  MlirAttribute maps = mlirOperationGetAttributeByName(op, pbcStr("indexing_maps"));
  MlirAttribute iters = mlirOperationGetAttributeByName(op, pbcStr("iterator_types"));
  if (mlirAttributeIsNull(seg) || mlirAttributeIsNull(maps) || mlirAttributeIsNull(iters))
    return true; /* the verifier's to report */
  intptr_t nIns = mlirDenseI32ArrayGetElement(seg, 0), nOuts = mlirDenseI32ArrayGetElement(seg, 1);
  intptr_t nLoops = mlirArrayAttrGetNumElements(iters);
  if (mlirArrayAttrGetNumElements(maps) != nIns + nOuts || nLoops > 64)
    return true;
  MlirAttribute parallel = pbcLinalgParallelIterator(mlirOperationGetContext(op));
  for (intptr_t o = 0; o < nOuts; ++o) {
    MlirAffineMap map = mlirAffineMapAttrGetValue(mlirArrayAttrGetElement(maps, nIns + o));
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, nIns + o));
    bool used[64] = {false};
    for (intptr_t r = 0; r < mlirAffineMapGetNumResults(map); ++r) {
      MlirAffineExpr e = mlirAffineMapGetResult(map, r);
      bool unitZero = mlirAffineExprIsAConstant(e) && mlirAffineConstantExprGetValue(e) == 0 &&
                      mlirShapedTypeHasRank(t) && r < mlirShapedTypeGetRank(t) &&
                      mlirShapedTypeGetDimSize(t, r) == 1;
      intptr_t d = mlirAffineExprIsADim(e) ? mlirAffineDimExprGetPosition(e) : -1;
      if (unitZero)
        continue;
      if (d < 0 || d >= nLoops || used[d]) {
        pbcEmitOpError(op,
                       "'linalg.generic' output %ld: subscript %ld is not a loop index of its "
                       "own (several iterations would write one element)",
                       (long)o, (long)r);
        return false;
      }
      used[d] = true;
    }
    for (intptr_t d = 0; d < nLoops; ++d)
      if (!used[d] && mlirAttributeEqual(mlirArrayAttrGetElement(iters, d), parallel)) {
        pbcEmitOpError(op,
                       "'linalg.generic' output %ld leaves out parallel loop d%ld (its "
                       "iterations would write the same elements)",
                       (long)o, (long)d);
        return false;
      }
  }
  return true;
}

static MlirWalkResult checkOp(MlirOperation op, void *ud) {
  WalkState *st = ud;
  if (!accepted(op)) {
    char name[128];
    pbcEmitOpError(op,
                   "unsupported op '%s': pbc accepts linalg, tensor, arith, math, "
                   "func and tosa ops on tensors",
                   pbcOpName(op, name, sizeof(name)));
    st->ok = false;
    return MlirWalkResultInterrupt;
  }
  if (pbcOpIsA(op, "func.func") &&
      mlirBlockIsNull(mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0)))) {
    pbcEmitOpError(op, "external function declarations are not supported");
    st->ok = false;
    return MlirWalkResultInterrupt;
  }
  if (!checkSizes(op) || !checkAttributes(op) || !checkGenericOutputs(op)) {
    st->ok = false;
    return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

/* Inputs belong to the caller: bufferization must not write results into
 * them (it may when function arguments are writable). Existing argument
 * attributes are kept; bufferization.writable is set to false in each. */
static void markInputsReadOnly(MlirOperation func, MlirContext ctx) {
  MlirBlock entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  intptr_t n = mlirBlockGetNumArguments(entry);
  if (n == 0)
    return;
  MlirStringRef argAttrsName = mlirStringRefCreateFromCString("arg_attrs");
  MlirAttribute old = mlirOperationGetAttributeByName(func, argAttrsName);
  MlirIdentifier writable =
      mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("bufferization.writable"));
  MlirAttribute dicts[n];
  for (intptr_t i = 0; i < n; ++i) {
    MlirAttribute d = mlirAttributeIsNull(old) ? (MlirAttribute){NULL}
                                               : mlirArrayAttrGetElement(old, i);
    intptr_t m = mlirAttributeIsNull(d) ? 0 : mlirDictionaryAttrGetNumElements(d);
    MlirNamedAttribute elems[m + 1];
    intptr_t k = 0;
    for (intptr_t e = 0; e < m; ++e) {
      MlirNamedAttribute na = mlirDictionaryAttrGetElement(d, e);
      if (!mlirIdentifierEqual(na.name, writable))
        elems[k++] = na;
    }
    elems[k++] = mlirNamedAttributeGet(writable, mlirBoolAttrGet(ctx, 0));
    dicts[i] = mlirDictionaryAttrGet(ctx, k, elems);
  }
  mlirOperationSetAttributeByName(func, argAttrsName, mlirArrayAttrGet(ctx, n, dicts));
}

bool pbcSessionCheckInput(PbcSession *s, MlirModule m) {
  (void)s;
  if (!pbcResolveImporterChecks(m))
    return false;
  MlirOperation mod = mlirModuleGetOperation(m);
  WalkState st = {true};
  mlirOperationWalk(mod, checkOp, &st, MlirWalkPreOrder);
  if (!st.ok)
    return false;
  PbcEntrySig *sigs = calloc(64, sizeof(PbcEntrySig)); /* large: heap */
  int n = pbcEntrySigsCollect(m, sigs, 64);
  free(sigs);
  if (n < 0)
    return false;
  if (n == 0) {
    mlirEmitError(mlirOperationGetLocation(mod),
                  "no public function: nothing to compile");
    return false;
  }
  /* Entry points get MLIR's standard C interface (_mlir_ciface_NAME). */
  MlirContext ctx = mlirOperationGetContext(mod);
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(m));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (!pbcOpIsA(op, "func.func"))
      continue;
    if (!pbcFuncIsPublic(op))
      continue;
    mlirOperationSetAttributeByName(
        op, mlirStringRefCreateFromCString("llvm.emit_c_interface"),
        mlirUnitAttrGet(ctx));
    markInputsReadOnly(op, ctx);
  }
  return true;
}
