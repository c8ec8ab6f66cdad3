/* Entry points with dynamic sizes compiled for given ones
 * (pbc/specialize_shapes.h). */
#include "pbc/specialize_shapes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/isolate.h"
#include "pbc/op_list.h"
#include "pbc/strbuf.h"

/* --- the spec ---------------------------------------------------------------- */

static bool parseOne(PbcShapeSpec *spec, const char *s, size_t len, char *why, size_t whyLen) {
  char item[512];
  if (len >= sizeof(item)) {
    snprintf(why, whyLen, "a shape of more than %zu characters", sizeof(item) - 1);
    return false;
  }
  memcpy(item, s, len);
  item[len] = 0;
  if (spec->numShapes == PBC_MAX_SHAPE_SPECS) {
    snprintf(why, whyLen, "more than %d shapes", PBC_MAX_SHAPE_SPECS);
    return false;
  }
  char *eq = strchr(item, '=');
  if (!eq) {
    snprintf(why, whyLen, "'%s' is not [ENTRY:]ARG=D0xD1x...", item);
    return false;
  }
  *eq = 0;
  char *colon = strchr(item, ':');
  const char *argText = colon ? colon + 1 : item;
  PbcGivenShape *sh = &spec->shapes[spec->numShapes];
  memset(sh, 0, sizeof(*sh));
  if (colon) {
    *colon = 0;
    if (!*item || strlen(item) >= sizeof(sh->entry)) {
      snprintf(why, whyLen, "bad entry name in '%s:%s'", item, argText);
      return false;
    }
    memcpy(sh->entry, item, strlen(item) + 1); /* fits: checked above */
  }
  char *end;
  long arg = strtol(argText, &end, 10);
  if (!*argText || *end || arg < 0 || arg >= PBC_MAX_ARGS) {
    snprintf(why, whyLen, "bad argument position '%s' (expected 0 to %d)", argText,
             PBC_MAX_ARGS - 1);
    return false;
  }
  sh->arg = (int)arg;
  for (const char *d = eq + 1; *d;) {
    if (sh->rank == PBC_MAX_RANK) {
      snprintf(why, whyLen, "argument %ld: more than %d dimensions", arg, PBC_MAX_RANK);
      return false;
    }
    long long v = strtoll(d, &end, 10);
    if (end == d || v < 0 || v > ((long long)1 << 40) || (*end && *end != 'x')) {
      snprintf(why, whyLen, "argument %ld: bad dimensions '%s' (expected D0xD1x..., each 0 or more)",
               arg, eq + 1);
      return false;
    }
    sh->dims[sh->rank++] = v;
    d = *end ? end + 1 : end;
    if (*end && !*d) {
      snprintf(why, whyLen, "argument %ld: '%s' ends in 'x'", arg, eq + 1);
      return false;
    }
  }
  spec->numShapes++;
  return true;
}

bool pbcShapeSpecParse(PbcShapeSpec *spec, const char *text, char *why, size_t whyLen) {
  for (const char *p = text; *p;) {
    const char *semi = strchr(p, ';');
    size_t len = semi ? (size_t)(semi - p) : strlen(p);
    if (len && !parseOne(spec, p, len, why, whyLen))
      return false;
    p += len + (semi ? 1 : 0);
  }
  return true;
}

/* --- types -------------------------------------------------------------------- */

static bool isDynamicTensor(MlirType t) {
  return mlirTypeIsARankedTensor(t) && !mlirShapedTypeHasStaticShape(t);
}

static bool isDynamicShaped(MlirType t) {
  return (mlirTypeIsARankedTensor(t) || mlirTypeIsAMemRef(t)) && !mlirShapedTypeHasStaticShape(t);
}

static MlirType functionType(MlirOperation f) {
  return mlirTypeAttrGetValue(mlirOperationGetAttributeByName(f, pbcStr("function_type")));
}

static void setFunctionType(MlirOperation f, MlirType t) {
  mlirOperationSetAttributeByName(f, pbcStr("function_type"), mlirTypeAttrGet(t));
}

static MlirStringRef funcName(MlirOperation f) {
  return mlirStringAttrGetValue(mlirOperationGetAttributeByName(f, pbcStr("sym_name")));
}

static void typeText(MlirType t, char *buf, size_t len) {
  PbcStrBuf b = {0};
  mlirTypePrint(t, pbcStrBufCallback, &b);
  snprintf(buf, len, "%s", pbcStrBufGet(&b));
  pbcStrBufDestroy(&b);
}

bool pbcFuncHasDynamicEntry(MlirOperation f) {
  MlirType ft = functionType(f);
  for (intptr_t i = 0; i < mlirFunctionTypeGetNumInputs(ft); ++i)
    if (isDynamicTensor(mlirFunctionTypeGetInput(ft, i)))
      return true;
  for (intptr_t i = 0; i < mlirFunctionTypeGetNumResults(ft); ++i)
    if (isDynamicTensor(mlirFunctionTypeGetResult(ft, i)))
      return true;
  return false;
}

bool pbcModuleHasDynamicEntries(MlirModule m) {
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(m)); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (pbcFuncIsPublic(op) && pbcFuncHasDynamicEntry(op))
      return true;
  return false;
}

/* --- arguments ---------------------------------------------------------------- */

static bool shapeApplies(const PbcGivenShape *sh, MlirStringRef name,
                         int arg) {
  return sh->arg == arg && (!sh->entry[0] || (strlen(sh->entry) == name.length &&
                                              strncmp(sh->entry, name.data, name.length) == 0));
}

/* The static type argument `arg` of f takes, from the spec; a null type
 * (after an error) when the spec contradicts it or leaves a size open. */
static MlirType staticArgType(MlirOperation f, int arg, MlirType t, const PbcShapeSpec *spec) {
  MlirStringRef name = funcName(f);
  char tt[256];
  int rank = (int)mlirShapedTypeGetRank(t);
  int64_t dims[PBC_MAX_RANK];
  bool given = false;
  if (rank > PBC_MAX_RANK) {
    if (!isDynamicTensor(t))
      return t; /* the signature check names it */
    pbcEmitOpError(f, "argument %d of @%.*s has rank %d; pbc supports at most %d", arg,
                   (int)name.length, name.data, rank, PBC_MAX_RANK);
    return (MlirType){NULL};
  }
  for (int s = 0; s < spec->numShapes; ++s) {
    if (!shapeApplies(&spec->shapes[s], name, arg))
      continue;
    typeText(t, tt, sizeof(tt));
    if (spec->shapes[s].rank != rank) {
      pbcEmitOpError(f, "argument %d of @%.*s is %s: --shape gives it %d dimensions", arg,
                     (int)name.length, name.data, tt, spec->shapes[s].rank);
      return (MlirType){NULL};
    }
    for (int d = 0; d < rank; ++d) {
      int64_t have = mlirShapedTypeGetDimSize(t, d);
      if (!mlirShapedTypeIsDynamicSize(have) && have != spec->shapes[s].dims[d]) {
        pbcEmitOpError(f, "argument %d of @%.*s is %s: --shape gives dimension %d the size %lld",
                       arg, (int)name.length, name.data, tt, d,
                       (long long)spec->shapes[s].dims[d]);
        return (MlirType){NULL};
      }
      dims[d] = spec->shapes[s].dims[d];
    }
    given = true;
    break;
  }
  if (!given) {
    if (!isDynamicTensor(t))
      return t;
    for (int d = 0; d < rank; ++d) {
      dims[d] = mlirShapedTypeGetDimSize(t, d);
      if (mlirShapedTypeIsDynamicSize(dims[d])) {
        if (spec->dim <= 0) {
          typeText(t, tt, sizeof(tt));
          pbcEmitOpError(f,
                         "argument %d of @%.*s has dynamic sizes (%s): give them (pbc "
                         "--shape=%d=D0x..., --dim=N; libpbc pbcProgramCompileShaped), or "
                         "compile a library (--emit=lib), which serves every size",
                         arg, (int)name.length, name.data, tt, arg);
          return (MlirType){NULL};
        }
        dims[d] = spec->dim;
      }
    }
  }
  return mlirRankedTensorTypeGet(rank, dims, mlirShapedTypeGetElementType(t),
                                 mlirRankedTensorTypeGetEncoding(t));
}

/* Gives f's arguments static types, with casts to the old ones for their
 * uses. */
static bool specializeArguments(MlirOperation f, const PbcShapeSpec *spec) {
  MlirType ft = functionType(f);
  int nIn = (int)mlirFunctionTypeGetNumInputs(ft), nOut = (int)mlirFunctionTypeGetNumResults(ft);
  MlirType *ins = calloc((size_t)nIn + (size_t)nOut + 1, sizeof(MlirType));
  MlirType *outs = ins + nIn;
  bool ok = true, changed = false;
  MlirBlock entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
  for (int i = 0; ok && i < nIn; ++i) {
    MlirType t = mlirFunctionTypeGetInput(ft, i);
    ins[i] = t;
    if (!mlirTypeIsARankedTensor(t))
      continue;
    MlirType st = staticArgType(f, i, t, spec);
    if (mlirTypeIsNull(st)) {
      ok = false;
      break;
    }
    if (mlirTypeEqual(st, t) || mlirBlockIsNull(entry))
      continue;
    MlirValue arg = mlirBlockGetArgument(entry, i);
    mlirValueSetType(arg, st);
    MlirOperation cast =
        pbcBuildOp(mlirBlockGetFirstOperation(entry), "tensor.cast", 1, &arg, t, 0, NULL);
    mlirValueReplaceAllUsesExcept(arg, mlirOperationGetResult(cast, 0), 1, &cast);
    ins[i] = st;
    changed = true;
  }
  for (int i = 0; i < nOut; ++i)
    outs[i] = mlirFunctionTypeGetResult(ft, i);
  if (ok && changed)
    setFunctionType(f, mlirFunctionTypeGet(mlirOperationGetContext(f), nIn, ins, nOut, outs));
  free(ins);
  return ok;
}

/* --- results ------------------------------------------------------------------- */

/* Returns a cast's more static source in place of the cast, and gives f's
 * results the types returned. True if anything changed. */
static bool refineResults(MlirOperation f) {
  PbcOpList returns = {0};
  pbcOpListCollect(&returns, f, "func.return");
  MlirOperation ret = returns.n == 1 ? returns.ops[0] : (MlirOperation){NULL};
  pbcOpListDestroy(&returns);
  if (mlirOperationIsNull(ret))
    return false;
  MlirType ft = functionType(f);
  int nIn = (int)mlirFunctionTypeGetNumInputs(ft), nOut = (int)mlirFunctionTypeGetNumResults(ft);
  if (mlirOperationGetNumOperands(ret) != nOut)
    return false;
  MlirType *ins = calloc((size_t)nIn + (size_t)nOut + 1, sizeof(MlirType));
  MlirType *outs = ins + nIn;
  bool changed = false;
  for (int i = 0; i < nIn; ++i)
    ins[i] = mlirFunctionTypeGetInput(ft, i);
  for (int i = 0; i < nOut; ++i) {
    MlirValue v = mlirOperationGetOperand(ret, i);
    outs[i] = mlirFunctionTypeGetResult(ft, i);
    if (!isDynamicTensor(outs[i]))
      continue;
    if (mlirValueIsAOpResult(v) && pbcOpIsA(mlirOpResultGetOwner(v), "tensor.cast")) {
      MlirValue src = mlirOperationGetOperand(mlirOpResultGetOwner(v), 0);
      if (mlirTypeIsARankedTensor(mlirValueGetType(src))) {
        mlirOperationSetOperand(ret, i, src);
        v = src;
      }
    }
    if (!mlirTypeEqual(mlirValueGetType(v), outs[i])) {
      outs[i] = mlirValueGetType(v);
      changed = true;
    }
  }
  if (changed)
    setFunctionType(f, mlirFunctionTypeGet(mlirOperationGetContext(f), nIn, ins, nOut, outs));
  free(ins);
  return changed;
}

/* --- reshapes by a shape tensor --------------------------------------------------- */

/* The static type a value has before a tensor.cast that made it dynamic
 * (or its own, when static); null if neither. */
static MlirValue staticSource(MlirValue v) {
  if (mlirTypeIsARankedTensor(mlirValueGetType(v)) && mlirShapedTypeHasStaticShape(mlirValueGetType(v)))
    return v;
  if (mlirValueIsAOpResult(v) && pbcOpIsA(mlirOpResultGetOwner(v), "tensor.cast")) {
    MlirValue src = mlirOperationGetOperand(mlirOpResultGetOwner(v), 0);
    MlirType t = mlirValueGetType(src);
    if (mlirTypeIsARankedTensor(t) && mlirShapedTypeHasStaticShape(t))
      return src;
  }
  return (MlirValue){NULL};
}

static MlirAttribute reassociationAll(MlirContext ctx, int rank) {
  MlirAttribute dims[PBC_MAX_RANK];
  for (int d = 0; d < rank; ++d)
    dims[d] = mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), d);
  MlirAttribute group = mlirArrayAttrGet(ctx, rank, dims);
  return mlirArrayAttrGet(ctx, 1, &group);
}

/* tensor.reshape %x(%shape) with a constant %shape (the sizes folded to
 * constants) of a static %x: torch-mlir writes ONNX's Reshape so; MLIR's
 * canonicalization leaves its result dynamic. It becomes a collapse of %x
 * to one dimension and an expand to the shape (canonicalization merges
 * the two where it can), cast to the old type for the uses. True if any
 * changed. */
static bool staticReshapes(MlirOperation f) {
  PbcOpList l = {0};
  pbcOpListCollect(&l, f, "tensor.reshape");
  bool changed = false;
  MlirContext ctx = mlirOperationGetContext(f);
  for (int i = 0; i < l.n; ++i) {
    MlirOperation op = l.ops[i];
    MlirType rt = mlirValueGetType(mlirOperationGetResult(op, 0));
    MlirValue src = staticSource(mlirOperationGetOperand(op, 0));
    MlirValue shape = mlirOperationGetOperand(op, 1);
    if (!isDynamicTensor(rt) || mlirValueIsNull(src) || !mlirValueIsAOpResult(shape) ||
        !pbcOpIsA(mlirOpResultGetOwner(shape), "arith.constant"))
      continue;
    MlirAttribute value =
        mlirOperationGetAttributeByName(mlirOpResultGetOwner(shape), pbcStr("value"));
    int rank = (int)mlirShapedTypeGetRank(rt);
    MlirType st = mlirValueGetType(src);
    int srcRank = (int)mlirShapedTypeGetRank(st);
    if (!mlirAttributeIsADenseIntElements(value) || rank < 1 || rank > PBC_MAX_RANK ||
        srcRank < 1 || mlirElementsAttrGetNumElements(value) != rank)
      continue;
    int64_t dims[PBC_MAX_RANK], n = 1, srcN = 1;
    for (int d = 0; d < srcRank; ++d)
      srcN *= mlirShapedTypeGetDimSize(st, d);
    bool ok = true;
    for (int d = 0; d < rank; ++d) {
      dims[d] = mlirDenseElementsAttrGetInt64Value(value, d);
      int64_t have = mlirShapedTypeGetDimSize(rt, d);
      ok &= dims[d] >= 0 && (mlirShapedTypeIsDynamicSize(have) || have == dims[d]);
      n *= dims[d];
    }
    if (!ok || n != srcN)
      continue; /* left to the checks: a reshape of the wrong size is the input's fault */
    MlirType elem = mlirShapedTypeGetElementType(rt);
    MlirType flat = mlirRankedTensorTypeGet(1, &srcN, elem, mlirAttributeGetNull());
    MlirType target = mlirRankedTensorTypeGet(rank, dims, elem, mlirAttributeGetNull());
    MlirNamedAttribute collapseAttr =
        pbcNamedAttr(ctx, "reassociation", reassociationAll(ctx, srcRank));
    MlirOperation collapse = pbcBuildOp(op, "tensor.collapse_shape", 1, &src, flat, 1, &collapseAttr);
    MlirValue flatV = mlirOperationGetResult(collapse, 0);
    MlirNamedAttribute expandAttrs[2] = {
        pbcNamedAttr(ctx, "reassociation", reassociationAll(ctx, rank)),
        pbcNamedAttr(ctx, "static_output_shape", mlirDenseI64ArrayGet(ctx, rank, dims))};
    MlirOperation expand = pbcBuildOp(op, "tensor.expand_shape", 1, &flatV, target, 2, expandAttrs);
    MlirValue expanded = mlirOperationGetResult(expand, 0);
    MlirOperation cast = pbcBuildOp(op, "tensor.cast", 1, &expanded, rt, 0, NULL);
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), mlirOperationGetResult(cast, 0));
    mlirOperationDestroy(op);
    changed = true;
  }
  pbcOpListDestroy(&l);
  return changed;
}

/* --- what stays dynamic --------------------------------------------------------- */

static MlirWalkResult findDynamic(MlirOperation op, void *data) {
  MlirOperation *found = data;
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i)
    if (isDynamicShaped(mlirValueGetType(mlirOperationGetResult(op, i)))) {
      *found = op;
      return MlirWalkResultInterrupt;
    }
  return MlirWalkResultAdvance;
}

static bool checkStatic(MlirOperation f) {
  MlirOperation op = {NULL};
  mlirOperationWalk(f, findDynamic, &op, MlirWalkPreOrder);
  MlirType ft = functionType(f);
  MlirStringRef name = funcName(f);
  char tt[256], on[128];
  if (!mlirOperationIsNull(op)) {
    for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i) {
      MlirType t = mlirValueGetType(mlirOperationGetResult(op, i));
      if (isDynamicShaped(t)) {
        typeText(t, tt, sizeof(tt));
        break;
      }
    }
    /* The casts this file adds have no location of their own: the
     * function's stands for them. */
    MlirLocation loc = mlirOperationGetLocation(op);
    bool unknown = mlirLocationEqual(loc, mlirLocationUnknownGet(mlirOperationGetContext(op)));
    pbcEmitOpError(unknown ? f : op,
                   "'%s' in @%.*s keeps a dynamic shape (%s) once the entry's sizes are fixed: "
                   "pbc compiles static shapes only",
                   pbcOpName(op, on, sizeof(on)), (int)name.length, name.data, tt);
    return false;
  }
  for (intptr_t i = 0; i < mlirFunctionTypeGetNumResults(ft); ++i)
    if (isDynamicTensor(mlirFunctionTypeGetResult(ft, i))) {
      typeText(mlirFunctionTypeGetResult(ft, i), tt, sizeof(tt));
      pbcEmitOpError(f, "result %ld of @%.*s stays %s once the entry's sizes are fixed",
                     (long)i, (int)name.length, name.data, tt);
      return false;
    }
  return true;
}

/* --- the whole ---------------------------------------------------------------- */

static const char kFoldPipeline[] =
    "func.func(canonicalize,resolve-ranked-shaped-type-result-dims,canonicalize)";

static bool fold(MlirModule m) {
  /* canonicalize carries constant sizes through tensor.dim, tensor.empty,
   * reshapes and slices and folds tensor.cast into linalg ops; the
   * resolver answers tensor.dim of results from their operands'. A crash
   * of MLIR's in it (sizes that contradict each other) is replayed by the
   * reproducer as these passes. */
  return pbcRunPipelineText(mlirModuleGetOperation(m), kFoldPipeline);
}

/* Every given shape names an input some entry has: a misspelt entry or a
 * position past the inputs is an error, not a shape silently unused. */
static bool shapesApply(MlirModule m, const PbcShapeSpec *spec) {
  MlirBlock body = mlirModuleGetBody(m);
  for (int s = 0; s < spec->numShapes; ++s) {
    bool used = false;
    for (MlirOperation f = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(f) && !used;
         f = mlirOperationGetNextInBlock(f))
      used = pbcFuncIsPublic(f) && shapeApplies(&spec->shapes[s], funcName(f), spec->shapes[s].arg) &&
             spec->shapes[s].arg < mlirFunctionTypeGetNumInputs(functionType(f));
    if (!used) {
      MlirOperation first = mlirBlockGetFirstOperation(body);
      if (mlirOperationIsNull(first))
        first = mlirModuleGetOperation(m);
      pbcEmitOpError(first, "--shape names input %d of %s%s, which no entry point has",
                     spec->shapes[s].arg, spec->shapes[s].entry[0] ? "@" : "every entry",
                     spec->shapes[s].entry);
      return false;
    }
  }
  return true;
}

bool pbcSpecializeShapes(MlirModule m, const PbcShapeSpec *spec) {
  if (!pbcModuleHasDynamicEntries(m) && spec->numShapes == 0)
    return true;
  if (!shapesApply(m, spec))
    return false;
  pbcCrashContextSetPhase("fixing the entries' sizes");
  pbcCrashContextAppendReplay(kFoldPipeline);
  MlirBlock body = mlirModuleGetBody(m);
  for (MlirOperation f = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(f);
       f = mlirOperationGetNextInBlock(f))
    if (pbcFuncIsPublic(f) && !specializeArguments(f, spec))
      return false;
  if (!fold(m))
    return false;
  /* Each round may make more results static (a cast folded into a consumer
   * leaves the consumer's result static with a cast after it). */
  for (int round = 0; round < 8; ++round) {
    bool changed = false;
    for (MlirOperation f = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(f);
         f = mlirOperationGetNextInBlock(f))
      if (pbcOpIsA(f, "func.func")) {
        changed |= staticReshapes(f);
        if (pbcFuncIsPublic(f))
          changed |= refineResults(f);
      }
    if (!changed)
      break;
    if (!fold(m))
      return false;
  }
  for (MlirOperation f = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(f);
       f = mlirOperationGetNextInBlock(f))
    if (pbcOpIsA(f, "func.func") && !checkStatic(f))
      return false;
  return true;
}
