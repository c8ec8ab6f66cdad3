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
#include "pbc/importer_checks.h"
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

/* Probe `probe` (0 or 1) of size scale `scale`: symbol s's size, a prime,
 * distinct for each symbol and between the two probes. Scale 0 is far
 * from the sizes real programs have; a program whose sizes are bounded
 * (BERT's 512 positions: a slice of its position table) holds only at a
 * smaller scale. */
enum { kNumScales = 4 };
static const int64_t kProbeStart[kNumScales][2] = {{2003, 3001}, {97, 211}, {13, 29}, {3, 5}};

static int64_t probeSize(int scale, int probe, int s) {
  int64_t n = kProbeStart[scale][probe];
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
static bool probeResults(MlirModule m, int k, const Pos *pos, const int *sym, int n, int scale,
                         int probe, MlirType *results, int numResults, char *why,
                         size_t whyLen) {
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
    sh->dims[pos[i].dim] = probeSize(scale, probe, sym[i]);
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
static int symbolOf(int scale, int64_t a, int64_t b, int numSymbols) {
  for (int s = 0; s < numSymbols; ++s)
    if (probeSize(scale, 0, s) == a && probeSize(scale, 1, s) == b)
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
    int scale = 0;
    bool probed2 = false;
    for (; scale < kNumScales && !probed2; ++scale)
      probed2 = probeResults(m, k, pos, sym, n, scale, 0, probed, nOut, probeWhy,
                             sizeof(probeWhy)) &&
                probeResults(m, k, pos, sym, n, scale, 1, probed + nOut, nOut, probeWhy,
                             sizeof(probeWhy));
    if (!probed2) {
      snprintf(why, whyLen, "with %s: %s", kWayNames[way], probeWhy);
      continue;
    }
    --scale;
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
        int s = symbolOf(scale, mlirShapedTypeGetDimSize(probed[r], d),
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


static bool constantOf(MlirValue v, int64_t *c);

/* On the one read of each symbol's size (unifySizes): the symbol. */
static const char kSymbolAttr[] = "pbc.size_symbol";

/* The symbol whose size `v` is (its one read); -1 if none. */
static int symbolRead(MlirValue v) {
  if (!mlirValueIsAOpResult(v) || !pbcOpIsA(mlirOpResultGetOwner(v), "arith.maxsi"))
    return -1;
  MlirAttribute a = attr(mlirOpResultGetOwner(v), kSymbolAttr);
  return !mlirAttributeIsNull(a) && mlirAttributeIsAInteger(a) ? (int)mlirIntegerAttrGetValueInt(a)
                                                               : -1;
}

/* The symbol whose size v is, capped: v = min(size, cap) through
 * arith.minsi with constants (torch-mlir's x[:, :n] clamps n to the
 * table), arith.maxsi with a constant of at most 1 doing nothing to a size
 * of at least 1; *cap 0: not capped; *base the symbol's read. -1 if v is
 * none of those. */
static int cappedSymbolReadFrom(MlirValue v, int64_t *cap, MlirValue *base) {
  *cap = 0;
  for (int depth = 0; depth < 8; ++depth) {
    int s = symbolRead(v);
    *base = v;
    if (s >= 0)
      return s;
    if (!mlirValueIsAOpResult(v))
      return -1;
    MlirOperation op = mlirOpResultGetOwner(v);
    bool min = pbcOpIsA(op, "arith.minsi"), max = pbcOpIsA(op, "arith.maxsi");
    if (!min && !max)
      return -1;
    int64_t c;
    int k = constantOf(mlirOperationGetOperand(op, 1), &c)   ? 1
            : constantOf(mlirOperationGetOperand(op, 0), &c) ? 0
                                                             : -1;
    if (k < 0 || (min && c < 1) || (max && c > 1))
      return -1;
    if (min)
      *cap = *cap == 0 || c < *cap ? c : *cap;
    v = mlirOperationGetOperand(op, 1 - k);
  }
  return -1;
}

static int cappedSymbolRead(MlirValue v, int64_t *cap) {
  MlirValue base;
  return cappedSymbolReadFrom(v, cap, &base);
}

typedef struct {
  int64_t max[PBC_MAX_SIZE_SYMBOLS]; /* 0: any */
  MlirOperation bad;
  char why[200];
} SliceBounds;

static void bound(SliceBounds *b, int s, int64_t most) {
  if (b->max[s] == 0 || most < b->max[s])
    b->max[s] = most;
}

/* The largest size of each symbol. A slice of a static dimension
 * (tensor.extract_slice's source, tensor.insert_slice's destination) reads
 * or writes within it only up to some size: a size that is a symbol's (or
 * min(symbol, C)) bounds that symbol; one computed otherwise from run-time
 * sizes, or at a run-time offset, is refused (no bound is known). */
static MlirWalkResult boundBySlices(MlirOperation op, void *data) {
  SliceBounds *b = data;
  int64_t cap;
  int capped = pbcOpIsA(op, "arith.minsi") ? cappedSymbolRead(mlirOperationGetResult(op, 0), &cap)
                                           : -1;
  if (capped >= 0 && cap > 0) {
    /* A size min(s, C) (a slice of a table of C positions, as torch-mlir
     * writes x[:, :n]) is s only up to C: past it the program would mix C
     * and s, or return C rows for s. */
    bound(b, capped, cap);
    return MlirWalkResultAdvance;
  }
  bool extract = pbcOpIsA(op, "tensor.extract_slice");
  if (!extract && !pbcOpIsA(op, "tensor.insert_slice"))
    return MlirWalkResultAdvance;
  MlirType whole = mlirValueGetType(mlirOperationGetOperand(op, extract ? 0 : 1));
  MlirAttribute offs = attr(op, "static_offsets"), sizes = attr(op, "static_sizes"),
                strides = attr(op, "static_strides");
  intptr_t rank = mlirDenseArrayGetNumElements(sizes);
  /* Dynamic operands after the source (and destination): offsets, sizes,
   * strides, each for its entries of kDynamic. */
  intptr_t next = extract ? 1 : 2, dynOffsets = 0, dynSizes = 0;
  for (intptr_t d = 0; d < rank; ++d)
    dynOffsets += mlirShapedTypeIsDynamicSize(mlirDenseI64ArrayGetElement(offs, d));
  intptr_t sizeOperand = next + dynOffsets;
  for (intptr_t d = 0; d < rank && d < mlirShapedTypeGetRank(whole); ++d) {
    int64_t o = mlirDenseI64ArrayGetElement(offs, d), n = mlirDenseI64ArrayGetElement(sizes, d),
            st = mlirDenseI64ArrayGetElement(strides, d);
    bool dynamicSize = mlirShapedTypeIsDynamicSize(n);
    MlirValue size = dynamicSize ? mlirOperationGetOperand(op, sizeOperand + dynSizes++)
                                 : (MlirValue){NULL};
    if (!dynamicSize || mlirShapedTypeIsDynamicDim(whole, d))
      continue; /* static (verified), or within a run-time size (probed) */
    int s = cappedSymbolRead(size, &cap); /* a cap bounds it too (the minsi's visit) */
    if (mlirShapedTypeIsDynamicSize(o) || mlirShapedTypeIsDynamicSize(st) || st < 1 || s < 0) {
      b->bad = op;
      snprintf(b->why, sizeof(b->why),
               "it slices dimension %d of a static tensor at a run-time offset or by a size "
               "computed from the sizes: no largest size is known", (int)d);
      return MlirWalkResultInterrupt;
    }
    int64_t room = mlirShapedTypeGetDimSize(whole, d) - o, most = room <= 0 ? 0 : (room - 1) / st + 1;
    if (most < 1) {
      b->bad = op;
      snprintf(b->why, sizeof(b->why), "it slices dimension %d past its end", (int)d);
      return MlirWalkResultInterrupt;
    }
    bound(b, s, most);
  }
  return MlirWalkResultAdvance;
}

/* min(s, C) with C at least s's largest size, and max(s, c) with c at
 * most 1, are s on every call the glue and libpbc take: replaced by s's
 * read, so that importers' checks that a slice is as long as the input
 * (onnx.Expand's) fold. */
static void dropCaps(MlirOperation f, const int64_t *max) {
  static const char *const kinds[] = {"arith.minsi", "arith.maxsi"};
  for (int kind = 0; kind < 2; ++kind) {
    PbcOpList ops = {0};
    pbcOpListCollect(&ops, f, kinds[kind]);
    for (int i = 0; i < ops.n; ++i) {
      int64_t cap;
      MlirValue base, r = mlirOperationGetResult(ops.ops[i], 0);
      int s = cappedSymbolReadFrom(r, &cap, &base);
      if (s >= 0 && !mlirValueEqual(base, r) && (cap == 0 || (max[s] > 0 && cap >= max[s])))
        mlirValueReplaceAllUsesOfWith(r, base);
    }
    pbcOpListDestroy(&ops);
  }
}

/* Whether v is an integer arith.constant (its value in *c). */
static bool constantOf(MlirValue v, int64_t *c) {
  if (!mlirValueIsAOpResult(v) || !pbcOpIsA(mlirOpResultGetOwner(v), "arith.constant"))
    return false;
  MlirAttribute a = attr(mlirOpResultGetOwner(v), "value");
  if (!mlirAttributeIsAInteger(a))
    return false;
  *c = mlirIntegerAttrGetValueInt(a);
  return true;
}

/* The constant an index value is; -1 if it is none (or negative). */
static int64_t constantIndex(MlirValue v) {
  int64_t c;
  return constantOf(v, &c) && c >= 0 ? c : -1;
}

/* Every size the entry reads of an input (tensor.dim of an argument) is
 * its symbol's one value: read once, at the entry, from the symbol's
 * first input, as max(size, 1) (a symbolic size is at least 1: the glue
 * and libpbc refuse 0, so the two agree on every call they take, and the
 * importers' checks that a size is positive fold). The glue checks that
 * the sizes of one symbol agree, so the checks importers write between
 * them (torch-mlir's cf.assert that two operands broadcast) fold;
 * canonicalization follows, and integer range analysis folds the checks
 * that a size is not negative. */
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
      MlirNamedAttribute symbol = mlirNamedAttributeGet(
          mlirIdentifierGet(ctx, pbcStr(kSymbolAttr)),
          mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), PBC_SYMBOL_OF_SIZE(v)));
      read[PBC_SYMBOL_OF_SIZE(v)] = mlirOperationGetResult(
          pbcBuildOp(first, "arith.maxsi", 2, atLeast, index, 1, &symbol), 0);
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

/* --- importers' checks of the sizes ------------------------------------------- */

/* The value of v (index or integer arithmetic on the symbols' sizes and
 * constants) at the sizes `sym`; false if v is anything else (or divides
 * by zero). *used gets the symbols it reads. */
static bool evalSize(MlirValue v, const int64_t *sym, int64_t *out, unsigned *used, int depth) {
  if (depth > 64 || !mlirValueIsAOpResult(v))
    return false;
  MlirOperation op = mlirOpResultGetOwner(v);
  int s = symbolRead(v);
  if (s >= 0) {
    *used |= 1u << s;
    *out = sym[s];
    return true;
  }
  if (pbcOpIsA(op, "arith.constant")) {
    MlirAttribute a = attr(op, "value");
    if (mlirAttributeIsABool(a))
      *out = mlirBoolAttrGetValue(a);
    else if (mlirAttributeIsAInteger(a))
      *out = mlirIntegerAttrGetValueInt(a);
    else
      return false;
    return true;
  }
  static const char *const casts[] = {"arith.index_cast", "arith.index_castui", "arith.extsi",
                                      "arith.extui"};
  for (size_t i = 0; i < sizeof casts / sizeof *casts; ++i)
    if (pbcOpIsA(op, casts[i]))
      return evalSize(mlirOperationGetOperand(op, 0), sym, out, used, depth + 1);
  intptr_t n = mlirOperationGetNumOperands(op);
  int64_t x[3] = {0, 0, 0};
  if (n > 3)
    return false;
  for (intptr_t i = 0; i < n; ++i)
    if (!evalSize(mlirOperationGetOperand(op, i), sym, &x[i], used, depth + 1))
      return false;
  if (pbcOpIsA(op, "arith.addi")) *out = x[0] + x[1];
  else if (pbcOpIsA(op, "arith.subi")) *out = x[0] - x[1];
  else if (pbcOpIsA(op, "arith.muli")) *out = x[0] * x[1];
  else if (pbcOpIsA(op, "arith.divsi") || pbcOpIsA(op, "arith.remsi") ||
           pbcOpIsA(op, "arith.floordivsi") || pbcOpIsA(op, "arith.ceildivsi")) {
    if (x[1] == 0)
      return false;
    int64_t q = x[0] / x[1], r = x[0] % x[1];
    if (pbcOpIsA(op, "arith.remsi")) *out = r;
    else if (pbcOpIsA(op, "arith.divsi")) *out = q;
    else if (pbcOpIsA(op, "arith.floordivsi")) *out = q - (r != 0 && (r < 0) != (x[1] < 0));
    else *out = q + (r != 0 && (r < 0) == (x[1] < 0));
  } else if (pbcOpIsA(op, "arith.maxsi")) *out = x[0] > x[1] ? x[0] : x[1];
  else if (pbcOpIsA(op, "arith.minsi")) *out = x[0] < x[1] ? x[0] : x[1];
  else if (pbcOpIsA(op, "arith.andi")) *out = x[0] & x[1];
  else if (pbcOpIsA(op, "arith.ori")) *out = x[0] | x[1];
  else if (pbcOpIsA(op, "arith.xori")) *out = x[0] ^ x[1];
  else if (pbcOpIsA(op, "arith.select")) *out = x[0] ? x[1] : x[2];
  else if (pbcOpIsA(op, "arith.cmpi")) {
    /* arith.cmpi's predicates: eq ne slt sle sgt sge ult ule ugt uge. */
    int64_t p = mlirIntegerAttrGetValueInt(attr(op, "predicate"));
    uint64_t a = (uint64_t)x[0], b = (uint64_t)x[1];
    bool r[10] = {x[0] == x[1], x[0] != x[1], x[0] < x[1], x[0] <= x[1], x[0] > x[1],
                  x[0] >= x[1], a < b,        a <= b,      a > b,        a >= b};
    if (p < 0 || p > 9)
      return false;
    *out = r[p];
  } else
    return false;
  return true;
}

/* Calls `visit` on every combination of the sizes of the symbols in `used`
 * (each from 1 to max[s]) until it returns false; false then. */
static bool everySize(unsigned used, const int64_t *max, int64_t *sym,
                      bool (*visit)(int64_t *sym, void *data), void *data) {
  for (int s = 0; s < PBC_MAX_SIZE_SYMBOLS; ++s)
    sym[s] = 1;
  for (;;) {
    if (!visit(sym, data))
      return false;
    int s = 0;
    for (; s < PBC_MAX_SIZE_SYMBOLS; ++s) {
      if (!(used & (1u << s)))
        continue;
      if (sym[s] < max[s]) {
        ++sym[s];
        break;
      }
      sym[s] = 1;
    }
    if (s == PBC_MAX_SIZE_SYMBOLS)
      return true;
  }
}

/* How many combinations everySize visits; a huge number if a symbol in
 * `used` has no largest size. */
static double combinations(unsigned used, const int64_t *max) {
  double n = 1;
  for (int s = 0; s < PBC_MAX_SIZE_SYMBOLS; ++s)
    if (used & (1u << s))
      n = max[s] > 0 ? n * (double)max[s] : 1e300;
  return n;
}

typedef struct {
  MlirValue v;
  int64_t first;       /* the value at the first sizes */
  unsigned candidates; /* the symbols whose size it has been at every sizes so far */
  bool constant;
} Fold;

static bool sameEverywhere(int64_t *sym, void *data) {
  Fold *f = data;
  int64_t x;
  unsigned used = 0;
  if (!evalSize(f->v, sym, &x, &used, 0))
    return false;
  f->constant &= x == f->first;
  for (int s = 0; s < PBC_MAX_SIZE_SYMBOLS; ++s)
    if (x != sym[s])
      f->candidates &= ~(1u << s);
  return f->constant || f->candidates != 0;
}

/* Sizes computed from the symbols (torch-mlir's reshapes by shape tensors
 * compute the heads' 12 x 64 from the sequence) that are one constant, or
 * one symbol's size, at every size the entry takes become that constant or
 * that read: the nests then see static extents (a GEMM's K of 768). At most
 * 4,096 combinations each. */
static void foldSizes(MlirOperation f, const int64_t *max, MlirValue *read) {
  MlirBlock entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
  MlirContext ctx = mlirOperationGetContext(f);
  for (MlirOperation op = mlirBlockGetFirstOperation(entry); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (mlirOperationGetNumResults(op) != 1 || pbcOpIsA(op, "arith.constant"))
      continue;
    MlirValue v = mlirOperationGetResult(op, 0);
    MlirType t = mlirValueGetType(v);
    if (!mlirTypeIsAIndex(t) && !mlirTypeIsAInteger(t))
      continue;
    int64_t sym[PBC_MAX_SIZE_SYMBOLS], x;
    for (int k = 0; k < PBC_MAX_SIZE_SYMBOLS; ++k)
      sym[k] = 1;
    unsigned used = 0;
    if (symbolRead(v) >= 0 || !evalSize(v, sym, &x, &used, 0) || used == 0 ||
        combinations(used, max) > 4096)
      continue;
    Fold fold = {v, x, used, true};
    if (!everySize(used, max, sym, sameEverywhere, &fold))
      continue;
    int same = -1;
    for (int k = 0; k < PBC_MAX_SIZE_SYMBOLS && same < 0; ++k)
      if (fold.candidates & (1u << k))
        same = k;
    if (fold.constant) {
      MlirNamedAttribute value = mlirNamedAttributeGet(mlirIdentifierGet(ctx, pbcStr("value")),
                                                       mlirIntegerAttrGet(t, fold.first));
      mlirValueReplaceAllUsesOfWith(
          v, mlirOperationGetResult(pbcBuildOp(op, "arith.constant", 0, NULL, t, 1, &value), 0));
    } else if (same >= 0 && mlirTypeIsAIndex(t) && !mlirValueIsNull(read[same])) {
      mlirValueReplaceAllUsesOfWith(v, read[same]);
    }
  }
}

/* A tensor.reshape by a shape whose elements are partly constants (after
 * foldSizes: the heads' 768 among the sequence) gets those sizes in its
 * result type, and a tensor.cast back to the old type for its users, which
 * canonicalization folds into them: the nests see the static extents. */
static void refineReshapes(MlirOperation f) {
  PbcOpList reshapes = {0};
  pbcOpListCollect(&reshapes, f, "tensor.reshape");
  for (int i = 0; i < reshapes.n; ++i) {
    MlirOperation op = reshapes.ops[i];
    MlirValue shape = mlirOperationGetOperand(op, 1), r = mlirOperationGetResult(op, 0);
    MlirType t = mlirValueGetType(r);
    if (!mlirValueIsAOpResult(shape) ||
        !pbcOpIsA(mlirOpResultGetOwner(shape), "tensor.from_elements") ||
        !mlirTypeIsARankedTensor(t) || mlirShapedTypeGetRank(t) > PBC_MAX_RANK)
      continue;
    MlirOperation elems = mlirOpResultGetOwner(shape);
    intptr_t rank = mlirShapedTypeGetRank(t);
    if (mlirOperationGetNumOperands(elems) != rank)
      continue;
    int64_t dims[PBC_MAX_RANK];
    bool refined = false;
    for (intptr_t d = 0; d < rank; ++d) {
      dims[d] = mlirShapedTypeGetDimSize(t, d);
      int64_t c;
      if (mlirShapedTypeIsDynamicDim(t, d) && constantOf(mlirOperationGetOperand(elems, d), &c) &&
          c >= 0) {
        dims[d] = c;
        refined = true;
      }
    }
    if (!refined)
      continue;
    MlirType staticType = mlirRankedTensorTypeGet(rank, dims, mlirShapedTypeGetElementType(t),
                                                  mlirRankedTensorTypeGetEncoding(t));
    mlirValueSetType(r, staticType);
    MlirOperation cast = pbcBuildOp(mlirOperationGetNextInBlock(op), "tensor.cast", 1, &r, t, 0,
                                    NULL);
    mlirValueReplaceAllUsesExcept(r, mlirOperationGetResult(cast, 0), 1, &cast);
  }
  pbcOpListDestroy(&reshapes);
}

/* The one read of each symbol's size (unifySizes's arith.maxsi). */
static MlirWalkResult findReads(MlirOperation op, void *data) {
  MlirValue *read = data;
  if (pbcOpIsA(op, "arith.maxsi")) {
    int s = symbolRead(mlirOperationGetResult(op, 0));
    if (s >= 0)
      read[s] = mlirOperationGetResult(op, 0);
  }
  return MlirWalkResultAdvance;
}

typedef struct {
  MlirValue cond;
  int64_t failed[PBC_MAX_SIZE_SYMBOLS]; /* the sizes where it failed */
} Check;

static bool checkHolds(int64_t *sym, void *data) {
  Check *c = data;
  int64_t value;
  unsigned used = 0;
  if (evalSize(c->cond, sym, &value, &used, 0) && value)
    return true;
  memcpy(c->failed, sym, sizeof(c->failed));
  return false;
}

/* Each importer's check (cf.assert) of the sizes that has not folded is
 * decided over every size the entry takes, when they are bounded
 * (max[s] > 0 for every symbol it reads, at most a million combinations):
 * erased if it holds at all of them. False (after a located error) if it
 * fails at some, or cannot be decided so. Checks inside linalg bodies
 * (index bounds) are the importer-check pass's. */
static bool decideChecks(MlirOperation f, const int64_t *max) {
  PbcOpList asserts = {0};
  pbcOpListCollect(&asserts, f, "cf.assert");
  bool ok = true;
  for (int i = 0; i < asserts.n && ok; ++i) {
    MlirOperation a = asserts.ops[i];
    if (pbcOpIsInLinalgBody(a))
      continue;
    MlirValue cond = mlirOperationGetOperand(a, 0);
    int64_t sym[PBC_MAX_SIZE_SYMBOLS], value;
    for (int s = 0; s < PBC_MAX_SIZE_SYMBOLS; ++s)
      sym[s] = 1;
    unsigned used = 0;
    bool known = evalSize(cond, sym, &value, &used, 0);
    const char *why = !known ? "it computes with more than the sizes"
                      : combinations(used, max) > 1e6
                          ? "its sizes have no largest value to try it up to"
                          : NULL;
    Check check = {cond, {0}};
    bool holds = why == NULL && everySize(used, max, sym, checkHolds, &check);
    MlirAttribute msg = attr(a, "msg");
    MlirStringRef text = !mlirAttributeIsNull(msg) && mlirAttributeIsAString(msg)
                             ? mlirStringAttrGetValue(msg)
                             : pbcStr("(no message)");
    if (holds) {
      mlirOperationDestroy(a);
    } else {
      MlirStringRef name = funcName(f);
      char at[64] = "";
      if (!why) {
        for (int s = 0, n = 0; s < PBC_MAX_SIZE_SYMBOLS; ++s)
          if (used & (1u << s))
            n += snprintf(at + n, sizeof(at) - (size_t)n, "%ss%d = %lld", n ? ", " : "", s,
                          (long long)check.failed[s]);
      }
      pbcEmitOpError(a,
                     "@%.*s cannot be compiled with symbolic sizes: the program's own check "
                     "\"%.*s\" %s%s; give its sizes (pbc --shape or --dim) to compile it for them",
                     (int)name.length, name.data, (int)text.length, text.data,
                     why ? "is not decided: " : "fails at ", why ? why : at);
      ok = false;
    }
  }
  pbcOpListDestroy(&asserts);
  return ok;
}

bool pbcSymbolicSizesPrepare(MlirModule m, PbcEntrySig *sigs, int max, int *numSigs) {
  int numPublic = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(m));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    numPublic += pbcFuncIsPublic(op);
  /* Every entry's symbols first: m changes only once they all hold (a
   * later refusal, of a slice or a check, leaves m partly prepared). */
  MlirAttribute *marks = calloc((size_t)numPublic + 1, sizeof(MlirAttribute));
  int64_t *sizes = malloc(sizeof(int64_t) * PBC_MAX_RANK * (2 * PBC_MAX_ARGS));
  bool ok = true;
  for (int k = 0; ok && k < numPublic; ++k) {
    MlirOperation f = nthPublic(m, k);
    MlirType ft = functionType(f);
    if (!pbcFuncHasDynamicEntry(f) ||
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
  for (int k = 0; ok && k < numPublic; ++k) {
    if (mlirAttributeIsNull(marks[k]))
      continue;
    MlirOperation f = nthPublic(m, k);
    SliceBounds b = {{0}, {NULL}, ""};
    mlirOperationWalk(f, boundBySlices, &b, MlirWalkPreOrder);
    if (!mlirOperationIsNull(b.bad)) {
      MlirStringRef name = funcName(f);
      char on[64];
      pbcEmitOpError(b.bad,
                     "@%.*s cannot be compiled with symbolic sizes: '%s': %s; give its sizes (pbc "
                     "--shape or --dim) to compile it for them",
                     (int)name.length, name.data, pbcOpName(b.bad, on, sizeof(on)), b.why);
      ok = false;
      break;
    }
    mlirOperationSetAttributeByName(
        f, pbcStr(PBC_SIZE_BOUNDS_ATTR),
        mlirDenseI64ArrayGet(mlirOperationGetContext(f), PBC_MAX_SIZE_SYMBOLS, b.max));
    dropCaps(f, b.max);
    marks[k] = mlirOperationGetAttributeByName(f, pbcStr(PBC_SIZE_BOUNDS_ATTR));
  }
  ok = ok && pbcRunPipelineText(mlirModuleGetOperation(m),
                                "func.func(canonicalize,cse,int-range-optimizations,canonicalize)");
  int64_t (*most)[PBC_MAX_SIZE_SYMBOLS] = calloc((size_t)numPublic + 1, sizeof(*most));
  for (int k = 0; ok && k < numPublic; ++k) {
    if (mlirAttributeIsNull(marks[k]))
      continue;
    for (int i = 0; i < PBC_MAX_SIZE_SYMBOLS; ++i)
      most[k][i] = mlirDenseI64ArrayGetElement(marks[k], i);
    MlirValue read[PBC_MAX_SIZE_SYMBOLS] = {{NULL}};
    mlirOperationWalk(nthPublic(m, k), findReads, read, MlirWalkPreOrder);
    foldSizes(nthPublic(m, k), most[k], read);
    refineReshapes(nthPublic(m, k));
  }
  ok = ok && pbcRunPipelineText(mlirModuleGetOperation(m),
                                "func.func(canonicalize,resolve-ranked-shaped-type-result-dims,"
                                "cse,canonicalize)");
  for (int k = 0; ok && k < numPublic; ++k)
    if (!mlirAttributeIsNull(marks[k]))
      ok = decideChecks(nthPublic(m, k), most[k]);
  free(most);
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
