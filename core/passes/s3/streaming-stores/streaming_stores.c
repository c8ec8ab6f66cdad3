/* pbc-streaming-stores{l3-bytes}: non-temporal stores for large results.
 * A store to a line that is not in the cache first reads the line (the
 * write-allocate), so writing a result costs twice its size in memory
 * traffic, and the result then evicts data the program still reads. A
 * result that is only written in the function and is larger than a quarter
 * of L3 would not survive in the cache until its consumer anyway: its
 * vector stores become non-temporal (vmovntps), which write whole lines
 * without reading them.
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
#include <string.h>

#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/op_list.h"
#include "passes/passes.h"

typedef struct {
  long long minBytes;
} State;

enum { kMaxStores = 256, kMaxBases = 8 };


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

/* True if the store's row-major element offset is a multiple of its lanes in
 * every iteration. */
static bool offsetAligned(const PbcAccess *a) {
  MlirType t = mlirValueGetType(a->memref);
  if (!pbcMemrefHasIdentityLayout(t) || !mlirShapedTypeHasStaticShape(t))
    return false;
  long long stride = 1;
  for (int d = a->rank - 1; d >= 0; --d) {
    const PbcLinearForm *f = &a->subscripts[d];
    long long g = pbcLinearTermsGcd(f, stride);
    if ((stride * f->constant) % a->lanes != 0 || g < 0 || g % a->lanes != 0)
      return false;
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
  long long bytes = pbcMemrefBytes(bt); /* < 0: dynamic */
  long long vectorBytes = (long long)a.lanes * pbcElementBits(bt) / 8;
  if (!isFuncArgument(base) || bytes < st->minBytes || vectorBytes < 16 ||
      (vectorBytes & (vectorBytes - 1)) != 0 || !onlyStoredTo(base) || !offsetAligned(&a))
    return 0;
  return vectorBytes;
}

/* A nest's streamable stores (each with its vector's bytes) and the results
 * they write; a store to a result beyond kMaxBases is left as it is, so
 * every streamed store's base is in the alignment check. */
typedef struct {
  const State *st;
  MlirOperation stores[kMaxStores];
  long long bytes[kMaxStores];
  int n;
  MlirValue bases[kMaxBases];
  int nBases;
  long long alignment; /* the largest vector: every base must be aligned to it */
} Streamable;

static bool recordBase(Streamable *s, MlirValue base) {
  for (int b = 0; b < s->nBases; ++b)
    if (mlirValueEqual(s->bases[b], base))
      return true;
  if (s->nBases == kMaxBases)
    return false;
  s->bases[s->nBases++] = base;
  return true;
}

static MlirWalkResult collect(MlirOperation op, void *data) {
  Streamable *s = data;
  long long bytes = streamableBytes(op, s->st);
  if (bytes > 0 && s->n < kMaxStores &&
      recordBase(s, pbcMemrefBase(mlirOperationGetOperand(op, 1)))) {
    s->stores[s->n] = op;
    s->bytes[s->n++] = bytes;
    if (bytes > s->alignment)
      s->alignment = bytes;
  }
  return MlirWalkResultAdvance;
}

/* i1: every result the stores write starts on an `alignment`-byte boundary
 * (vector sizes are powers of two: then each store is aligned to its own). */
static MlirValue basesAligned(MlirOperation before, const Streamable *s) {
  MlirContext ctx = mlirOperationGetContext(before);
  MlirType index = mlirIndexTypeGet(ctx), i1 = mlirIntegerTypeGet(ctx, 1);
  MlirNamedAttribute eq = mlirNamedAttributeGet(mlirIdentifierGet(ctx, pbcStr("predicate")),
                                                mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), 0));
  MlirValue zero = pbcBuildIndexConstant(before, 0);
  MlirValue align = pbcBuildIndexConstant(before, s->alignment), all = {NULL};
  for (int b = 0; b < s->nBases; ++b) {
    MlirValue rem[2] = {
        mlirOperationGetResult(pbcBuildOp(before, "memref.extract_aligned_pointer_as_index", 1,
                                          &s->bases[b], index, 0, NULL),
                               0),
        align};
    MlirValue cmp[2] = {
        mlirOperationGetResult(pbcBuildOp(before, "arith.remui", 2, rem, index, 0, NULL), 0), zero};
    MlirValue ok = mlirOperationGetResult(pbcBuildOp(before, "arith.cmpi", 2, cmp, i1, 1, &eq), 0);
    if (!mlirValueIsNull(all)) {
      MlirValue both[2] = {all, ok};
      ok = mlirOperationGetResult(pbcBuildOp(before, "arith.andi", 2, both, i1, 0, NULL), 0);
    }
    all = ok;
  }
  return all;
}

/* affine.vector_store -> vector.store {nontemporal, alignment} at the same
 * element (its subscripts as affine.apply ops). */
static void makeNonTemporal(MlirOperation store, long long alignment) {
  MlirLocation loc = mlirOperationGetLocation(store);
  MlirContext ctx = mlirLocationGetContext(loc);
  MlirAffineMap map =
      mlirAffineMapAttrGetValue(mlirOperationGetInherentAttributeByName(store, pbcStr("map")));
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
  MlirNamedAttribute attrs[2] = {
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, pbcStr("nontemporal")), mlirBoolAttrGet(ctx, 1)),
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, pbcStr("alignment")),
                            mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), alignment))};
  pbcBuildOp(store, "vector.store", (int)rank + 2, operands, (MlirType){NULL}, 2, attrs);
  mlirOperationDestroy(store);
  free(mapOperands);
  free(operands);
}

static void versionNest(MlirOperation root, const State *st) {
  Streamable *s = calloc(1, sizeof(Streamable));
  s->st = st;
  mlirOperationWalk(root, collect, s, MlirWalkPreOrder);
  if (s->n > 0) {
    /* The copy's stores, found as in the original (before the alignment
     * check reads the bases: they must still be only stored to). */
    MlirOperation streamed = mlirOperationClone(root);
    memset(s, 0, sizeof(*s));
    s->st = st;
    mlirOperationWalk(streamed, collect, s, MlirWalkPreOrder);
    MlirOperation ifOp = pbcBuildIf(root, basesAligned(root, s), true);
    MlirBlock thenBlock = mlirRegionGetFirstBlock(mlirOperationGetRegion(ifOp, 0));
    MlirBlock elseBlock = mlirRegionGetFirstBlock(mlirOperationGetRegion(ifOp, 1));
    mlirBlockInsertOwnedOperationBefore(thenBlock, mlirBlockGetTerminator(thenBlock), streamed);
    mlirOperationMoveBefore(root, mlirBlockGetTerminator(elseBlock));
    for (int i = 0; i < s->n; ++i)
      makeNonTemporal(s->stores[i], s->bytes[i]);
  }
  free(s);
}

static bool run(MlirOperation func, void *state) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockIsNull(body))
    return true;
  PbcOpList roots = {0};
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (pbcOpIsA(op, "affine.for") || pbcOpIsA(op, "affine.parallel"))
      pbcOpListPush(&roots, op);
  for (int i = 0; i < roots.n; ++i)
    versionNest(roots.ops[i], state);
  pbcOpListDestroy(&roots);
  return true;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcStreamingStoresPass = {
    "pbc-streaming-stores", "func.func", "Non-temporal stores for large write-only results", run,
    sizeof(State),          createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  enum { L3_BYTES, NUM_OPTIONS };
  static const PbcCountOption kOptions[] = {
      [L3_BYTES] = {"l3-bytes", 32 << 20},
      [NUM_OPTIONS] = {NULL, 0}};
  long long v[NUM_OPTIONS];
  if (!pbcPassCountOptions(options, kOptions, v, err, errLen))
    return (MlirPass){NULL};
  State st = {v[L3_BYTES] / 4};
  return pbcCPassCreate(&pbcStreamingStoresPass, &st);
}
