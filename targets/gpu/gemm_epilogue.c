/* The neighbours a matrix-unit kernel absorbs (matrix_units.h): the fill
 * that initializes C, and the pointwise consumer of C (bias, activation,
 * truncation to f16: the fused copy-out of the paper's A.2).
 *
 * Both are perfect nests over all of C, one iteration per element, with no
 * other nest between them and the gemm (only constants and allocations,
 * which move above it). The kernel produces every element of C exactly
 * once, so starting the accumulators from the fill's value is the fill, and
 * running the consumer's body on each final accumulator at its element's
 * indices is the consumer. That is legal because the consumer writes a
 * buffer that nothing the kernel reads may alias, one distinct element per
 * iteration (its store's subscripts are its loops' indices). */
#include <string.h>

#include "gpu_build.h"
#include "matrix_units.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"
#include "pbc/chain_match.h"
#include "pbc/ir_build.h"

enum { kMaxValues = 96 };

/* The nest's perfect band when it runs over a whole buffer that `acc`
 * indexes by the band's indices, each loop once (subscript d is loop
 * loopOf[d]), every loop from 0 with step 1 over that dimension. Returns
 * the depth, or 0. */
static int bandOver(MlirOperation nest, const PbcAccess *acc, MlirOperation band[], int loopOf[]) {
  int depth = pbcLoopBand(nest, band, kPbcMaxBand);
  MlirType t = mlirValueGetType(acc->memref);
  if (depth == 0 || acc->lanes || acc->rank != depth || !mlirShapedTypeHasStaticShape(t))
    return 0;
  bool used[kPbcMaxBand] = {false};
  for (int d = 0; d < depth; ++d) {
    loopOf[d] = -1;
    for (int l = 0; l < depth; ++l)
      if (!used[l] && pbcGpuSubscriptIsIv(&acc->subscripts[d], band[l]))
        loopOf[d] = l;
    if (loopOf[d] < 0 ||
        pbcLoopZeroBasedTrip(band[loopOf[d]]) != mlirShapedTypeGetDimSize(t, (intptr_t)d))
      return 0;
    used[loopOf[d]] = true;
  }
  return depth;
}

bool pbcGpuMatchFill(MlirOperation nest, MlirValue memref, MlirValue *value) {
  MlirOperation band[kPbcMaxBand];
  int loopOf[kPbcMaxBand];
  if (!pbcOpIsA(nest, "affine.for"))
    return false;
  int depth = pbcLoopBand(nest, band, kPbcMaxBand);
  MlirOperation store = mlirBlockGetFirstOperation(pbcLoopBody(band[depth - 1]));
  PbcAccess s;
  if (!pbcOpIsA(store, "affine.store") ||
      !pbcOpIsA(mlirOperationGetNextInBlock(store), "affine.yield") || !pbcAccessGet(store, &s) ||
      s.memref.ptr != memref.ptr || !bandOver(nest, &s, band, loopOf))
    return false;
  MlirValue v = mlirOperationGetOperand(store, 0);
  if (pbcValueIsDefinedInside(v, nest))
    return false;
  *value = v;
  return true;
}

/* A fill of all of C: one store of a value from outside the nest. */
static bool matchFill(PbcGemm *g, MlirOperation nest) {
  MlirValue v;
  if (!pbcGpuMatchFill(nest, g->c.memref, &v))
    return false;
  g->fill = nest;
  g->init = v;
  return true;
}

/* Whether the kernel may write `m` while it reads A, B and C. */
static bool distinctFromOperands(const PbcGemm *g, MlirValue m) {
  return !pbcMemrefsMayAlias(m, g->a.memref) && !pbcMemrefsMayAlias(m, g->b.memref) &&
         !pbcMemrefsMayAlias(m, g->c.memref);
}

bool pbcGpuMatchPointwise(MlirOperation nest, MlirValue input, PbcAccess *store) {
  MlirOperation band[kPbcMaxBand];
  int loopOf[kPbcMaxBand];
  if (!pbcOpIsA(nest, "affine.for"))
    return false;
  int depth = pbcLoopBand(nest, band, kPbcMaxBand);
  MlirBlock body = pbcLoopBody(band[depth - 1]);
  PbcAccess loads[16];
  int nStores = 0, nLoads = 0, nOps = 0, nIn = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (++nOps > kMaxValues - kPbcMaxBand)
      return false;
    if (pbcOpIsA(op, "affine.load")) {
      if (nLoads == 16 || !pbcAccessGet(op, &loads[nLoads]))
        return false;
      if (loads[nLoads].memref.ptr == input.ptr) {
        /* Each iteration reads its own element of the input. */
        if (!bandOver(nest, &loads[nLoads], band, loopOf))
          return false;
        for (int d = 0; d < depth; ++d)
          if (!pbcGpuSubscriptIsIv(&loads[nLoads].subscripts[d], band[loopOf[d]]))
            return false;
        ++nIn;
      }
      ++nLoads;
    } else if (pbcOpIsA(op, "affine.store")) {
      if (nStores++ || !pbcAccessGet(op, store))
        return false;
    } else if (!pbcOpIsA(op, "affine.yield")) {
      MlirIdentifier id = mlirOperationGetName(op);
      MlirStringRef name = mlirIdentifierStr(id);
      bool pure = (name.length > 6 && strncmp(name.data, "arith.", 6) == 0) ||
                  (name.length > 5 && strncmp(name.data, "math.", 5) == 0);
      if (!pure || mlirOperationGetNumRegions(op) || mlirOperationGetNumResults(op) != 1)
        return false;
    }
  }
  int storeLoopOf[kPbcMaxBand];
  if (nStores != 1 || nIn == 0 || !bandOver(nest, store, band, storeLoopOf) ||
      pbcMemrefsMayAlias(store->memref, input))
    return false;
  for (int i = 0; i < nLoads; ++i)
    if (loads[i].memref.ptr != input.ptr && (pbcMemrefsMayAlias(loads[i].memref, store->memref) ||
                                             pbcMemrefsMayAlias(loads[i].memref, input)))
      return false;
  return true;
}

/* A pointwise consumer of C that writes a buffer distinct from A and B. */
static bool matchEpilogue(PbcGemm *g, MlirOperation nest) {
  PbcAccess store;
  if (!pbcGpuMatchPointwise(nest, g->c.memref, &store) || !distinctFromOperands(g, store.memref))
    return false;
  g->epilogue = nest;
  return true;
}

/* Whether every use of C lies in the gemm, its absorbed neighbours or a
 * dealloc, on a buffer the function allocates: then no one reads C after
 * the kernel. */
static bool cOnlyFeedsEpilogue(const PbcGemm *g) {
  MlirValue c = g->c.memref;
  if (!mlirValueIsAOpResult(c) || !pbcOpIsA(mlirOpResultGetOwner(c), "memref.alloc"))
    return false;
  for (MlirOpOperand u = mlirValueGetFirstUse(c); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    if (!pbcOpIsA(user, "memref.dealloc") && !pbcOpIsInside(user, g->root) &&
        !pbcOpIsInside(user, g->epilogue) &&
        (mlirOperationIsNull(g->fill) || !pbcOpIsInside(user, g->fill)))
      return false;
  }
  return true;
}

/* The gemm band loop that indexes C's dimension d (the matcher made each
 * of C's subscripts one band loop's index). */
static int gemmLoopOfC(const PbcGemm *g, int d) {
  for (int l = 0; l < g->depth; ++l)
    if (pbcGpuSubscriptIsIv(&g->c.subscripts[d], g->band[l]))
      return l;
  return -1;
}

void pbcGpuMatchNeighbours(PbcGemm *g) {
  /* Only a kernel that writes every element of C stands for its fill and
   * its consumer: the trips of C's loops (from 0) must be C's shape. */
  MlirType t = mlirValueGetType(g->c.memref);
  for (int d = 0; d < g->c.rank; ++d)
    if (mlirShapedTypeIsDynamicDim(t, d) ||
        g->trip[gemmLoopOfC(g, d)] != mlirShapedTypeGetDimSize(t, d))
      return;
  /* The fill: the last nest before the gemm, past deallocations of other
   * buffers (the kernel takes its place later than those, harmlessly). */
  MlirOperation before = {NULL};
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirOperationGetBlock(g->root));
       op.ptr != g->root.ptr; op = mlirOperationGetNextInBlock(op))
    if (!pbcChainMovable(op) && !(pbcOpIsA(op, "memref.dealloc") &&
                                mlirOperationGetOperand(op, 0).ptr != g->c.memref.ptr))
      before = op;
  MlirOperation after = pbcChainNeighbour(g->root, true);
  if (!mlirOperationIsNull(before))
    matchFill(g, before);
  /* Deallocations of buffers that are not C may sit between the gemm and
   * its consumer (an operand freed after its last use): they move after
   * the consumer, if it touches none of them. */
  MlirOperation freed[8];
  int nFreed = 0;
  while (!mlirOperationIsNull(after) && pbcOpIsA(after, "memref.dealloc") && nFreed < 8 &&
         mlirOperationGetOperand(after, 0).ptr != g->c.memref.ptr) {
    freed[nFreed++] = after;
    after = pbcChainNeighbour(after, true);
  }
  for (int i = 0; i < nFreed && !mlirOperationIsNull(after); ++i)
    for (MlirOpOperand u = mlirValueGetFirstUse(mlirOperationGetOperand(freed[i], 0));
         !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u))
      if (pbcOpIsInside(mlirOpOperandGetOwner(u), after))
        after = (MlirOperation){NULL};
  if (!mlirOperationIsNull(after) && matchEpilogue(g, after)) {
    for (int i = nFreed - 1; i >= 0; --i)
      mlirOperationMoveAfter(freed[i], after);
    /* The constants and allocations between move above the gemm, where the
     * kernel (built in its place) sees them. */
    pbcGpuMoveRange(mlirOperationGetNextInBlock(g->root), after, g->root);
    g->storeC = !cOnlyFeedsEpilogue(g);
  }
}

MlirValue pbcGpuAccInit(MlirOperation before, const PbcGemm *g, const MlirValue iv[]) {
  MlirValue x = mlirValueIsNull(g->init) ? pbcGpuGemmLoad(before, g, &g->c, iv) : g->init;
  MlirType f32 = mlirF32TypeGet(mlirOperationGetContext(before));
  if (mlirTypeIsAFloat(mlirValueGetType(x)) && !mlirTypeIsAF32(mlirValueGetType(x)))
    x = pbcGpuOp(before, "arith.extf", 1, &x, f32, 0, NULL);
  return x; /* i32 C (i8 operands) as it is */
}

/* Values of the epilogue's body and what stands for them in the kernel. */
typedef struct {
  int n;
  MlirValue from[kMaxValues], to[kMaxValues];
} ValueMap;

static void mapAdd(ValueMap *m, MlirValue from, MlirValue to) {
  m->from[m->n] = from;
  m->to[m->n++] = to;
}

static MlirValue mapGet(const ValueMap *m, MlirValue v) {
  for (int i = 0; i < m->n; ++i)
    if (m->from[i].ptr == v.ptr)
      return m->to[i];
  return v;
}

/* memref.load or memref.store (of `value`, unless null) at the access's
 * subscripts, evaluated with the mapped indices. */
static MlirValue memrefAccess(MlirOperation before, const PbcAccess *acc, const ValueMap *m,
                              MlirValue value) {
  MlirValue ops[2 + PBC_MAX_RANK];
  int n = 0;
  if (!mlirValueIsNull(value))
    ops[n++] = value;
  ops[n++] = acc->memref;
  for (int d = 0; d < acc->rank; ++d)
    ops[n++] = pbcGpuEvalLinear(before, &acc->subscripts[d], m->n, m->from, m->to);
  if (!mlirValueIsNull(value))
    return pbcGpuOp(before, "memref.store", n, ops, (MlirType){NULL}, 0, NULL);
  MlirType elem = mlirShapedTypeGetElementType(mlirValueGetType(acc->memref));
  return pbcGpuOp(before, "memref.load", n, ops, elem, 0, NULL);
}

MlirValue pbcGpuInlinePointwise(MlirOperation before, MlirOperation nest, MlirValue input,
                                MlirValue x, const MlirValue idx[], bool store) {
  MlirOperation band[kPbcMaxBand];
  int depth = pbcLoopBand(nest, band, kPbcMaxBand);
  MlirBlock body = pbcLoopBody(band[depth - 1]);
  /* The nest's indices are the element's: a load of the input (subscript
   * d is one of the nest's loop indices) pairs them with idx[]. */
  ValueMap m = {0};
  PbcAccess acc;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op) && m.n == 0;
       op = mlirOperationGetNextInBlock(op))
    if (pbcAccessGet(op, &acc) && !acc.isWrite && acc.memref.ptr == input.ptr)
      for (int d = 0; d < acc.rank; ++d)
        mapAdd(&m, acc.subscripts[d].values[0], idx[d]);
  MlirValue stored = {NULL};
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (pbcOpIsA(op, "affine.yield"))
      continue;
    if (pbcAccessGet(op, &acc)) {
      if (acc.isWrite) {
        stored = mapGet(&m, mlirOperationGetOperand(op, 0));
        if (store)
          memrefAccess(before, &acc, &m, stored);
      } else {
        mapAdd(&m, mlirOperationGetResult(op, 0),
               acc.memref.ptr == input.ptr ? x
                                           : memrefAccess(before, &acc, &m, (MlirValue){NULL}));
      }
      continue;
    }
    MlirOperation copy = mlirOperationClone(op);
    for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); ++k)
      mlirOperationSetOperand(copy, k, mapGet(&m, mlirOperationGetOperand(op, k)));
    mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(before), before, copy);
    mapAdd(&m, mlirOperationGetResult(op, 0), mlirOperationGetResult(copy, 0));
  }
  return stored;
}

/* The accumulator narrowed to C's type; C stored if g->storeC; then the
 * epilogue's body on it (its store emitted if `store`), returning the
 * value the epilogue stores (C's value without one). */
static MlirValue copyOut(MlirOperation before, const PbcGemm *g, MlirValue value,
                         const MlirValue iv[], bool store) {
  MlirType cElem = mlirShapedTypeGetElementType(mlirValueGetType(g->c.memref));
  MlirValue x = value;
  if (!mlirTypeEqual(cElem, mlirValueGetType(x)))
    x = pbcGpuOp(before, "arith.truncf", 1, &x, cElem, 0, NULL);
  if (g->storeC)
    pbcGpuGemmStore(before, g, x, iv);
  if (mlirOperationIsNull(g->epilogue))
    return x;
  MlirValue idx[PBC_MAX_RANK];
  for (int d = 0; d < g->c.rank; ++d)
    idx[d] = iv[gemmLoopOfC(g, d)];
  return pbcGpuInlinePointwise(before, g->epilogue, g->c.memref, x, idx, store);
}

void pbcGpuCopyOut(MlirOperation before, const PbcGemm *g, MlirValue value, const MlirValue iv[]) {
  copyOut(before, g, value, iv, true);
}

MlirValue pbcGpuEpilogueValue(MlirOperation before, const PbcGemm *g, MlirValue value,
                              const MlirValue iv[]) {
  return copyOut(before, g, value, iv, false);
}

bool pbcGpuEpilogueOutput(const PbcGemm *g, PbcAccess *out) {
  if (mlirOperationIsNull(g->epilogue) || g->storeC)
    return false;
  MlirOperation band[kPbcMaxBand];
  int depth = pbcLoopBand(g->epilogue, band, kPbcMaxBand);
  PbcAccess acc, load = {0}, store = {0};
  for (MlirOperation op = mlirBlockGetFirstOperation(pbcLoopBody(band[depth - 1]));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    if (pbcAccessGet(op, &acc)) {
      if (acc.isWrite)
        store = acc;
      else if (acc.memref.ptr == g->c.memref.ptr)
        load = acc;
    }
  /* The store's subscripts are C's load's, dimension by dimension (both
   * the nest's loop indices, pbcGpuMatchPointwise): out's element is C's. */
  if (mlirValueIsNull(load.memref) || store.rank != load.rank || store.rank != g->c.rank)
    return false;
  for (int d = 0; d < store.rank; ++d)
    if (store.subscripts[d].values[0].ptr != load.subscripts[d].values[0].ptr)
      return false;
  *out = g->c;
  out->memref = store.memref;
  return true;
}

void pbcGpuTileFinish(const PbcGemm *g) {
  mlirOperationDestroy(g->root);
  if (!mlirOperationIsNull(g->fill))
    mlirOperationDestroy(g->fill);
  if (mlirOperationIsNull(g->epilogue))
    return;
  mlirOperationDestroy(g->epilogue);
  if (g->storeC)
    return;
  /* C is dead: only deallocs use it now. */
  pbcEraseWithUsers(mlirOpResultGetOwner(g->c.memref));
}
