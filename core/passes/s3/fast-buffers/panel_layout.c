/* pbc-panel-layout: packed B panels stored panel by panel (BLIS's packed
 * format; Goto & van de Geijn's point that packing is for the TLB as much as
 * for the caches). pbc-pack copies a GEMM's B block row-major, K x NC, so the
 * micro kernel's reduction loop reads NR elements (a few cache lines) of one
 * row, then jumps a whole row ahead: with rows of 4 KiB or more, every
 * iteration touches a new page, and the hardware prefetchers, which stop at
 * page boundaries, can't run ahead (2048^3: a 1024 x 64 panel spans 1024
 * pages). Stored as NC/NR panels of K x NR, the same reads walk one
 * contiguous block (pbc/oneDNN time, paired: 2048^3 1.22 -> 1.11, 256^3
 * 1.15 -> 1.11).
 *
 * A buffer qualifies when pbc-pack made it (a fresh allocation filled by a
 * pbc.copy nest, touched only by affine accesses and its dealloc) and each
 * read outside the copy sits in a loop (the reduction) that walks its rows
 * (the leading subscripts: K for a GEMM's B; kh, kw and c for a
 * convolution's weights, whose rows at the full block width are as far
 * apart) while its column (the last subscript) stays put: the column is
 * `base + c` with base a multiple of NR in every iteration (the register
 * tile loop's step; see pbcLinearTermsGcd) and the read within
 * [c, c + lanes) of a panel. NR is the narrowest such width that holds
 * every read's window and divides every base; the copy's vector stores must
 * not straddle panels either. The new buffer is [ceil(C / NR)] x [rows...]
 * x [NR]; element (r..., c) lives at (c floordiv NR, r..., c mod NR). Only
 * for CPUs' caches (fast-memory-space 0): on-chip GPU buffers are laid out
 * for the matrix units. */
#include <stdlib.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/op_list.h"
#include "passes/passes.h"

typedef struct {
  unsigned fastSpace;
} State;

enum { kMaxUses = 256 };


typedef struct {
  MlirOperation ops[kMaxUses];
  PbcAccess acc[kMaxUses];
  int n;
} Uses;

/* Every use of the buffer: affine accesses and one dealloc; false otherwise. */
static bool gatherUses(MlirValue buf, Uses *u, intptr_t rank) {
  u->n = 0;
  for (MlirOpOperand use = mlirValueGetFirstUse(buf); !mlirOpOperandIsNull(use);
       use = mlirOpOperandGetNextUse(use)) {
    MlirOperation user = mlirOpOperandGetOwner(use);
    if (pbcOpIsA(user, "memref.dealloc"))
      continue;
    if (u->n == kMaxUses || !pbcAccessGet(user, &u->acc[u->n]) ||
        !mlirValueEqual(u->acc[u->n].memref, buf) || u->acc[u->n].rank != rank)
      return false;
    u->ops[u->n++] = user;
  }
  return u->n > 0;
}

/* A read the layout serves: its innermost loop walks the rows (a leading
 * subscript moves with it) and leaves the column (the last) in place. */
static bool walksRows(const PbcAccess *a) {
  MlirOperation loop = mlirOperationGetParentOperation(a->op);
  if (!pbcOpIsA(loop, "affine.for"))
    return false;
  MlirValue iv = pbcLoopIv(loop);
  const PbcLinearForm *col = &a->subscripts[a->rank - 1];
  for (int t = 0; t < col->nTerms; ++t)
    if (pbcValueIsDefinedInside(col->values[t], loop))
      return false;
  bool rowMoves = false;
  for (int d = 0; d < a->rank - 1; ++d)
    rowMoves |= pbcLinearCoeff(&a->subscripts[d], iv) != 0;
  return rowMoves && pbcLinearCoeff(col, iv) == 0;
}

/* The panel width for the buffer's uses, or 0 if the layout doesn't apply. */
static long long panelWidth(const Uses *u, long long columns) {
  long long base = 0, window = 0, lanes = 1;
  bool anyRead = false;
  for (int i = 0; i < u->n; ++i) {
    const PbcAccess *a = &u->acc[i];
    const PbcLinearForm *col = &a->subscripts[a->rank - 1];
    long long g = pbcLinearTermsGcd(col, 1);
    long long l = a->lanes > 0 ? a->lanes : 1, c = col->constant;
    if (g < 0)
      return 0;
    lanes = lanes > l ? lanes : l;
    if (a->isWrite != pbcOpIsInCopyNest(a->op))
      return 0; /* written outside the copy, or read inside one */
    if (a->isWrite) {
      if ((g % l) != 0 || (c % l) != 0)
        return 0; /* the store's vector may straddle two panels */
      continue;
    }
    if (!walksRows(a) || c < 0)
      return 0;
    anyRead = true;
    base = pbcGcd(base, g);
    window = window > c + l ? window : c + l;
  }
  if (!anyRead || base == 0)
    return 0;
  /* The narrowest multiple of the lanes dividing every base that holds every
   * window; a panel as wide as the buffer changes nothing. */
  for (long long nr = lanes; nr <= base && nr < columns; nr += lanes)
    if (base % nr == 0 && nr >= window)
      return nr;
  return 0;
}

/* (e0, ..., en) -> (en floordiv nr, e0, ..., en-1, en mod nr) for the last
 * subscript en; for the panel reads, whose column is base + c with base a
 * multiple of nr: ((en - c) floordiv nr, e0, ..., en-1, c). */
static void remap(MlirOperation op, const PbcAccess *a, long long nr) {
  MlirAffineMap map =
      mlirAffineMapAttrGetValue(mlirOperationGetInherentAttributeByName(op, pbcStr("map")));
  MlirContext ctx = mlirAffineMapGetContext(map);
  int n = a->rank - 1;
  MlirAffineExpr en = mlirAffineMapGetResult(map, n);
  MlirAffineExpr width = mlirAffineConstantExprGet(ctx, nr), exprs[PBC_MAX_RANK + 1];
  if (a->isWrite) {
    exprs[0] = mlirAffineFloorDivExprGet(en, width);
    exprs[n + 1] = mlirAffineModExprGet(en, width);
  } else {
    long long c = a->subscripts[n].constant;
    exprs[0] = mlirAffineFloorDivExprGet(
        mlirAffineAddExprGet(en, mlirAffineConstantExprGet(ctx, -c)), width);
    exprs[n + 1] = mlirAffineConstantExprGet(ctx, c);
  }
  for (int d = 0; d < n; ++d)
    exprs[d + 1] = mlirAffineMapGetResult(map, d);
  MlirAffineMap panel = mlirAffineMapGet(ctx, mlirAffineMapGetNumDims(map),
                                         mlirAffineMapGetNumSymbols(map), n + 2, exprs);
  mlirOperationSetInherentAttributeByName(op, pbcStr("map"), mlirAffineMapAttrGet(panel));
}

static void relayout(MlirOperation alloc) {
  MlirValue buf = mlirOperationGetResult(alloc, 0);
  MlirType t = mlirValueGetType(buf);
  intptr_t rank = mlirTypeIsAMemRef(t) ? mlirShapedTypeGetRank(t) : 0;
  if (rank < 2 || rank >= PBC_MAX_RANK || !mlirShapedTypeHasStaticShape(t) ||
      !pbcMemrefHasIdentityLayout(t))
    return;
  Uses *u = malloc(sizeof(Uses));
  long long columns = mlirShapedTypeGetDimSize(t, rank - 1);
  long long nr = gatherUses(buf, u, rank) ? panelWidth(u, columns) : 0;
  if (nr > 0) {
    int64_t shape[PBC_MAX_RANK + 1];
    shape[0] = (columns + nr - 1) / nr;
    for (intptr_t d = 0; d + 1 < rank; ++d)
      shape[d + 1] = mlirShapedTypeGetDimSize(t, d);
    shape[rank] = nr;
    mlirValueSetType(buf, mlirMemRefTypeGet(mlirShapedTypeGetElementType(t), rank + 1, shape,
                                            mlirAttributeGetNull(),
                                            mlirMemRefTypeGetMemorySpace(t)));
    for (int i = 0; i < u->n; ++i)
      remap(u->ops[i], &u->acc[i], nr);
  }
  free(u);
}

static MlirWalkResult collect(MlirOperation op, void *data) {
  if (pbcOpIsA(op, "memref.alloc") && mlirOperationGetNumOperands(op) == 0)
    pbcOpListPush(data, op);
  return MlirWalkResultAdvance;
}

static bool run(MlirOperation func, void *state) {
  const State *st = state;
  if (st->fastSpace != 0)
    return true;
  PbcOpList allocs = {0};
  mlirOperationWalk(func, collect, &allocs, MlirWalkPreOrder);
  for (int i = 0; i < allocs.n; ++i)
    relayout(allocs.ops[i]);
  pbcOpListDestroy(&allocs);
  return true;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcPanelLayoutPass = {
    "pbc-panel-layout", "func.func", "Store packed B blocks panel by panel", run,
    sizeof(State),      createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  enum { FAST_MEMORY_SPACE, NUM_OPTIONS };
  static const PbcCountOption kOptions[] = {
      [FAST_MEMORY_SPACE] = {"fast-memory-space", 0},
      [NUM_OPTIONS] = {NULL, 0}};
  long long v[NUM_OPTIONS];
  if (!pbcPassCountOptions(options, kOptions, v, err, errLen))
    return (MlirPass){NULL};
  State st = {(unsigned)v[FAST_MEMORY_SPACE]};
  return pbcCPassCreate(&pbcPanelLayoutPass, &st);
}
