/* pbc-outline-nests: every loop nest at the top level of a function becomes
 * a private function of its own, called where the nest was, and nests that
 * are identical (the same layer shape again: ResNet-50 repeats most of its
 * convolutions) share one function.
 *
 * Why: after S3 a model is one entry function holding every nest that is
 * not a parallel region, and LLVM's -O3 grows faster than linearly with the
 * number of loops in one function (ResNet-50's entry held 184 nests and took
 * about two thirds of the whole LLVM time, most of it in IndVarSimplify). As
 * functions of their own, each nest is optimized alone, identical ones once,
 * and code generation can split the module across cores
 * (output/module_split.c). The functions are marked `noinline` so that
 * LLVM does not rebuild the one large function; a nest runs for far longer
 * than its call costs.
 *
 * Values the nest uses from outside become arguments, except constants,
 * which are cloned into the function (so that LLVM still sees them). Only
 * nests without results are outlined.
 *
 * A function left with no loops at all (the entry of a model: allocations,
 * views and a call per nest, one basic block of descriptor plumbing) is
 * marked `optnone`: LLVM's instruction selection is far worse than linear in
 * the size of a basic block (DenseNet-121's entry, 41,000 instructions, took
 * 6 s of selection at -O3 and 1 s with fast selection), and glue code gains
 * nothing from optimization. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/loops.h"
#include "pbc/strbuf.h"
#include "passes/passes.h"

typedef struct Captures {
  MlirValue *values; /* used inside, defined outside, in order of first use */
  MlirValue *inside; /* what replaces each inside the function */
  int n, cap;
  MlirOperation nest;
} Captures;

static MlirWalkResult collectCaptures(MlirOperation op, void *data) {
  Captures *c = data;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    MlirValue v = mlirOperationGetOperand(op, i);
    if (pbcValueIsDefinedInside(v, c->nest))
      continue;
    bool seen = false;
    for (int k = 0; k < c->n && !seen; ++k)
      seen = mlirValueEqual(c->values[k], v);
    if (seen)
      continue;
    if (c->n == c->cap) {
      c->cap = c->cap ? 2 * c->cap : 16;
      c->values = realloc(c->values, (size_t)c->cap * sizeof(MlirValue));
      c->inside = realloc(c->inside, (size_t)c->cap * sizeof(MlirValue));
    }
    c->values[c->n++] = v;
  }
  return MlirWalkResultAdvance;
}

static MlirWalkResult remapCaptures(MlirOperation op, void *data) {
  const Captures *c = data;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    MlirValue v = mlirOperationGetOperand(op, i);
    for (int k = 0; k < c->n; ++k)
      if (mlirValueEqual(c->values[k], v)) {
        mlirOperationSetOperand(op, i, c->inside[k]);
        break;
      }
  }
  return MlirWalkResultAdvance;
}

static bool isConstant(MlirValue v) {
  return !mlirValueIsABlockArgument(v) && pbcOpIsA(mlirOpResultGetOwner(v), "arith.constant");
}

static bool isNest(MlirOperation op) {
  return mlirOperationGetNumResults(op) == 0 &&
         (pbcOpIsA(op, "affine.for") || pbcOpIsA(op, "affine.parallel") ||
          pbcOpIsA(op, "scf.for") || pbcOpIsA(op, "scf.parallel"));
}

/* A detached private function holding `nest` (moved out of its block),
 * taking the non-constant captures as arguments. */
static MlirOperation buildNestFunction(MlirOperation nest, Captures *c, MlirValue *args,
                                       int *numArgs) {
  MlirContext ctx = mlirOperationGetContext(nest);
  MlirLocation loc = mlirOperationGetLocation(nest);
  MlirType *types = malloc((size_t)(c->n + 1) * sizeof(MlirType));
  MlirLocation *locs = malloc((size_t)(c->n + 1) * sizeof(MlirLocation));
  *numArgs = 0;
  for (int k = 0; k < c->n; ++k)
    if (!isConstant(c->values[k])) {
      args[*numArgs] = c->values[k];
      types[*numArgs] = mlirValueGetType(c->values[k]);
      locs[(*numArgs)++] = loc;
    }
  MlirBlock body = mlirBlockCreate(*numArgs, types, locs);
  MlirRegion region = mlirRegionCreate();
  mlirRegionAppendOwnedBlock(region, body);
  for (int k = 0, a = 0; k < c->n; ++k) {
    if (isConstant(c->values[k])) {
      MlirOperation copy = mlirOperationClone(mlirOpResultGetOwner(c->values[k]));
      mlirBlockAppendOwnedOperation(body, copy);
      c->inside[k] = mlirOperationGetResult(copy, mlirOpResultGetResultNumber(c->values[k]));
    } else {
      c->inside[k] = mlirBlockGetArgument(body, a++);
    }
  }
  mlirOperationRemoveFromParent(nest);
  mlirBlockAppendOwnedOperation(body, nest);
  mlirOperationWalk(nest, remapCaptures, c, MlirWalkPreOrder);
  MlirOperationState ret = mlirOperationStateGet(pbcStr("func.return"), loc);
  mlirBlockAppendOwnedOperation(body, mlirOperationCreate(&ret));

  MlirType fnType = mlirFunctionTypeGet(ctx, *numArgs, types, 0, NULL);
  MlirAttribute noinline = mlirStringAttrGet(ctx, pbcStr("noinline"));
  MlirNamedAttribute attrs[] = {
      pbcNamedAttr(ctx, "sym_name", mlirStringAttrGet(ctx, pbcStr("pbc_nest"))),
      pbcNamedAttr(ctx, "function_type", mlirTypeAttrGet(fnType)),
      pbcNamedAttr(ctx, "sym_visibility", mlirStringAttrGet(ctx, pbcStr("private"))),
      /* What func-to-llvm carries to the LLVM function. */
      pbcNamedAttr(ctx, "passthrough", mlirArrayAttrGet(ctx, 1, &noinline)),
      pbcNamedAttr(ctx, "llvm.linkage",
            mlirAttributeParseGet(ctx, pbcStr("#llvm.linkage<internal>"))),
  };
  MlirOperationState st = mlirOperationStateGet(pbcStr("func.func"), loc);
  mlirOperationStateAddAttributes(&st, 5, attrs);
  mlirOperationStateAddOwnedRegions(&st, 1, &region);
  free(types);
  free(locs);
  return mlirOperationCreate(&st);
}

/* Outlined functions by their text (printed under one placeholder name). */
typedef struct Known {
  char **texts;
  MlirAttribute *names; /* FlatSymbolRefAttr of each */
  uint64_t *hashes;
  int n, cap;
} Known;

static uint64_t hashText(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

static int findKnown(const Known *k, const char *text, uint64_t h) {
  for (int i = 0; i < k->n; ++i)
    if (k->hashes[i] == h && strcmp(k->texts[i], text) == 0)
      return i;
  return -1;
}

static void addKnown(Known *k, char *text, uint64_t h, MlirAttribute name) {
  if (k->n == k->cap) {
    k->cap = k->cap ? 2 * k->cap : 64;
    k->texts = realloc(k->texts, (size_t)k->cap * sizeof(char *));
    k->names = realloc(k->names, (size_t)k->cap * sizeof(MlirAttribute));
    k->hashes = realloc(k->hashes, (size_t)k->cap * sizeof(uint64_t));
  }
  k->texts[k->n] = text;
  k->names[k->n] = name;
  k->hashes[k->n++] = h;
}

typedef struct Outliner {
  MlirSymbolTable symbols;
  MlirOpPrintingFlags flags;
  Known known;
  int count;
} Outliner;

/* Replaces `nest` (at the top level of `func`) by a call. */
static void outlineNest(Outliner *o, MlirOperation func, MlirOperation nest) {
  MlirContext ctx = mlirOperationGetContext(nest);
  MlirLocation loc = mlirOperationGetLocation(nest);
  Captures c = {.nest = nest};
  mlirOperationWalk(nest, collectCaptures, &c, MlirWalkPreOrder);
  MlirValue *args = malloc((size_t)(c.n + 1) * sizeof(MlirValue));
  int numArgs = 0;
  MlirOperation anchor = mlirOperationGetNextInBlock(nest); /* a nest never ends a block */
  MlirBlock block = mlirOperationGetBlock(nest);
  MlirOperation fn = buildNestFunction(nest, &c, args, &numArgs);

  PbcStrBuf text = {0};
  mlirOperationPrintWithFlags(fn, o->flags, pbcStrBufCallback, &text);
  uint64_t h = hashText(text.data, text.len);
  int same = findKnown(&o->known, text.data, h);
  MlirAttribute callee;
  if (same >= 0) {
    callee = o->known.names[same];
    mlirOperationDestroy(fn);
    pbcStrBufDestroy(&text);
  } else {
    MlirAttribute funcName = mlirOperationGetAttributeByName(func, pbcStr("sym_name"));
    char name[512];
    snprintf(name, sizeof(name), "%.*s_nest%d", (int)mlirStringAttrGetValue(funcName).length,
             mlirStringAttrGetValue(funcName).data, o->count++);
    mlirOperationSetAttributeByName(fn, pbcStr("sym_name"), mlirStringAttrGet(ctx, pbcStr(name)));
    mlirBlockInsertOwnedOperationAfter(mlirOperationGetBlock(func), func, fn);
    MlirAttribute unique = mlirSymbolTableInsert(o->symbols, fn);
    callee = mlirFlatSymbolRefAttrGet(ctx, mlirStringAttrGetValue(unique));
    addKnown(&o->known, text.data, h, callee); /* keeps the text */
  }
  MlirOperationState call = mlirOperationStateGet(pbcStr("func.call"), loc);
  MlirNamedAttribute calleeAttr = pbcNamedAttr(ctx, "callee", callee);
  mlirOperationStateAddAttributes(&call, 1, &calleeAttr);
  mlirOperationStateAddOperands(&call, numArgs, args);
  mlirBlockInsertOwnedOperationBefore(block, anchor, mlirOperationCreate(&call));
  free(args);
  free(c.values);
  free(c.inside);
}

static bool hasLoops(MlirOperation func) {
  MlirRegion body = mlirOperationGetRegion(func, 0);
  for (MlirBlock b = mlirRegionGetFirstBlock(body); !mlirBlockIsNull(b);
       b = mlirBlockGetNextInRegion(b))
    for (MlirOperation op = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(op);
         op = mlirOperationGetNextInBlock(op))
      if (mlirOperationGetNumRegions(op) > 0)
        return true;
  return false;
}

/* No IR optimization and fast instruction selection for glue code (what
 * func-to-llvm carries to the LLVM function; optnone needs noinline). */
static void markGlue(MlirOperation func) {
  MlirContext ctx = mlirOperationGetContext(func);
  MlirAttribute attrs[] = {mlirStringAttrGet(ctx, pbcStr("noinline")),
                           mlirStringAttrGet(ctx, pbcStr("optnone"))};
  if (mlirAttributeIsNull(mlirOperationGetAttributeByName(func, pbcStr("passthrough"))))
    mlirOperationSetAttributeByName(func, pbcStr("passthrough"), mlirArrayAttrGet(ctx, 2, attrs));
}

static bool run(MlirOperation module, void *state) {
  (void)state;
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  int numFuncs = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    numFuncs += pbcOpIsA(op, "func.func");
  MlirOperation *funcs = malloc((size_t)(numFuncs + 1) * sizeof(MlirOperation));
  numFuncs = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (pbcOpIsA(op, "func.func"))
      funcs[numFuncs++] = op;
  Outliner o = {.symbols = mlirSymbolTableCreate(module)};
  o.flags = mlirOpPrintingFlagsCreate();
  mlirOpPrintingFlagsAssumeVerified(o.flags);
  for (int f = 0; f < numFuncs; ++f) {
    MlirRegion body = mlirOperationGetRegion(funcs[f], 0);
    for (MlirBlock b = mlirRegionGetFirstBlock(body); !mlirBlockIsNull(b);
         b = mlirBlockGetNextInRegion(b))
      for (MlirOperation op = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(op);) {
        MlirOperation next = mlirOperationGetNextInBlock(op);
        if (isNest(op))
          outlineNest(&o, funcs[f], op);
        op = next;
      }
    if (!mlirBlockIsNull(mlirRegionGetFirstBlock(body)) && !hasLoops(funcs[f]))
      markGlue(funcs[f]);
  }
  for (int i = 0; i < o.known.n; ++i)
    free(o.known.texts[i]);
  free(o.known.texts);
  free(o.known.names);
  free(o.known.hashes);
  mlirOpPrintingFlagsDestroy(o.flags);
  mlirSymbolTableDestroy(o.symbols);
  free(funcs);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcOutlineNestsPass, "pbc-outline-nests", "builtin.module",
                           "Each top-level loop nest as a private noinline function, "
                           "identical nests sharing one",
                           run);
