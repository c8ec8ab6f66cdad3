/* pbc-streaming-stores{l3-bytes}: non-temporal stores for large results.
 * A store to a line that is not in the cache first reads the line (the
 * write-allocate), so writing a result costs twice its size in memory
 * traffic, and the result then evicts data the program still reads. A
 * result that is only written in the function and is larger than a quarter
 * of L3 would not survive in the cache until its consumer anyway: its
 * vector stores become non-temporal (vmovntps), which write whole lines
 * without reading them (blur: 1.03 -> 0.6 ms, with pbc-hoist-invariant-loads;
 * the same stores into a 12 MB buffer took 0.68 ms cached, 0.4 streamed).
 *
 * x86 has non-temporal stores only for aligned vectors, and a caller's buffer
 * may be aligned to anything. So a nest with such stores is versioned:
 * `scf.if` every result it streams to starts on a vector boundary, a copy
 * of the nest with non-temporal stores, else the nest as it was. A store
 * streams only if its element offset is provably a multiple of its vector
 * length in every iteration (from the subscripts' strides, and the lower
 * bounds and steps of the loops they read), so the base alignment is all the
 * check needs. Runs after pbc-parallelize: the versioned nests are no longer
 * root affine.for ops the earlier passes look for. */
#include <stdlib.h>

#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/passes.h"

typedef struct {
  long long minBytes;
} State;

enum { kMaxStores = 256, kMaxBases = 8 };

static MlirStringRef str(const char *s) { return mlirStringRefCreateFromCString(s); }

static bool isFuncArgument(MlirValue v) {
  return mlirValueIsABlockArgument(v) &&
         pbcOpIsA(mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v)), "func.func");
}

/* Views that keep the buffer's row-major order (linear offsets unchanged). */
static bool isContiguousView(MlirOperation op) {
  return pbcOpIsA(op, "memref.collapse_shape") || pbcOpIsA(op, "memref.expand_shape");
}

/* True if every use of `memref` (and of its contiguous views) is an affine
 * store into it: the function only writes it. */
static bool onlyStoredTo(MlirValue memref) {
  for (MlirOpOperand u = mlirValueGetFirstUse(memref); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    unsigned pos = mlirOpOperandGetOperandNumber(u);
    if (isContiguousView(user) && pos == 0) {
      if (!onlyStoredTo(mlirOperationGetResult(user, 0)))
        return false;
    } else if (!((pbcOpIsA(user, "affine.store") || pbcOpIsA(user, "affine.vector_store")) &&
                 pos == 1)) {
      return false;
    }
  }
  return true;
}

/* The values an induction variable takes are lb + k * step. */
static bool ivLowerBoundAndStep(MlirValue v, long long *lb, long long *step) {
  if (!mlirValueIsABlockArgument(v))
    return false;
  MlirOperation loop = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v));
  const char *lbName;
  intptr_t pos = mlirBlockArgumentGetArgNumber(v);
  if (pbcOpIsA(loop, "affine.for") && pos == 0) {
    lbName = "lowerBoundMap";
    *step = pbcLoopStep(loop);
  } else if (pbcOpIsA(loop, "affine.parallel")) {
    lbName = "lowerBoundsMap";
    MlirAttribute steps = mlirOperationGetAttributeByName(loop, str("steps"));
    if (mlirAttributeIsNull(steps) || !mlirAttributeIsAArray(steps) ||
        pos >= mlirArrayAttrGetNumElements(steps))
      return false;
    *step = mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(steps, pos));
  } else {
    return false;
  }
  MlirAttribute lbAttr = mlirOperationGetAttributeByName(loop, str(lbName));
  if (mlirAttributeIsNull(lbAttr) || !mlirAttributeIsAAffineMap(lbAttr))
    return false;
  MlirAffineMap map = mlirAffineMapAttrGetValue(lbAttr);
  if (pos >= mlirAffineMapGetNumResults(map))
    return false;
  MlirAffineExpr e = mlirAffineMapGetResult(map, pos);
  if (!mlirAffineExprIsAConstant(e))
    return false;
  *lb = mlirAffineConstantExprGetValue(e);
  return true;
}

/* True if the store's row-major element offset is a multiple of its lanes in
 * every iteration. */
static bool offsetAligned(const PbcAccess *a) {
  MlirType t = mlirValueGetType(a->memref);
  if (!pbcMemrefHasIdentityLayout(t) || !mlirShapedTypeHasStaticShape(t))
    return false;
  long long stride = 1;
  for (int d = a->rank - 1; d >= 0; --d) {
    const PbcLinearForm *f = &a->subscripts[d];
    if ((stride * f->constant) % a->lanes != 0)
      return false;
    for (int i = 0; i < f->nTerms; ++i) {
      long long lb, step, c = stride * f->coeffs[i];
      if (!ivLowerBoundAndStep(f->values[i], &lb, &step) || (c * lb) % a->lanes != 0 ||
          (c * step) % a->lanes != 0)
        return false;
    }
    stride *= mlirShapedTypeGetDimSize(t, d);
  }
  return true;
}

/* The vector store's bytes if it can stream (0 if not). */
static long long streamableBytes(MlirOperation op, const State *st) {
  PbcAccess a;
  if (!pbcOpIsA(op, "affine.vector_store") || !pbcAccessGet(op, &a) || a.lanes == 0)
    return 0;
  MlirValue base = pbcMemrefBase(a.memref);
  MlirType bt = mlirValueGetType(base);
  long long bytes = pbcMemrefElements(bt) * (pbcElementBits(bt) / 8); /* < 0: dynamic */
  long long vectorBytes = (long long)a.lanes * pbcElementBits(bt) / 8;
  if (!isFuncArgument(base) || bytes < st->minBytes || vectorBytes < 16 ||
      (vectorBytes & (vectorBytes - 1)) != 0 || !onlyStoredTo(base) || !offsetAligned(&a))
    return 0;
  return vectorBytes;
}

typedef struct {
  const State *st;
  MlirOperation stores[kMaxStores];
  int n;
  long long alignment;
} Streamable;

static MlirWalkResult collect(MlirOperation op, void *data) {
  Streamable *s = data;
  long long bytes = streamableBytes(op, s->st);
  if (bytes > 0 && s->n < kMaxStores) {
    s->stores[s->n++] = op;
    if (bytes > s->alignment)
      s->alignment = bytes;
  }
  return MlirWalkResultAdvance;
}

static MlirOperation create(MlirOperation before, const char *name, const MlirValue *operands,
                            int n, MlirType result, MlirLocation loc) {
  MlirOperationState st = mlirOperationStateGet(str(name), loc);
  mlirOperationStateAddOperands(&st, n, operands);
  if (!mlirTypeIsNull(result))
    mlirOperationStateAddResults(&st, 1, &result);
  MlirOperation op = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(before), before, op);
  return op;
}

static MlirValue indexConstant(MlirOperation before, long long v, MlirLocation loc) {
  MlirContext ctx = mlirLocationGetContext(loc);
  MlirType index = mlirIndexTypeGet(ctx);
  MlirNamedAttribute value =
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, str("value")), mlirIntegerAttrGet(index, v));
  MlirOperationState st = mlirOperationStateGet(str("arith.constant"), loc);
  mlirOperationStateAddAttributes(&st, 1, &value);
  mlirOperationStateAddResults(&st, 1, &index);
  MlirOperation op = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(before), before, op);
  return mlirOperationGetResult(op, 0);
}

/* i1: every base the stores write starts on an `alignment`-byte boundary. */
static MlirValue basesAligned(MlirOperation before, const Streamable *s, MlirLocation loc) {
  MlirContext ctx = mlirLocationGetContext(loc);
  MlirType index = mlirIndexTypeGet(ctx), i1 = mlirIntegerTypeGet(ctx, 1);
  MlirValue bases[kMaxBases], all = {NULL}, zero = indexConstant(before, 0, loc);
  MlirValue align = indexConstant(before, s->alignment, loc);
  int nBases = 0;
  for (int i = 0; i < s->n; ++i) {
    PbcAccess a;
    pbcAccessGet(s->stores[i], &a);
    MlirValue base = pbcMemrefBase(a.memref);
    bool seen = false;
    for (int b = 0; b < nBases; ++b)
      seen |= mlirValueEqual(bases[b], base);
    if (seen || nBases == kMaxBases)
      continue;
    bases[nBases++] = base;
    MlirValue p = mlirOperationGetResult(
        create(before, "memref.extract_aligned_pointer_as_index", &base, 1, index, loc), 0);
    MlirValue rem[2] = {p, align};
    MlirValue cmp[2] = {
        mlirOperationGetResult(create(before, "arith.remui", rem, 2, index, loc), 0), zero};
    MlirOperation eq = create(before, "arith.cmpi", cmp, 2, i1, loc);
    mlirOperationSetAttributeByName(eq, str("predicate"),
                                    mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), 0));
    MlirValue ok = mlirOperationGetResult(eq, 0);
    if (!mlirValueIsNull(all)) {
      MlirValue both[2] = {all, ok};
      ok = mlirOperationGetResult(create(before, "arith.andi", both, 2, i1, loc), 0);
    }
    all = ok;
  }
  return all;
}

/* scf.if %cond {} else {} before `before`; the two yields in yields[]. */
static MlirOperation buildIf(MlirOperation before, MlirValue cond, MlirOperation yields[2],
                             MlirLocation loc) {
  MlirRegion regions[2];
  for (int r = 0; r < 2; ++r) {
    regions[r] = mlirRegionCreate();
    MlirBlock block = mlirBlockCreate(0, NULL, NULL);
    mlirRegionAppendOwnedBlock(regions[r], block);
    MlirOperationState yst = mlirOperationStateGet(str("scf.yield"), loc);
    yields[r] = mlirOperationCreate(&yst);
    mlirBlockAppendOwnedOperation(block, yields[r]);
  }
  MlirOperationState st = mlirOperationStateGet(str("scf.if"), loc);
  mlirOperationStateAddOperands(&st, 1, &cond);
  mlirOperationStateAddOwnedRegions(&st, 2, regions);
  MlirOperation op = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(before), before, op);
  return op;
}

/* affine.vector_store -> vector.store {nontemporal, alignment} at the same
 * element (its subscripts as affine.apply ops). */
static void makeNonTemporal(MlirOperation store, long long alignment) {
  MlirLocation loc = mlirOperationGetLocation(store);
  MlirContext ctx = mlirLocationGetContext(loc);
  MlirAffineMap map =
      mlirAffineMapAttrGetValue(mlirOperationGetInherentAttributeByName(store, str("map")));
  intptr_t nMapOperands = mlirOperationGetNumOperands(store) - 2;
  intptr_t rank = mlirAffineMapGetNumResults(map);
  MlirValue *mapOperands = malloc(sizeof(MlirValue) * (size_t)(nMapOperands + 1));
  MlirValue *operands = malloc(sizeof(MlirValue) * (size_t)(rank + 2));
  for (intptr_t i = 0; i < nMapOperands; ++i)
    mapOperands[i] = mlirOperationGetOperand(store, i + 2);
  operands[0] = mlirOperationGetOperand(store, 0);
  operands[1] = mlirOperationGetOperand(store, 1);
  for (intptr_t d = 0; d < rank; ++d) {
    intptr_t pos = d;
    operands[d + 2] = pbcBuildAffineApply(store, mlirAffineMapGetSubMap(map, 1, &pos), mapOperands,
                                          (int)nMapOperands, loc);
  }
  MlirOperation nt = create(store, "vector.store", operands, (int)rank + 2, (MlirType){NULL}, loc);
  mlirOperationSetInherentAttributeByName(nt, str("nontemporal"), mlirBoolAttrGet(ctx, 1));
  mlirOperationSetInherentAttributeByName(
      nt, str("alignment"), mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), alignment));
  mlirOperationDestroy(store);
  free(mapOperands);
  free(operands);
}

static void versionNest(MlirOperation root, const State *st) {
  Streamable *s = calloc(1, sizeof(Streamable));
  s->st = st;
  mlirOperationWalk(root, collect, s, MlirWalkPreOrder);
  if (s->n > 0) {
    MlirLocation loc = mlirOperationGetLocation(root);
    /* The copy's stores, found as in the original (before the alignment
     * check reads the bases: they must still be only stored to). */
    MlirOperation streamed = mlirOperationClone(root);
    long long alignment = s->alignment;
    s->n = 0;
    mlirOperationWalk(streamed, collect, s, MlirWalkPreOrder);
    MlirValue aligned = basesAligned(root, s, loc);
    MlirOperation yields[2];
    buildIf(root, aligned, yields, loc);
    mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(yields[0]), yields[0], streamed);
    mlirOperationMoveBefore(root, yields[1]);
    for (int i = 0; i < s->n; ++i)
      makeNonTemporal(s->stores[i], alignment);
  }
  free(s);
}

static bool run(MlirOperation func, void *state) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockIsNull(body))
    return true;
  MlirOperation roots[4096];
  int n = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op) && n < 4096;
       op = mlirOperationGetNextInBlock(op))
    if (pbcOpIsA(op, "affine.for") || pbcOpIsA(op, "affine.parallel"))
      roots[n++] = op;
  for (int i = 0; i < n; ++i)
    versionNest(roots[i], state);
  return true;
}

static const PbcCPassSpec kSpec = {"pbc-streaming-stores", "func.func",
                                   "Non-temporal stores for large write-only results", run,
                                   sizeof(State)};

MlirPass pbcCreateStreamingStoresPass(const char *options, char *err, size_t errLen) {
  static const char *const known[] = {"l3-bytes", NULL};
  if (!pbcPassOptionsCheck(options, known, err, errLen))
    return (MlirPass){NULL};
  State st = {pbcPassOptionInt(options, "l3-bytes", 32 << 20) / 4};
  return pbcCPassCreate(&kSpec, &st);
}
