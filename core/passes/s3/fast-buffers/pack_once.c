/* pbc-pack-once{fast-memory-space}: the packed tiles of an input that does
 * not change between calls, packed on the first call only.
 *
 * pbc-pack copies a weight's tiles (a convolution's filter panels) into a
 * fresh buffer on every call. For weights larger than the caches that copy
 * is a pass over memory per call which the copy loop cannot overlap with
 * compute (ResNet's 3x3 convolutions at 7x7 read 9.4 MB of filter each);
 * read in place instead, their panels' rows are kilobytes apart and the
 * hardware prefetchers lose them. onnxruntime and oneDNN reorder weights
 * once, at load. Here an argument the caller marks `pbc.invariant` (its
 * contents do not change between calls while its address stays the same:
 * a model's parameters) keeps its packed tiles across calls:
 *
 *   - each buffer pbc-pack fills from it becomes a slot of a global array
 *     with one slot per iteration of the loops the copy depends on (a
 *     rank-reducing subview; the accesses are unchanged);
 *   - the copy runs under `scf.if` only when the argument's address differs
 *     from the one recorded when the slots were last filled (a global
 *     written after the nest): the first call, or another tensor passed;
 *   - within the call that packs, every iteration packs its own slot (as
 *     before: iterations of loops the copy does not depend on write equal
 *     values to the same slot).
 *
 * Applies to CPUs (fast memory = the caches); a GPU's shared-memory tiles
 * are per block and stay as they are. Last in S3: every pass that reads
 * the packed buffers has run. */
#include <stdlib.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/affine_access.h" /* PBC_MAX_RANK */
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/loops.h"
#include "pbc/memrefs.h"
#include "pbc/op_list.h"
#include "passes/passes.h"

typedef struct {
  unsigned fastSpace;
} State;

/* The module's symbols: the globals made here get names no other symbol
 * has (the table renames on a clash). */
typedef struct {
  MlirOperation module;
  MlirSymbolTable symbols;
} Globals;

enum { kMaxDims = 8 };
/* A global larger than this is not made (a program's weights are hundreds
 * of MB at most; a slot space that large means a loop was misread). */
static const long long kMaxGlobalBytes = 1ll << 31;

typedef struct {
  MlirValue iv;
  long long lb, step, trip;
  int depth; /* ancestors: outer loops first */
} Dim;

typedef struct {
  MlirOperation alloc, copy;
  MlirOperation nest; /* the outermost loop of the loops around alloc */
  MlirValue source; /* the invariant function argument the copy reads */
  Dim dims[kMaxDims];
  int nDims;
  bool ok;
} Site;

static bool constantResult(MlirAttribute mapAttr, intptr_t k, long long *value) {
  if (mlirAttributeIsNull(mapAttr))
    return false;
  MlirAffineMap map = mlirAffineMapAttrGetValue(mapAttr);
  if (mlirAffineMapGetNumInputs(map) != 0 || k >= mlirAffineMapGetNumResults(map))
    return false;
  MlirAffineExpr e = mlirAffineMapGetResult(map, k);
  if (!mlirAffineExprIsAConstant(e))
    return false;
  *value = mlirAffineConstantExprGetValue(e);
  return true;
}

static int depthOf(MlirOperation op) {
  int d = 0;
  for (MlirOperation p = mlirOperationGetParentOperation(op); !mlirOperationIsNull(p);
       p = mlirOperationGetParentOperation(p))
    ++d;
  return d;
}

/* The iteration space of the loop whose iv `v` is: constant bounds only. */
static bool loopDim(MlirValue v, Dim *d) {
  MlirOperation loop = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v));
  long long ub = 0;
  d->iv = v;
  d->depth = depthOf(loop);
  if (pbcOpIsA(loop, "affine.for")) {
    if (!mlirValueEqual(v, pbcLoopIv(loop)) || pbcLoopHasBoundOperands(loop) ||
        !constantResult(mlirOperationGetAttributeByName(loop, pbcStr("lowerBoundMap")), 0, &d->lb) ||
        !constantResult(mlirOperationGetAttributeByName(loop, pbcStr("upperBoundMap")), 0, &ub))
      return false;
    d->step = pbcLoopStep(loop);
  } else if (pbcOpIsA(loop, "affine.parallel")) {
    intptr_t k = mlirBlockArgumentGetArgNumber(v);
    intptr_t n = mlirBlockGetNumArguments(mlirBlockArgumentGetOwner(v));
    MlirAttribute lbs = mlirOperationGetAttributeByName(loop, pbcStr("lowerBoundsMap"));
    MlirAttribute ubs = mlirOperationGetAttributeByName(loop, pbcStr("upperBoundsMap"));
    MlirAttribute steps = mlirOperationGetAttributeByName(loop, pbcStr("steps"));
    if (mlirOperationGetNumOperands(loop) != 0 || mlirAttributeIsNull(steps) ||
        !mlirAttributeIsAArray(steps) || mlirArrayAttrGetNumElements(steps) != n ||
        mlirAffineMapGetNumResults(mlirAffineMapAttrGetValue(lbs)) != n ||
        mlirAffineMapGetNumResults(mlirAffineMapAttrGetValue(ubs)) != n ||
        !constantResult(lbs, k, &d->lb) || !constantResult(ubs, k, &ub))
      return false;
    d->step = mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(steps, k));
  } else {
    return false;
  }
  if (d->step <= 0 || ub <= d->lb)
    return false;
  d->trip = (ub - d->lb + d->step - 1) / d->step;
  return true;
}

static void addDim(Site *s, MlirValue iv) {
  for (int i = 0; i < s->nDims; ++i)
    if (mlirValueEqual(s->dims[i].iv, iv))
      return;
  if (s->nDims == kMaxDims || !loopDim(iv, &s->dims[s->nDims])) {
    s->ok = false;
    return;
  }
  if (s->dims[s->nDims].trip > 1) /* one iteration: one slot, no index */
    ++s->nDims;
}

/* An affine load or store (vector or not) of `memref`; *isWrite says
 * which. By name, not pbcAccessGet: pbc-panel-layout's subscripts (floordiv,
 * mod) are beyond the linear forms. */
static bool affineAccessOf(MlirOperation op, MlirValue memref, bool *isWrite) {
  *isWrite = pbcOpIsA(op, "affine.store") || pbcOpIsA(op, "affine.vector_store");
  bool read = pbcOpIsA(op, "affine.load") || pbcOpIsA(op, "affine.vector_load");
  return (read || *isWrite) &&
         mlirValueEqual(mlirOperationGetOperand(op, *isWrite ? 1 : 0), memref);
}

/* What the copy nest takes from outside: the buffer, constants, one
 * invariant argument (or views of it), and the ivs of enclosing loops with
 * constant bounds. Anything else (a value computed outside) and the site is
 * left alone. */
static MlirWalkResult scanCopy(MlirOperation op, void *data) {
  Site *s = data;
  bool isWrite = false;
  if ((pbcOpIsA(op, "affine.store") || pbcOpIsA(op, "affine.vector_store") ||
       pbcOpIsA(op, "memref.store") || pbcOpIsA(op, "vector.store")) &&
      !affineAccessOf(op, mlirOperationGetResult(s->alloc, 0), &isWrite))
    s->ok = false; /* a copy writes only its buffer */
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op) && s->ok; ++i) {
    MlirValue v = mlirOperationGetOperand(op, i);
    if (pbcValueIsDefinedInside(v, s->copy) ||
        mlirValueEqual(v, mlirOperationGetResult(s->alloc, 0)))
      continue;
    if (mlirValueIsAOpResult(v) && pbcOpIsA(mlirOpResultGetOwner(v), "arith.constant"))
      continue;
    if (mlirTypeIsAMemRef(mlirValueGetType(v))) {
      MlirValue base = pbcMemrefBase(v);
      if (!pbcMemrefIsInvariantArg(base) ||
          (!mlirValueIsNull(s->source) && !mlirValueEqual(s->source, base)))
        s->ok = false;
      s->source = base;
      continue;
    }
    if (mlirValueIsABlockArgument(v))
      addDim(s, v);
    else
      s->ok = false;
  }
  return s->ok ? MlirWalkResultAdvance : MlirWalkResultInterrupt;
}

static bool isLoop(MlirOperation op) {
  return pbcOpIsA(op, "affine.for") || pbcOpIsA(op, "affine.parallel") ||
         pbcOpIsA(op, "scf.for") || pbcOpIsA(op, "scf.parallel");
}

/* The outermost of the loops directly around `op` (a nest, or the branch of
 * a nest versioned under scf.if), after which the address is recorded once
 * every iteration has packed its slot; null if `op` is in no loop, or if
 * another loop encloses that one (the record would precede iterations
 * that still have to pack). */
static MlirOperation nestOf(MlirOperation op) {
  MlirOperation nest = {NULL};
  MlirOperation p = mlirOperationGetParentOperation(op);
  for (; !mlirOperationIsNull(p) && isLoop(p); p = mlirOperationGetParentOperation(p))
    nest = p;
  for (; !mlirOperationIsNull(p) && !pbcOpIsA(p, "func.func"); p = mlirOperationGetParentOperation(p))
    if (isLoop(p))
      return (MlirOperation){NULL};
  return nest;
}

/* The site of `alloc` (a static buffer pbc-pack filled from an invariant
 * argument), or one with ok = false. */
static Site siteOf(MlirOperation alloc) {
  Site s = {.alloc = alloc, .ok = true};
  MlirValue buf = mlirOperationGetResult(alloc, 0);
  MlirType t = mlirValueGetType(buf);
  s.nest = nestOf(alloc);
  if (mlirOperationIsNull(s.nest) || mlirOperationGetNumOperands(alloc) != 0 ||
      !mlirShapedTypeHasStaticShape(t) ||
      !pbcMemrefHasIdentityLayout(t) || mlirMemRefTypeGetMemorySpace(t).ptr != NULL) {
    s.ok = false;
    return s;
  }
  int deallocs = 0;
  for (MlirOpOperand u = mlirValueGetFirstUse(buf); !mlirOpOperandIsNull(u) && s.ok;
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    bool isWrite = false;
    if (pbcOpIsA(user, "memref.dealloc")) {
      ++deallocs;
    } else if (!affineAccessOf(user, buf, &isWrite)) {
      s.ok = false; /* a view or a call: the buffer escapes */
    } else if (isWrite) {
      MlirOperation copy = pbcCopyNestOf(user);
      if (mlirOperationIsNull(copy) ||
          (!mlirOperationIsNull(s.copy) && !mlirOperationEqual(copy, s.copy)))
        s.ok = false;
      s.copy = copy;
    }
  }
  if (!s.ok || deallocs > 1 || mlirOperationIsNull(s.copy) ||
      !mlirBlockEqual(mlirOperationGetBlock(s.copy), mlirOperationGetBlock(alloc))) {
    s.ok = false;
    return s;
  }
  mlirOperationWalk(s.copy, scanCopy, &s, MlirWalkPreOrder);
  s.ok &= !mlirValueIsNull(s.source);
  return s;
}

static MlirWalkResult findAllocs(MlirOperation op, void *data) {
  if (pbcOpIsA(op, "memref.alloc"))
    pbcOpListPush(data, op);
  return MlirWalkResultAdvance;
}

/* The argument's address as i64, before `before`. */
static MlirValue addressOf(MlirOperation before, MlirValue memref) {
  MlirContext ctx = mlirOperationGetContext(before);
  MlirValue p = mlirOperationGetResult(pbcBuildOp(before, "memref.extract_aligned_pointer_as_index",
                                                  1, &memref, mlirIndexTypeGet(ctx), 0, NULL),
                                       0);
  return mlirOperationGetResult(
      pbcBuildOp(before, "arith.index_cast", 1, &p, mlirIntegerTypeGet(ctx, 64), 0, NULL), 0);
}

static int byDepth(const void *a, const void *b) {
  return ((const Dim *)a)->depth - ((const Dim *)b)->depth;
}

static void packOnce(Site *s, const Globals *g) {
  MlirContext ctx = mlirOperationGetContext(s->alloc);
  MlirValue buf = mlirOperationGetResult(s->alloc, 0);
  MlirType t = mlirValueGetType(buf);
  int rank = (int)mlirShapedTypeGetRank(t), m = s->nDims;
  qsort(s->dims, (size_t)m, sizeof(Dim), byDepth);
  int64_t shape[kMaxDims + PBC_MAX_RANK], strides[kMaxDims + PBC_MAX_RANK];
  long long bytes = pbcMemrefBytes(t);
  for (int i = 0; i < m; ++i) {
    shape[i] = s->dims[i].trip;
    bytes *= s->dims[i].trip;
  }
  if (rank > PBC_MAX_RANK || bytes > kMaxGlobalBytes)
    return;
  for (int r = 0; r < rank; ++r)
    shape[m + r] = mlirShapedTypeGetDimSize(t, r);
  strides[m + rank - 1] = 1;
  for (int r = m + rank - 2; r >= 0; --r)
    strides[r] = strides[r + 1] * shape[r + 1];
  MlirType elem = mlirShapedTypeGetElementType(t);
  MlirType slots = mlirMemRefTypeGet(elem, m + rank, shape, mlirAttributeGetNull(),
                                     mlirAttributeGetNull());
  MlirType i64 = mlirIntegerTypeGet(ctx, 64);
  int64_t one = 1;
  MlirType srcType = mlirMemRefTypeGet(i64, 1, &one, mlirAttributeGetNull(), mlirAttributeGetNull());
  MlirType srcTensor = mlirRankedTensorTypeGet(1, &one, i64, mlirAttributeGetNull());
  MlirStringRef name = pbcBuildGlobal(g->module, g->symbols, "pbc_packed", slots, mlirAttributeGetNull(), false);
  MlirStringRef srcName =
      pbcBuildGlobal(g->module, g->symbols, "pbc_packed_source", srcType,
                     mlirDenseElementsAttrInt64Get(srcTensor, 1, &(int64_t){0}), false);

  /* The slot: the loops' normalized ivs, then the buffer. */
  MlirOperation at = s->alloc;
  MlirValue all = pbcBuildGetGlobal(at, name, slots), slot = all;
  if (m > 0) {
    MlirValue idx[kMaxDims];
    for (int i = 0; i < m; ++i) {
      const Dim *d = &s->dims[i];
      MlirAffineExpr e = mlirAffineFloorDivExprGet(
          mlirAffineAddExprGet(mlirAffineDimExprGet(ctx, 0), mlirAffineConstantExprGet(ctx, -d->lb)),
          mlirAffineConstantExprGet(ctx, d->step));
      idx[i] = pbcBuildAffineApply(at, mlirAffineMapGet(ctx, 1, 0, 1, &e), &d->iv, 1,
                                   mlirOperationGetLocation(at));
    }
    int64_t offs[kMaxDims + PBC_MAX_RANK], sizes[kMaxDims + PBC_MAX_RANK], unit[kMaxDims + PBC_MAX_RANK];
    for (int r = 0; r < m + rank; ++r) {
      offs[r] = r < m ? mlirShapedTypeGetDynamicStrideOrOffset() : 0;
      sizes[r] = r < m ? 1 : shape[r];
      unit[r] = 1;
    }
    MlirValue operands[1 + kMaxDims];
    operands[0] = all;
    for (int i = 0; i < m; ++i)
      operands[1 + i] = idx[i];
    int32_t segments[4] = {1, m, 0, 0};
    MlirNamedAttribute attrs[] = {
        pbcNamedAttr(ctx, "static_offsets", mlirDenseI64ArrayGet(ctx, m + rank, offs)),
        pbcNamedAttr(ctx, "static_sizes", mlirDenseI64ArrayGet(ctx, m + rank, sizes)),
        pbcNamedAttr(ctx, "static_strides", mlirDenseI64ArrayGet(ctx, m + rank, unit)),
        pbcNamedAttr(ctx, "operandSegmentSizes", mlirDenseI32ArrayGet(ctx, 4, segments)),
    };
    MlirAttribute layout =
        mlirStridedLayoutAttrGet(ctx, mlirShapedTypeGetDynamicStrideOrOffset(), rank, strides + m);
    MlirType view = mlirMemRefTypeGet(elem, rank, shape + m, layout, mlirAttributeGetNull());
    slot = mlirOperationGetResult(pbcBuildOp(at, "memref.subview", 1 + m, operands, view, 4, attrs), 0);
  }

  /* The copy, only when the slots hold another tensor's tiles. */
  MlirValue zero = pbcBuildIndexConstant(s->copy, 0);
  MlirValue source = pbcBuildGetGlobal(s->copy, srcName, srcType);
  MlirValue loadOps[2] = {source, zero};
  MlirValue recorded =
      mlirOperationGetResult(pbcBuildOp(s->copy, "memref.load", 2, loadOps, i64, 0, NULL), 0);
  MlirValue cmp[2] = {addressOf(s->copy, s->source), recorded};
  MlirNamedAttribute ne =
      pbcNamedAttr(ctx, "predicate", mlirIntegerAttrGet(i64, 1 /* arith::CmpIPredicate::ne */));
  MlirValue differs = mlirOperationGetResult(
      pbcBuildOp(s->copy, "arith.cmpi", 2, cmp, mlirIntegerTypeGet(ctx, 1), 1, &ne), 0);
  MlirOperation guard = pbcBuildIf(s->copy, differs, false);
  MlirBlock then = mlirRegionGetFirstBlock(mlirOperationGetRegion(guard, 0));
  mlirOperationMoveBefore(s->copy, mlirBlockGetFirstOperation(then));

  /* The address recorded after the nest: the slots hold its tiles. */
  MlirOperation after = mlirOperationGetNextInBlock(s->nest);
  MlirValue storeOps[3] = {addressOf(after, s->source), pbcBuildGetGlobal(after, srcName, srcType),
                           pbcBuildIndexConstant(after, 0)};
  pbcBuildOp(after, "memref.store", 3, storeOps, (MlirType){NULL}, 0, NULL);

  /* The buffer is the slot; nothing to free. */
  for (MlirOpOperand u = mlirValueGetFirstUse(buf); !mlirOpOperandIsNull(u);) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    u = mlirOpOperandGetNextUse(u);
    if (pbcOpIsA(user, "memref.dealloc"))
      mlirOperationDestroy(user);
  }
  mlirValueReplaceAllUsesOfWith(buf, slot);
  mlirOperationDestroy(s->alloc);
}

static bool run(MlirOperation module, void *state) {
  const State *st = state;
  if (st->fastSpace != 0)
    return true;
  PbcOpList allocs = {0};
  mlirOperationWalk(module, findAllocs, &allocs, MlirWalkPreOrder);
  Globals g = {module, mlirSymbolTableCreate(module)};
  for (int i = 0; i < allocs.n; ++i) {
    Site s = siteOf(allocs.ops[i]);
    if (s.ok)
      packOnce(&s, &g);
  }
  mlirSymbolTableDestroy(g.symbols);
  pbcOpListDestroy(&allocs);
  return true;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcPackOncePass = {
    "pbc-pack-once", "builtin.module",
    "Pack the tiles of arguments marked pbc.invariant on the first call only", run,
    sizeof(State), createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  enum { FAST_MEMORY_SPACE, NUM_OPTIONS };
  static const PbcCountOption kOptions[] = {[FAST_MEMORY_SPACE] = {"fast-memory-space", 0},
                                            [NUM_OPTIONS] = {NULL, 0}};
  long long v[NUM_OPTIONS];
  if (!pbcPassCountOptions(options, kOptions, v, err, errLen))
    return (MlirPass){NULL};
  State st = {(unsigned)v[FAST_MEMORY_SPACE]};
  return pbcCPassCreate(&pbcPackOncePass, &st);
}
