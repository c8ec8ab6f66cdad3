/* Entry points of a tensor program and their C-interface types. */
#include "pbc/entry_sig.h"

#include <stdio.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Diagnostics.h"
#include "pbc/c_pass.h"

size_t pbcElemSize(PbcElemKind k) {
  static const size_t sizes[] = {4, 2, 2, 8, 1, 1, 2, 4, 8};
  return sizes[k];
}
const char *pbcElemName(PbcElemKind k) {
  static const char *const names[] = {"f32", "f16", "bf16", "f64", "i1",
                                      "i8",  "i16", "i32",  "i64"};
  return names[k];
}
const char *pbcElemCType(PbcElemKind k) {
  static const char *const names[] = {"float",  "uint16_t", "uint16_t",
                                      "double", "bool",     "int8_t",
                                      "int16_t", "int32_t", "int64_t"};
  return names[k];
}

const PbcTensorType *pbcEntrySigArg(const PbcEntrySig *sig, int i) {
  return i < sig->numInputs ? &sig->inputs[i] : &sig->outputs[i - sig->numInputs];
}

int64_t pbcTensorNumElements(const PbcTensorType *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; ++i)
    n *= t->shape[i] < 0 ? 1 : t->shape[i];
  return n;
}

bool pbcEntrySigIsSymbolic(const PbcEntrySig *sig) {
  for (int i = 0; i < sig->numInputs + sig->numOutputs; ++i) {
    const PbcTensorType *t = pbcEntrySigArg(sig, i);
    for (int d = 0; d < t->rank; ++d)
      if (PBC_SIZE_IS_SYMBOL(t->shape[d]))
        return true;
  }
  return false;
}

static bool elemKindOf(MlirType e, PbcElemKind *k) {
  if (mlirTypeIsAF32(e)) *k = PBC_ELEM_F32;
  else if (mlirTypeIsAF16(e)) *k = PBC_ELEM_F16;
  else if (mlirTypeIsABF16(e)) *k = PBC_ELEM_BF16;
  else if (mlirTypeIsAF64(e)) *k = PBC_ELEM_F64;
  else if (mlirTypeIsAInteger(e) && mlirIntegerTypeIsSignless(e)) {
    switch (mlirIntegerTypeGetWidth(e)) {
    case 1: *k = PBC_ELEM_I1; break;
    case 8: *k = PBC_ELEM_I8; break;
    case 16: *k = PBC_ELEM_I16; break;
    case 32: *k = PBC_ELEM_I32; break;
    case 64: *k = PBC_ELEM_I64; break;
    default: return false;
    }
  } else
    return false;
  return true;
}

/* sizes: the signature's sizes of a type with `?` (PBC_SIGNATURE_SIZES_ATTR's
 * element), or null. */
static bool tensorTypeFrom(MlirType t, MlirAttribute sizes, PbcTensorType *out, char *why,
                           size_t whyLen) {
  if (!mlirTypeIsARankedTensor(t)) {
    snprintf(why, whyLen, "only ranked tensor arguments and results are supported");
    return false;
  }
  bool sized = !mlirAttributeIsNull(sizes) && mlirAttributeIsADenseI64Array(sizes) &&
               mlirDenseArrayGetNumElements(sizes) == mlirShapedTypeGetRank(t);
  if (!mlirShapedTypeHasStaticShape(t) && !sized) {
    snprintf(why, whyLen, "dynamic shapes are not supported; give every dimension a size");
    return false;
  }
  int64_t rank = mlirShapedTypeGetRank(t);
  if (rank > PBC_MAX_RANK) {
    snprintf(why, whyLen, "rank %lld exceeds the supported %d", (long long)rank, PBC_MAX_RANK);
    return false;
  }
  if (!elemKindOf(mlirShapedTypeGetElementType(t), &out->elem)) {
    snprintf(why, whyLen, "unsupported element type (supported: f32, f16, bf16, f64, i1, i8, i16, i32, i64)");
    return false;
  }
  out->rank = (int)rank;
  for (int i = 0; i < rank; ++i) {
    out->shape[i] = mlirShapedTypeGetDimSize(t, i);
    if (sized && mlirShapedTypeIsDynamicDim(t, i)) {
      out->shape[i] = mlirDenseI64ArrayGetElement(sizes, i);
      if (!PBC_SIZE_IS_SYMBOL(out->shape[i]) && out->shape[i] != PBC_DYNAMIC_SIZE) {
        snprintf(why, whyLen, "a dynamic size without a symbol in " PBC_SIGNATURE_SIZES_ATTR);
        return false;
      }
    }
  }
  return true;
}

bool pbcTensorTypeFrom(MlirType t, PbcTensorType *out, char *why, size_t whyLen) {
  return tensorTypeFrom(t, (MlirAttribute){NULL}, out, why, whyLen);
}

bool pbcFuncIsPublic(MlirOperation op) {
  if (!pbcOpIsA(op, "func.func"))
    return false;
  MlirAttribute vis = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("sym_visibility"));
  if (mlirAttributeIsNull(vis))
    return true;
  MlirStringRef v = mlirStringAttrGetValue(vis);
  return v.length == 6 && strncmp(v.data, "public", 6) == 0;
}

/* Entry names become C symbols (_mlir_ciface_NAME) and header declarations. */
static bool isCIdentifier(MlirStringRef s) {
  if (s.length == 0 || (s.data[0] >= '0' && s.data[0] <= '9'))
    return false;
  for (size_t i = 0; i < s.length; ++i) {
    char c = s.data[i];
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
      return false;
  }
  return true;
}

/* Rank of float kinds by precision: lower is coarser. */
static int floatRank(PbcElemKind k) {
  return k == PBC_ELEM_BF16 ? 0 : k == PBC_ELEM_F16 ? 1 : k == PBC_ELEM_F32 ? 2 : 3;
}

static void noteFloat(MlirType t, PbcElemKind *narrowest) {
  if (mlirTypeIsAShaped(t))
    t = mlirShapedTypeGetElementType(t);
  PbcElemKind k;
  if (mlirTypeIsAFloat(t) && elemKindOf(t, &k) && floatRank(k) < floatRank(*narrowest))
    *narrowest = k;
}

static MlirWalkResult findNarrowest(MlirOperation op, void *data) {
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i)
    noteFloat(mlirValueGetType(mlirOperationGetResult(op, i)), data);
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); ++r)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r)); !mlirBlockIsNull(b);
         b = mlirBlockGetNextInRegion(b))
      for (intptr_t i = 0; i < mlirBlockGetNumArguments(b); ++i)
        noteFloat(mlirValueGetType(mlirBlockGetArgument(b, i)), data);
  return MlirWalkResultAdvance;
}

int pbcEntrySigsCollect(MlirModule m, PbcEntrySig *out, int max) {
  int n = 0;
  MlirBlock body = mlirModuleGetBody(m);
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!pbcFuncIsPublic(op))
      continue;
    if (n == max) {
      mlirEmitError(mlirOperationGetLocation(op), "too many public functions");
      return -1;
    }
    PbcEntrySig *s = &out[n];
    memset(s, 0, sizeof(*s));
    MlirStringRef name = mlirStringAttrGetValue(mlirOperationGetAttributeByName(
        op, mlirStringRefCreateFromCString("sym_name")));
    if (name.length >= sizeof(s->name) || !isCIdentifier(name)) {
      char msg[160];
      snprintf(msg, sizeof(msg),
               "entry point name must be a C identifier of at most %d characters "
               "(it names the C interface _mlir_ciface_NAME)",
               (int)sizeof(s->name) - 1);
      mlirEmitError(mlirOperationGetLocation(op), msg);
      return -1;
    }
    snprintf(s->name, sizeof(s->name), "%.*s", (int)name.length, name.data);
    MlirType ft = mlirTypeAttrGetValue(mlirOperationGetAttributeByName(
        op, mlirStringRefCreateFromCString("function_type")));
    s->numInputs = (int)mlirFunctionTypeGetNumInputs(ft);
    s->numOutputs = (int)mlirFunctionTypeGetNumResults(ft);
    if (s->numInputs + s->numOutputs > PBC_MAX_ARGS) {
      char msg[128];
      snprintf(msg, sizeof(msg), "too many arguments and results (%d; at most %d)",
               s->numInputs + s->numOutputs, PBC_MAX_ARGS);
      mlirEmitError(mlirOperationGetLocation(op), msg);
      return -1;
    }
    char why[256], msg[1536];
    MlirAttribute sized = mlirOperationGetAttributeByName(
        op, mlirStringRefCreateFromCString(PBC_SIGNATURE_SIZES_ATTR));
    bool hasSizes = !mlirAttributeIsNull(sized) && mlirAttributeIsAArray(sized) &&
                    mlirArrayAttrGetNumElements(sized) == s->numInputs + s->numOutputs;
#define SIZES_OF(i) (hasSizes ? mlirArrayAttrGetElement(sized, (i)) : (MlirAttribute){NULL})
    for (int i = 0; i < s->numInputs; ++i)
      if (!tensorTypeFrom(mlirFunctionTypeGetInput(ft, i), SIZES_OF(i), &s->inputs[i], why,
                          sizeof(why))) {
        snprintf(msg, sizeof(msg), "argument %d of @%s: %s", i, s->name, why);
        mlirEmitError(mlirOperationGetLocation(op), msg);
        return -1;
      }
    for (int i = 0; i < s->numOutputs; ++i)
      if (!tensorTypeFrom(mlirFunctionTypeGetResult(ft, i), SIZES_OF(s->numInputs + i),
                          &s->outputs[i], why, sizeof(why))) {
        snprintf(msg, sizeof(msg), "result %d of @%s: %s", i, s->name, why);
        mlirEmitError(mlirOperationGetLocation(op), msg);
        return -1;
      }
#undef SIZES_OF
    MlirAttribute bounds = mlirOperationGetAttributeByName(
        op, mlirStringRefCreateFromCString(PBC_SIZE_BOUNDS_ATTR));
    if (!mlirAttributeIsNull(bounds) && mlirAttributeIsADenseI64Array(bounds))
      for (intptr_t k = 0; k < mlirDenseArrayGetNumElements(bounds) && k < PBC_MAX_SIZE_SYMBOLS;
           ++k)
        s->symbolMax[k] = mlirDenseI64ArrayGetElement(bounds, k);
    s->narrowestFloat = PBC_ELEM_F32;
    mlirOperationWalk(op, findNarrowest, &s->narrowestFloat, MlirWalkPreOrder);
    if (s->numOutputs == 0) {
      snprintf(msg, sizeof(msg), "@%s returns nothing: an entry point must return at least one tensor", s->name);
      mlirEmitError(mlirOperationGetLocation(op), msg);
      return -1;
    }
    ++n;
  }
  return n;
}
