/* Entries compiled once with their sizes as symbols
 * (pbc/symbolic_sizes.h). */
#include "pbc/symbolic_sizes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"
#include "pbc/diag.h"
#include "pbc/ir_build.h"
#include "pbc/op_list.h"
#include "pbc/specialize_shapes.h"

/* The ways the inputs' `?` are given symbols, tried in this order: the
 * most general that holds wins. */
typedef enum { kEachOwn, kByPosition, kAllOne, kNumWays } Way;

static const char *const kWayNames[] = {"a size of its own for each '?'",
                                        "one size per dimension position",
                                        "one size for every '?'"};

typedef struct {
  int arg, dim; /* input arg's dimension dim */
} Pos;

static MlirAttribute attr(MlirOperation op, const char *name) {
  return mlirOperationGetAttributeByName(op, pbcStr(name));
}

static MlirType functionType(MlirOperation f) {
  return mlirTypeAttrGetValue(attr(f, "function_type"));
}

static MlirStringRef funcName(MlirOperation f) {
  return mlirStringAttrGetValue(attr(f, "sym_name"));
}

static bool isDynamicTensor(MlirType t) {
  return mlirTypeIsARankedTensor(t) && !mlirShapedTypeHasStaticShape(t);
}

static MlirOperation nthPublic(MlirModule m, int k) {
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(m));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    if (pbcFuncIsPublic(op) && k-- == 0)
      return op;
  return (MlirOperation){NULL};
}

static bool isPrime(int64_t n) {
  for (int64_t d = 2; d * d <= n; ++d)
    if (n % d == 0)
      return false;
  return n > 1;
}

/* Probe `probe`'s size for symbol s: distinct primes, far from the sizes
 * real programs have, different between the two probes. */
static int64_t probeSize(int probe, int s) {
  int64_t n = probe ? 3001 : 2003;
  for (int k = -1; k < s; n += 2)
    if (isPrime(n) && ++k == s)
      return n;
  return n;
}

/* The symbols `way` gives the positions; their count. */
static int assign(Way way, const Pos *pos, int n, int *sym) {
  int count = 0;
  for (int i = 0; i < n; ++i) {
    if (way == kEachOwn)
      sym[i] = count++;
    else if (way == kAllOne)
      sym[i] = 0, count = 1;
    else {
      sym[i] = -1;
      for (int j = 0; j < i && sym[i] < 0; ++j)
        if (pos[j].dim == pos[i].dim)
          sym[i] = sym[j];
      if (sym[i] < 0)
        sym[i] = count++;
    }
  }
  return count;
}

/* The result types of public function k of a copy of m specialized at
 * the probe's sizes for the symbols (other entries at size 1); false if it
 * does not fold to static shapes there. */
static bool probeResults(MlirModule m, int k, const Pos *pos, const int *sym, int n, int probe,
                         MlirType *results, int numResults, char *why, size_t whyLen) {
  MlirModule copy = mlirModuleFromOperation(mlirOperationClone(mlirModuleGetOperation(m)));
  MlirOperation f = nthPublic(copy, k);
  MlirType ft = functionType(f);
  PbcShapeSpec *spec = calloc(1, sizeof(PbcShapeSpec)); /* large: heap */
  spec->dim = 1;
  MlirStringRef name = funcName(f);
  for (int i = 0; i < n; ++i) {
    PbcGivenShape *sh = NULL;
    for (int j = 0; j < spec->numShapes && !sh; ++j)
      if (spec->shapes[j].arg == pos[i].arg)
        sh = &spec->shapes[j];
    if (!sh) {
      sh = &spec->shapes[spec->numShapes++];
      snprintf(sh->entry, sizeof(sh->entry), "%.*s", (int)name.length, name.data);
      sh->arg = pos[i].arg;
      MlirType t = mlirFunctionTypeGetInput(ft, pos[i].arg);
      sh->rank = (int)mlirShapedTypeGetRank(t);
      for (int d = 0; d < sh->rank; ++d)
        sh->dims[d] = mlirShapedTypeGetDimSize(t, d);
    }
    sh->dims[pos[i].dim] = probeSize(probe, sym[i]);
  }
  PbcDiagCapture quiet = {0}, *before = pbcDiagCaptureInto(&quiet);
  bool ok = pbcSpecializeShapes(copy, spec);
  pbcDiagCaptureInto(before);
  if (!ok) {
    /* The first line of what specialization said, without its location. */
    const char *text = pbcDiagCaptureText(&quiet), *msg = strstr(text, "error: ");
    msg = msg ? msg + 7 : text;
    size_t len = strcspn(msg, "\n");
    snprintf(why, whyLen, "%.*s", (int)(len > 300 ? 300 : len), msg);
  } else {
    MlirType sft = functionType(nthPublic(copy, k));
    for (int r = 0; r < numResults; ++r)
      results[r] = mlirFunctionTypeGetResult(sft, r);
  }
  pbcDiagCaptureDestroy(&quiet);
  free(spec);
  mlirModuleDestroy(copy);
  return ok;
}

/* The symbol whose probe sizes are a and b; -1 if none. */
static int symbolOf(int64_t a, int64_t b, int numSymbols) {
  for (int s = 0; s < numSymbols; ++s)
    if (probeSize(0, s) == a && probeSize(1, s) == b)
      return s;
  return -1;
}

/* The signature sizes of public function k of m (per input, then result:
 * sizes[i * PBC_MAX_RANK + d]) under the first way that holds; false with
 * the reason of the last one tried. */
static bool symbolsOf(MlirModule m, int k, int64_t *sizes, char *why, size_t whyLen) {
  MlirOperation f = nthPublic(m, k);
  MlirType ft = functionType(f);
  int nIn = (int)mlirFunctionTypeGetNumInputs(ft), nOut = (int)mlirFunctionTypeGetNumResults(ft);
  Pos *pos = calloc((size_t)nIn * PBC_MAX_RANK + 1, sizeof(Pos));
  int *sym = calloc((size_t)nIn * PBC_MAX_RANK + 1, sizeof(int));
  MlirType *probed = calloc(2 * (size_t)nOut + 1, sizeof(MlirType));
  int n = 0;
  for (int i = 0; i < nIn; ++i) {
    MlirType t = mlirFunctionTypeGetInput(ft, i);
    if (isDynamicTensor(t))
      for (int d = 0; d < mlirShapedTypeGetRank(t) && d < PBC_MAX_RANK; ++d)
        if (mlirShapedTypeIsDynamicDim(t, d))
          pos[n++] = (Pos){i, d};
  }
  bool held = false;
  if (n == 0)
    snprintf(why, whyLen, "a result has a dynamic size but no input has one");
  int lastCount = -1;
  for (int way = 0; way < kNumWays && n > 0 && !held; ++way) {
    int count = assign((Way)way, pos, n, sym);
    if (count == lastCount || count > PBC_MAX_SIZE_SYMBOLS)
      continue; /* the same symbols as the way before, or too many */
    lastCount = count;
    char probeWhy[400];
    if (!probeResults(m, k, pos, sym, n, 0, probed, nOut, probeWhy, sizeof(probeWhy)) ||
        !probeResults(m, k, pos, sym, n, 1, probed + nOut, nOut, probeWhy, sizeof(probeWhy))) {
      snprintf(why, whyLen, "with %s: %s", kWayNames[way], probeWhy);
      continue;
    }
    held = true;
    for (int i = 0; i < nIn; ++i) {
      MlirType t = mlirFunctionTypeGetInput(ft, i);
      for (int d = 0; d < mlirShapedTypeGetRank(t) && d < PBC_MAX_RANK; ++d)
        sizes[i * PBC_MAX_RANK + d] = mlirShapedTypeGetDimSize(t, d);
    }
    for (int j = 0; j < n; ++j)
      sizes[pos[j].arg * PBC_MAX_RANK + pos[j].dim] = PBC_SIZE_SYMBOL(sym[j]);
    for (int r = 0; r < nOut && held; ++r) {
      MlirType t = mlirFunctionTypeGetResult(ft, r);
      for (int d = 0; d < mlirShapedTypeGetRank(t) && d < PBC_MAX_RANK && held; ++d) {
        int64_t *at = &sizes[(nIn + r) * PBC_MAX_RANK + d];
        *at = mlirShapedTypeGetDimSize(t, d);
        if (!mlirShapedTypeIsDynamicDim(t, d))
          continue;
        int s = symbolOf(mlirShapedTypeGetDimSize(probed[r], d),
                         mlirShapedTypeGetDimSize(probed[nOut + r], d), count);
        if (s < 0) {
          snprintf(why, whyLen,
                   "with %s: result %d's size %d is computed from the inputs' sizes, not one of "
                   "them (its caller could not allocate it)",
                   kWayNames[way], r, d);
          held = false;
        }
        *at = PBC_SIZE_SYMBOL(s);
      }
    }
  }
  free(pos);
  free(sym);
  free(probed);
  return held;
}

static MlirAttribute sizesAttr(MlirOperation f, const int64_t *sizes) {
  MlirContext ctx = mlirOperationGetContext(f);
  MlirType ft = functionType(f);
  int nIn = (int)mlirFunctionTypeGetNumInputs(ft), nOut = (int)mlirFunctionTypeGetNumResults(ft);
  MlirAttribute *each = calloc((size_t)(nIn + nOut) + 1, sizeof(MlirAttribute));
  for (int i = 0; i < nIn + nOut; ++i) {
    MlirType t = i < nIn ? mlirFunctionTypeGetInput(ft, i) : mlirFunctionTypeGetResult(ft, i - nIn);
    intptr_t rank = mlirTypeIsAShaped(t) && mlirShapedTypeHasRank(t) ? mlirShapedTypeGetRank(t) : 0;
    each[i] = mlirDenseI64ArrayGet(ctx, rank > PBC_MAX_RANK ? 0 : rank, &sizes[i * PBC_MAX_RANK]);
  }
  MlirAttribute a = mlirArrayAttrGet(ctx, nIn + nOut, each);
  free(each);
  return a;
}

static bool hasDynamicEntry(MlirOperation f) {
  MlirType ft = functionType(f);
  for (intptr_t i = 0; i < mlirFunctionTypeGetNumInputs(ft); ++i)
    if (isDynamicTensor(mlirFunctionTypeGetInput(ft, i)))
      return true;
  for (intptr_t i = 0; i < mlirFunctionTypeGetNumResults(ft); ++i)
    if (isDynamicTensor(mlirFunctionTypeGetResult(ft, i)))
      return true;
  return false;
}

/* The constant an index value is; -1 if it is none. */
static int64_t constantIndex(MlirValue v) {
  if (!mlirValueIsAOpResult(v) || !pbcOpIsA(mlirOpResultGetOwner(v), "arith.constant"))
    return -1;
  MlirAttribute a = attr(mlirOpResultGetOwner(v), "value");
  return mlirAttributeIsAInteger(a) ? mlirIntegerAttrGetValueInt(a) : -1;
}

/* Every size the entry reads of an input (tensor.dim of an argument) is
 * its symbol's one value: read once, at the entry, from the symbol's
 * first input, as max(size, 1) (a symbolic size is at least 1: the glue
 * and libpbc refuse 0, so the two agree on every call they take, and the
 * importers' checks that a size is positive fold). The glue checks that the sizes of one symbol agree, so the
 * checks importers write between them (torch-mlir's cf.assert that two
 * operands broadcast) fold; canonicalization follows, and integer range
 * analysis folds the checks that a size is not negative. */
static void unifySizes(MlirOperation f, MlirAttribute sizes) {
  MlirBlock entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
  MlirOperation first = mlirBlockGetFirstOperation(entry);
  MlirContext ctx = mlirOperationGetContext(f);
  MlirType index = mlirIndexTypeGet(ctx);
  MlirValue read[PBC_MAX_SIZE_SYMBOLS];
  bool have[PBC_MAX_SIZE_SYMBOLS] = {false};
  PbcOpList dims = {0}; /* the reads there are, before this adds its own */
  pbcOpListCollect(&dims, f, "tensor.dim");
  intptr_t nIn = mlirBlockGetNumArguments(entry);
  for (intptr_t i = 0; i < nIn; ++i) {
    MlirAttribute a = mlirArrayAttrGetElement(sizes, i);
    for (intptr_t d = 0; d < mlirDenseArrayGetNumElements(a); ++d) {
      int64_t v = mlirDenseI64ArrayGetElement(a, d);
      if (!PBC_SIZE_IS_SYMBOL(v) || have[PBC_SYMBOL_OF_SIZE(v)])
        continue;
      MlirNamedAttribute value = mlirNamedAttributeGet(
          mlirIdentifierGet(ctx, pbcStr("value")), mlirIntegerAttrGet(index, d));
      MlirValue ops[2] = {mlirBlockGetArgument(entry, i),
                          mlirOperationGetResult(
                              pbcBuildOp(first, "arith.constant", 0, NULL, index, 1, &value), 0)};
      MlirNamedAttribute oneValue = mlirNamedAttributeGet(
          mlirIdentifierGet(ctx, pbcStr("value")), mlirIntegerAttrGet(index, 1));
      MlirValue atLeast[2] = {
          mlirOperationGetResult(pbcBuildOp(first, "tensor.dim", 2, ops, index, 0, NULL), 0),
          mlirOperationGetResult(pbcBuildOp(first, "arith.constant", 0, NULL, index, 1, &oneValue),
                                 0)};
      read[PBC_SYMBOL_OF_SIZE(v)] =
          mlirOperationGetResult(pbcBuildOp(first, "arith.maxsi", 2, atLeast, index, 0, NULL), 0);
      have[PBC_SYMBOL_OF_SIZE(v)] = true;
    }
  }
  for (int k = 0; k < dims.n; ++k) {
    MlirValue src = mlirOperationGetOperand(dims.ops[k], 0);
    int64_t d = constantIndex(mlirOperationGetOperand(dims.ops[k], 1));
    if (!mlirValueIsABlockArgument(src) || !mlirBlockEqual(mlirBlockArgumentGetOwner(src), entry) ||
        d < 0)
      continue;
    MlirAttribute a = mlirArrayAttrGetElement(sizes, mlirBlockArgumentGetArgNumber(src));
    if (d >= mlirDenseArrayGetNumElements(a))
      continue;
    int64_t v = mlirDenseI64ArrayGetElement(a, d);
    MlirValue r = mlirOperationGetResult(dims.ops[k], 0);
    if (PBC_SIZE_IS_SYMBOL(v) && !mlirValueEqual(r, read[PBC_SYMBOL_OF_SIZE(v)]))
      mlirValueReplaceAllUsesOfWith(r, read[PBC_SYMBOL_OF_SIZE(v)]);
  }
  pbcOpListDestroy(&dims);
}

bool pbcSymbolicSizesPrepare(MlirModule m, PbcEntrySig *sigs, int max, int *numSigs) {
  int numPublic = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(m));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    numPublic += pbcFuncIsPublic(op);
  /* All proofs first: m changes only when every entry has its symbols. */
  MlirAttribute *marks = calloc((size_t)numPublic + 1, sizeof(MlirAttribute));
  int64_t *sizes = malloc(sizeof(int64_t) * PBC_MAX_RANK * (2 * PBC_MAX_ARGS));
  bool ok = true;
  for (int k = 0; ok && k < numPublic; ++k) {
    MlirOperation f = nthPublic(m, k);
    MlirType ft = functionType(f);
    if (!hasDynamicEntry(f) ||
        mlirFunctionTypeGetNumInputs(ft) + mlirFunctionTypeGetNumResults(ft) > 2 * PBC_MAX_ARGS)
      continue; /* the signature check names one with too many arguments */
    char why[512] = "";
    if (!symbolsOf(m, k, sizes, why, sizeof(why))) {
      MlirStringRef name = funcName(f);
      pbcEmitOpError(f,
                     "@%.*s cannot be compiled with symbolic sizes: %s; give its sizes (pbc "
                     "--shape or --dim) to compile it for them",
                     (int)name.length, name.data, why);
      ok = false;
      break;
    }
    marks[k] = sizesAttr(f, sizes);
  }
  free(sizes);
  for (int k = 0; ok && k < numPublic; ++k)
    if (!mlirAttributeIsNull(marks[k])) {
      mlirOperationSetAttributeByName(nthPublic(m, k), pbcStr(PBC_SIGNATURE_SIZES_ATTR), marks[k]);
      unifySizes(nthPublic(m, k), marks[k]);
    }
  ok = ok && pbcRunPipelineText(mlirModuleGetOperation(m),
                                "func.func(canonicalize,resolve-ranked-shaped-type-result-dims,"
                                "cse,int-range-optimizations,canonicalize)");
  if (ok) {
    *numSigs = pbcEntrySigsCollect(m, sigs, max);
    ok = *numSigs >= 0 && *numSigs == numPublic;
  }
  for (int k = 0; ok && k < numPublic; ++k) {
    if (mlirAttributeIsNull(marks[k]))
      continue;
    MlirOperation f = nthPublic(m, k);
    char name[sizeof(sigs[k].name) + sizeof(PBC_SYMBOLIC_SUFFIX)];
    snprintf(name, sizeof(name), "%s%s", sigs[k].name, PBC_SYMBOLIC_SUFFIX);
    mlirOperationSetAttributeByName(
        f, pbcStr("sym_name"), mlirStringAttrGet(mlirOperationGetContext(f), pbcStr(name)));
  }
  free(marks);
  return ok;
}
