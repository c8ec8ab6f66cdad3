/* pbc-dot-i8{int8-dot=avx512-vnni|none}: i8 x i8 -> i32 register tiles on
 * the chip's dot-product instruction, four products per lane at once.
 *
 * After register tiling and vectorization an i8 GEMM's micro-kernel is a
 * k loop carrying vector<16xi32> accumulators whose body multiplies a
 * broadcast element of A (a row's A[r][k]) by 16 elements of a packed
 * panel of B (P[..][k][j .. j + 15]), each widened to i32: one vpmulld and
 * one vpaddd per 16 products. AVX-512 VNNI's vpdpbusd does 64 in one:
 * each i32 lane adds four u8 x s8 products of adjacent bytes. So, where
 * the chip has it (the `int8-dot` key):
 *
 *   - the panel is laid out again after it is packed, four rows of k
 *     interleaved: P4[..][k / 4][4 j + k % 4] = P[..][k][j] (one nest of
 *     16-byte loads, a byte shuffle and 64-byte stores per 16 columns);
 *   - the k loop steps by 4: A's four bytes A[r][k .. k + 3] are one
 *     broadcast i32, B's 16 columns x 4 rows one 64-byte load of P4, and
 *     each accumulator takes one vpdpbusd;
 *   - vpdpbusd's first operand is unsigned: u8 bytes of A (extui: an
 *     asymmetric activation) go in as they are; s8 ones with their top bit
 *     flipped (a + 128 as u8), and 128 * sum_k B[k][j] comes off at the
 *     end: the panel's column sums per block of the loop's rows (made with
 *     the relayout, or at compile time for a constant B), or summed in the
 *     loop by one more vpdpbusd per panel vector (of 0x80 bytes).
 *
 * The sums are exact either way (i32 wraps as arith.addi does). The kernel
 * qualifies when: every body op is part of acc + ext(bcast(A)) * ext(B),
 * the k loop's trip is a multiple of 4 and so is P's row index at each
 * quad start, A's last subscript is k (contiguous bytes) and P is a
 * memref with rows and columns multiples of 4 and 16: the pack's panel (a
 * memref.alloc written only before the nest that reads it) or B itself (an
 * argument or a global the function does not write, laid out again before
 * the nest). Other readers of P keep reading P. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/marks.h"
#include "pbc/op_list.h"
#include "passes/passes.h"

/* Lanes of the widest accumulator (vpdpbusd on zmm; ymm takes 8). */
enum { kLanes = 16, kQuad = 4, kMaxLoads = 64, kMaxProducts = 64 };

typedef struct {
  bool vnni;
} State;

typedef struct {
  int arg;   /* iter_arg (and yield operand) index */
  int a, b;  /* indices of its A and B loads */
} Product;

typedef struct {
  MlirOperation loop;
  MlirOperation aLoads[kMaxLoads], bLoads[kMaxLoads];
  int nA, nB;
  Product prod[kMaxProducts];
  int nProd;
  int lanes; /* of the accumulators: 16 or 8 */
  bool aUnsigned; /* A's bytes widen unsigned (extui): u8, vpdpbusd's own */
  MlirValue panel;
  /* The k loop runs over a block of this many of the panel's rows that
   * starts at a multiple of it (the whole panel when it is the panel's row
   * count); 0 if not so. */
  long long blockRows;
} Kernel;

static MlirValue result(MlirOperation op) { return mlirOperationGetResult(op, 0); }

static MlirOperation defOp(MlirValue v) {
  return mlirValueIsAOpResult(v) ? mlirOpResultGetOwner(v) : (MlirOperation){NULL};
}

static bool isVectorOf(MlirType t, int lanes, int bits) {
  return mlirTypeIsAVector(t) && mlirShapedTypeGetRank(t) == 1 &&
         mlirShapedTypeGetDimSize(t, 0) == lanes &&
         mlirTypeIsAInteger(mlirShapedTypeGetElementType(t)) &&
         mlirIntegerTypeGetWidth(mlirShapedTypeGetElementType(t)) == (unsigned)bits;
}

static bool isI8(MlirType t) { return mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) == 8; }

/* Two loads of the same element(s): same memref, map and map operands
 * (S3's cleanup has not merged them yet). */
static bool sameLoad(MlirOperation x, MlirOperation y) {
  intptr_t n = mlirOperationGetNumOperands(x);
  if (n != mlirOperationGetNumOperands(y) ||
      !mlirAttributeEqual(mlirOperationGetAttributeByName(x, pbcStr("map")),
                          mlirOperationGetAttributeByName(y, pbcStr("map"))))
    return false;
  for (intptr_t i = 0; i < n; ++i)
    if (mlirOperationGetOperand(x, i).ptr != mlirOperationGetOperand(y, i).ptr)
      return false;
  return true;
}

static int indexOf(const MlirOperation *ops, int n, MlirOperation op) {
  for (int i = 0; i < n; ++i)
    if (sameLoad(ops[i], op))
      return i;
  return -1;
}

/* bcast(ext(A load)) for A's side (ext signed or, with *zext, unsigned),
 * ext(B load) for B's: the load, or null. */
static MlirOperation aLoadOf(MlirValue v, bool *zext) {
  MlirOperation bc = defOp(v), ext = {NULL}, load = {NULL};
  if (mlirOperationIsNull(bc) || !pbcOpIsA(bc, "vector.broadcast") ||
      mlirOperationIsNull(ext = defOp(mlirOperationGetOperand(bc, 0))) ||
      !(pbcOpIsA(ext, "arith.extsi") || pbcOpIsA(ext, "arith.extui")) ||
      mlirOperationIsNull(load = defOp(mlirOperationGetOperand(ext, 0))) ||
      !pbcOpIsA(load, "affine.load") || !isI8(mlirValueGetType(result(load))))
    return (MlirOperation){NULL};
  *zext = pbcOpIsA(ext, "arith.extui");
  return load;
}

static MlirOperation bLoadOf(MlirValue v, int lanes) {
  MlirOperation ext = defOp(v), load = {NULL};
  if (mlirOperationIsNull(ext) || !pbcOpIsA(ext, "arith.extsi") ||
      mlirOperationIsNull(load = defOp(mlirOperationGetOperand(ext, 0))) ||
      !pbcOpIsA(load, "affine.vector_load") || !isVectorOf(mlirValueGetType(result(load)), lanes, 8))
    return (MlirOperation){NULL};
  return load;
}

/* Adds the load to the list (once per element read); its index, or -1
 * when full. */
static int addLoad(MlirOperation *list, int *n, MlirOperation load) {
  int i = indexOf(list, *n, load);
  if (i >= 0 || *n == kMaxLoads)
    return i;
  list[*n] = load;
  return (*n)++;
}

/* The body is exactly the products: every yield operand i is
 * arg_i + ext(bcast(ext(A))) * ext(B) (either order), and every other op
 * one of these chains' loads, extensions, broadcasts, products and sums. */
static bool matchBody(Kernel *K) {
  MlirBlock body = pbcLoopBody(K->loop);
  MlirOperation yield = mlirBlockGetTerminator(body);
  int n = (int)mlirOperationGetNumOperands(yield);
  if (n == 0 || n > kMaxProducts)
    return false;
  int chainOps = 0;
  K->lanes = isVectorOf(mlirValueGetType(mlirBlockGetArgument(body, 1)), 8, 32) ? 8 : kLanes;
  for (int i = 0; i < n; ++i) {
    MlirValue arg = mlirBlockGetArgument(body, 1 + i);
    MlirOperation add = defOp(mlirOperationGetOperand(yield, i));
    if (!isVectorOf(mlirValueGetType(arg), K->lanes, 32) || mlirOperationIsNull(add) ||
        !pbcOpIsA(add, "arith.addi") || mlirOperationGetBlock(add).ptr != body.ptr)
      return false;
    int which = mlirOperationGetOperand(add, 0).ptr == arg.ptr ? 1
                : mlirOperationGetOperand(add, 1).ptr == arg.ptr ? 0
                                                                  : -1;
    MlirOperation mul = which < 0 ? (MlirOperation){NULL} : defOp(mlirOperationGetOperand(add, which));
    if (mlirOperationIsNull(mul) || !pbcOpIsA(mul, "arith.muli"))
      return false;
    bool zext = false;
    MlirOperation a = aLoadOf(mlirOperationGetOperand(mul, 0), &zext),
                  b = bLoadOf(mlirOperationGetOperand(mul, 1), K->lanes);
    if (mlirOperationIsNull(a) || mlirOperationIsNull(b))
      a = aLoadOf(mlirOperationGetOperand(mul, 1), &zext),
      b = bLoadOf(mlirOperationGetOperand(mul, 0), K->lanes);
    /* One signedness of A for the whole tile. */
    if (mlirOperationIsNull(a) || mlirOperationIsNull(b) || (i && zext != K->aUnsigned))
      return false;
    K->aUnsigned = zext;
    Product p = {i, addLoad(K->aLoads, &K->nA, a), addLoad(K->bLoads, &K->nB, b)};
    if (p.a < 0 || p.b < 0)
      return false;
    K->prod[K->nProd++] = p;
    chainOps += 2; /* the sum and the product */
  }
  /* What else the body holds: the loads and their extensions and
   * broadcasts, which only the chains use (A's load, extsi and broadcast,
   * B's load and extsi: each maybe repeated, S3's cleanup not run yet). */
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (pbcOpIsA(op, "arith.addi") || pbcOpIsA(op, "arith.muli") || op.ptr == yield.ptr)
      continue;
    if (!pbcOpIsA(op, "affine.load") && !pbcOpIsA(op, "affine.vector_load") &&
        !pbcOpIsA(op, "arith.extsi") && !pbcOpIsA(op, "arith.extui") &&
        !pbcOpIsA(op, "vector.broadcast"))
      return false;
    for (MlirOpOperand u = mlirValueGetFirstUse(result(op)); !mlirOpOperandIsNull(u);
         u = mlirOpOperandGetNextUse(u)) {
      MlirOperation user = mlirOpOperandGetOwner(u);
      if (!pbcOpIsA(user, "arith.extsi") && !pbcOpIsA(user, "arith.extui") &&
          !pbcOpIsA(user, "vector.broadcast") && !pbcOpIsA(user, "arith.muli"))
        return false;
    }
  }
  /* Every muli and addi is a chain's: a sum and a product per yield. */
  int ops = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    ops += pbcOpIsA(op, "arith.addi") || pbcOpIsA(op, "arith.muli");
  return ops == chainOps;
}

/* f plus g (terms appended; false when they do not fit). */
static bool addForms(PbcLinearForm *f, const PbcLinearForm *g) {
  for (int t = 0; t < g->nTerms; ++t) {
    if (f->nTerms == PBC_MAX_TERMS)
      return false;
    f->values[f->nTerms] = g->values[t];
    f->coeffs[f->nTerms++] = g->coeffs[t];
  }
  f->constant += g->constant;
  return f->linear && g->linear;
}

/* f without the term of v. */
static void dropTerm(PbcLinearForm *f, MlirValue v) {
  int m = 0;
  for (int t = 0; t < f->nTerms; ++t)
    if (f->values[t].ptr != v.ptr)
      f->values[m] = f->values[t], f->coeffs[m++] = f->coeffs[t];
  f->nTerms = m;
}

static bool staticIdentity(MlirType t) {
  return mlirShapedTypeHasStaticShape(t) && pbcMemrefHasIdentityLayout(t);
}

/* The accesses: A's last subscript is k (+ what does not move with it),
 * its others do not move; P's row subscript is k (+ ...), a multiple of 4
 * at every quad start, its others do not move. */
static bool matchAccesses(Kernel *K) {
  MlirValue k = pbcLoopIv(K->loop);
  for (int i = 0; i < K->nA; ++i) {
    PbcAccess a;
    if (!pbcAccessGetAny(K->aLoads[i], &a) || !staticIdentity(mlirValueGetType(a.memref)) ||
        !a.subscripts[a.rank - 1].linear || pbcLinearCoeff(&a.subscripts[a.rank - 1], k) != 1)
      return false;
    for (int d = 0; d < a.rank - 1; ++d)
      if (pbcAccessSubscriptUses(&a, d, k))
        return false;
  }
  PbcLinearForm lb;
  if (!pbcLoopBoundForm(K->loop, false, &lb))
    return false;
  for (int i = 0; i < K->nB; ++i) {
    PbcAccess b;
    if (!pbcAccessGetAny(K->bLoads[i], &b) || b.rank < 2 ||
        (i && b.memref.ptr != K->panel.ptr) || !b.subscripts[b.rank - 2].linear ||
        pbcLinearCoeff(&b.subscripts[b.rank - 2], k) != 1)
      return false;
    K->panel = b.memref;
    for (int d = 0; d < b.rank; ++d)
      if (d != b.rank - 2 && pbcAccessSubscriptUses(&b, d, k))
        return false;
    /* The row at the loop's first iteration, lb + (row - k), and every
     * fourth: a multiple of 4 for every value of the ivs it takes. */
    PbcLinearForm row = b.subscripts[b.rank - 2];
    dropTerm(&row, k);
    if (!addForms(&row, &lb))
      return false;
    long long g = pbcLinearTermsGcd(&row, 1), trip = pbcExtAffineConstantTripCount(K->loop);
    if (g < 0 || (g % kQuad) || ((row.constant % kQuad) + kQuad) % kQuad)
      return false;
    /* The first row a multiple of the trip, whatever the ivs: blocks. */
    bool blocks = (g % trip) == 0 && ((row.constant % trip) + trip) % trip == 0;
    K->blockRows = (i == 0 || K->blockRows) && blocks ? trip : 0;
  }
  MlirType p = mlirValueGetType(K->panel);
  int rank = (int)mlirShapedTypeGetRank(p);
  if (K->blockRows && mlirShapedTypeGetDimSize(p, rank - 2) % K->blockRows)
    K->blockRows = 0;
  return staticIdentity(p) && isI8(mlirShapedTypeGetElementType(p)) &&
         mlirShapedTypeGetDimSize(p, rank - 2) % kQuad == 0 &&
         mlirShapedTypeGetDimSize(p, rank - 1) % K->lanes == 0;
}

static bool matchKernel(MlirOperation loop, Kernel *K) {
  memset(K, 0, sizeof(*K));
  K->loop = loop;
  long long trip = pbcExtAffineConstantTripCount(loop);
  return pbcLoopStep(loop) == 1 && trip > 0 && trip % kQuad == 0 &&
         mlirOperationGetNumResults(loop) > 0 && matchBody(K) && matchAccesses(K);
}

/* The op of `block` that holds `op` (op itself if it is in it), or null. */
static MlirOperation ancestorIn(MlirOperation op, MlirBlock block) {
  while (!mlirOperationIsNull(op) && mlirOperationGetBlock(op).ptr != block.ptr)
    op = mlirOperationGetParentOperation(op);
  return op;
}

/* Where the relaid panel goes: before the op of the panel's block (for an
 * argument or a global: the function's) that holds every kernel
 * (loops[0..n)); null unless they share one and every op that may write
 * the panel comes before it (an argument or a global: nothing in the
 * function may write it). */
static MlirOperation relayoutPoint(MlirOperation func, MlirValue panel, MlirOperation *loops, int n) {
  MlirOperation alloc = defOp(panel);
  bool local = !mlirOperationIsNull(alloc) && pbcOpIsA(alloc, "memref.alloc");
  if (!local && pbcMayWriteMemref(func, panel))
    return (MlirOperation){NULL};
  MlirBlock block = local ? mlirOperationGetBlock(alloc)
                          : mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  MlirOperation x = ancestorIn(loops[0], block);
  for (int i = 1; i < n; ++i)
    if (mlirOperationIsNull(x) || ancestorIn(loops[i], block).ptr != x.ptr)
      return (MlirOperation){NULL};
  if (mlirOperationIsNull(x) || !local)
    return x;
  for (MlirOpOperand u = mlirValueGetFirstUse(panel); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    if (pbcOpIsA(user, "affine.load") || pbcOpIsA(user, "affine.vector_load") ||
        pbcOpIsA(user, "memref.dealloc"))
      continue;
    MlirOperation w = ancestorIn(user, block);
    if (mlirOperationIsNull(w) || w.ptr == x.ptr || !pbcOpFollowsInBlock(x, w))
      return (MlirOperation){NULL};
  }
  return x;
}

static MlirType vectorType(MlirContext ctx, int n, int bits) {
  return mlirVectorTypeGet(1, (int64_t[]){n}, mlirIntegerTypeGet(ctx, bits));
}

static MlirValue splat(MlirOperation before, MlirType t, int64_t v) {
  MlirContext ctx = mlirOperationGetContext(before);
  MlirAttribute a = mlirDenseElementsAttrSplatGet(
      t, mlirIntegerAttrGet(mlirShapedTypeGetElementType(t), v));
  MlirNamedAttribute value = pbcNamedAttr(ctx, "value", a);
  return result(pbcBuildOp(before, "arith.constant", 0, NULL, t, 1, &value));
}

static MlirAffineExpr cstExpr(MlirContext ctx, int64_t v) { return mlirAffineConstantExprGet(ctx, v); }

static MlirValue vpdpbusd(MlirOperation before, MlirValue acc, MlirValue a, MlirValue b);

/* P4[.., q, c] = P[.., 4 q + c % 4, c / 4] for each quad q of rows: per
 * `w` columns (16 or 8), rows 4q .. 4q + 3 loaded, interleaved byte by
 * byte (4 j + t <- row t, column j), stored; the loops run over the
 * columns, then the quads. Unless `sums` is null, also
 * sums[.., 0, j] = 128 * sum over all rows of P[.., r, j] (i32; vpdpbusd
 * of 0x80 bytes on each interleaved vector). Before `before`. */
static void buildRelayout(MlirOperation before, MlirValue panel, MlirValue p4, MlirValue sums,
                          int w) {
  MlirContext ctx = mlirOperationGetContext(before);
  MlirLocation loc = mlirOperationGetLocation(before);
  MlirType pt = mlirValueGetType(panel);
  int rank = (int)mlirShapedTypeGetRank(pt);
  int64_t shape[PBC_MAX_RANK];
  for (int d = 0; d < rank - 2; ++d)
    shape[d] = mlirShapedTypeGetDimSize(pt, d);
  shape[rank - 2] = mlirShapedTypeGetDimSize(pt, rank - 1) / w;    /* column block c */
  shape[rank - 1] = mlirShapedTypeGetDimSize(pt, rank - 2) / kQuad; /* quad q */
  MlirValue ivs[PBC_MAX_RANK];
  MlirOperation end;
  MlirOperation nest = pbcBuildAffineNest(before, shape, rank, loc, ivs, &end);
  mlirOperationSetAttributeByName(nest, pbcStr(PBC_MARK_COPY), mlirUnitAttrGet(ctx));
  if (pbcOpIsA(mlirOperationGetParentOperation(nest), "func.func"))
    pbcNestSetKind(nest, "copy"); /* a root nest of its own */
  MlirType v16 = vectorType(ctx, w, 8), v32 = vectorType(ctx, 2 * w, 8),
           v64 = vectorType(ctx, kQuad * w, 8), acc = vectorType(ctx, w, 32);
  MlirAffineExpr c = mlirAffineDimExprGet(ctx, rank - 2), q = mlirAffineDimExprGet(ctx, rank - 1);
  MlirValue rows[kQuad];
  for (int t = 0; t < kQuad; ++t) {
    MlirOperation load = pbcBuildAffineVectorLoad(end, panel, ivs, rank, v16, loc);
    pbcAccessSetSubscriptExpr(
        load, rank - 2,
        mlirAffineAddExprGet(mlirAffineMulExprGet(q, cstExpr(ctx, kQuad)), cstExpr(ctx, t)));
    pbcAccessSetSubscriptExpr(load, rank - 1, mlirAffineMulExprGet(c, cstExpr(ctx, w)));
    rows[t] = result(load);
  }
  int64_t concat[2 * kLanes], interleave[kQuad * kLanes];
  for (int i = 0; i < 2 * w; ++i)
    concat[i] = i;
  /* Byte 4 j + t of the result: row t's byte j, rows 0-1 in the first
   * half of the concatenations, 2-3 in the second. */
  for (int j = 0; j < w; ++j)
    for (int t = 0; t < kQuad; ++t)
      interleave[kQuad * j + t] = (t / 2) * 2 * w + (t % 2) * w + j;
  MlirNamedAttribute cm = pbcNamedAttr(ctx, "mask", mlirDenseI64ArrayGet(ctx, 2 * w, concat));
  MlirNamedAttribute im = pbcNamedAttr(ctx, "mask", mlirDenseI64ArrayGet(ctx, kQuad * w, interleave));
  MlirValue lo = result(pbcBuildOp(end, "vector.shuffle", 2, rows, v32, 1, &cm));
  MlirValue hi = result(pbcBuildOp(end, "vector.shuffle", 2, rows + 2, v32, 1, &cm));
  MlirValue out = result(pbcBuildOp(end, "vector.shuffle", 2, (MlirValue[]){lo, hi}, v64, 1, &im));
  MlirOperation store = pbcBuildAffineVectorStore(end, out, p4, ivs, rank, loc);
  pbcAccessSetSubscriptExpr(store, rank - 2, q);
  pbcAccessSetSubscriptExpr(store, rank - 1, mlirAffineMulExprGet(c, cstExpr(ctx, kQuad * w)));
  if (mlirValueIsNull(sums))
    return;
  /* sums[.., 0, w c ..] from zero before the quads, 128 * the quad's rows
   * added in each. */
  MlirOperation quads = mlirOperationGetParentOperation(end);
  MlirValue at[PBC_MAX_RANK];
  for (int d = 0; d < rank - 2; ++d)
    at[d] = ivs[d];
  at[rank - 2] = pbcBuildIndexConstant(quads, 0);
  at[rank - 1] = ivs[rank - 2];
  MlirAffineExpr sumCol = mlirAffineMulExprGet(mlirAffineDimExprGet(ctx, rank - 1), cstExpr(ctx, w));
  MlirOperation init = pbcBuildAffineVectorStore(quads, splat(quads, acc, 0), sums, at, rank, loc);
  pbcAccessSetSubscriptExpr(init, rank - 1, sumCol);
  MlirOperation load = pbcBuildAffineVectorLoad(end, sums, at, rank, acc, loc);
  pbcAccessSetSubscriptExpr(load, rank - 1, sumCol);
  MlirValue more = vpdpbusd(end, result(load), splat(end, v64, -128), out);
  MlirOperation add = pbcBuildAffineVectorStore(end, more, sums, at, rank, loc);
  pbcAccessSetSubscriptExpr(add, rank - 1, sumCol);
}

/* An affine.vector_load of `type` from `memref` at `load`'s subscripts
 * mapped by `map` (load's own map when null), before `before`; the operand
 * `from` (unless null) replaced by `to`. */
static MlirValue vectorLoadLike(MlirOperation before, MlirOperation load, MlirValue memref,
                                MlirAffineMap map, MlirType type, MlirValue from, MlirValue to) {
  intptr_t n = mlirOperationGetNumOperands(load);
  MlirValue ops[1 + 2 * PBC_MAX_TERMS];
  if (n > (intptr_t)(sizeof(ops) / sizeof(ops[0])))
    return (MlirValue){NULL};
  ops[0] = memref;
  for (intptr_t i = 1; i < n; ++i) {
    ops[i] = mlirOperationGetOperand(load, i);
    if (!mlirValueIsNull(from) && ops[i].ptr == from.ptr)
      ops[i] = to;
  }
  MlirAttribute m = mlirOperationGetAttributeByName(load, pbcStr("map"));
  if (!mlirAffineMapIsNull(map))
    m = mlirAffineMapAttrGet(map);
  MlirNamedAttribute attr = pbcNamedAttr(mlirOperationGetContext(before), "map", m);
  return result(pbcBuildOp(before, "affine.vector_load", (int)n, ops, type, 1, &attr));
}

/* P's subscripts (.., row, col) as P4's (.., row / 4, 4 col). */
static MlirAffineMap quadMap(MlirOperation load) {
  MlirAffineMap m = mlirAffineMapAttrGetValue(mlirOperationGetAttributeByName(load, pbcStr("map")));
  MlirContext ctx = mlirAffineMapGetContext(m);
  intptr_t n = mlirAffineMapGetNumResults(m);
  MlirAffineExpr e[PBC_MAX_RANK];
  for (intptr_t r = 0; r < n; ++r)
    e[r] = mlirAffineMapGetResult(m, r);
  e[n - 2] = mlirAffineFloorDivExprGet(e[n - 2], cstExpr(ctx, kQuad));
  e[n - 1] = mlirAffineMulExprGet(e[n - 1], cstExpr(ctx, kQuad));
  return mlirAffineMapGet(ctx, mlirAffineMapGetNumDims(m), mlirAffineMapGetNumSymbols(m), n, e);
}

/* acc + the four u8 x s8 products of each i32 lane's bytes of a and b (zmm,
 * or ymm with AVX-512 VL for 8 lanes). */
static MlirValue vpdpbusd(MlirOperation before, MlirValue acc, MlirValue a, MlirValue b) {
  MlirContext ctx = mlirOperationGetContext(before);
  bool zmm = mlirShapedTypeGetDimSize(mlirValueGetType(acc), 0) == kLanes;
  MlirNamedAttribute attrs[3] = {
      pbcNamedAttr(ctx, "intrin",
                   mlirStringAttrGet(ctx, pbcStr(zmm ? "llvm.x86.avx512.vpdpbusd.512"
                                                     : "llvm.x86.avx512.vpdpbusd.256"))),
      pbcNamedAttr(ctx, "op_bundle_sizes", mlirDenseI32ArrayGet(ctx, 0, NULL)),
      pbcNamedAttr(ctx, "operandSegmentSizes", mlirDenseI32ArrayGet(ctx, 2, (int32_t[]){3, 0}))};
  MlirValue ops[3] = {acc, a, b};
  return result(pbcBuildOp(before, "llvm.call_intrinsic", 3, ops, mlirValueGetType(acc), 3, attrs));
}

static MlirValue bitcast(MlirOperation before, MlirValue v, MlirType t) {
  return result(pbcBuildOp(before, "vector.bitcast", 1, &v, t, 0, NULL));
}

/* P's subscripts (.., row, col) as its column sums' (.., row / block, col). */
static MlirAffineMap sumsMap(MlirOperation load, long long block) {
  MlirAffineMap m = mlirAffineMapAttrGetValue(mlirOperationGetAttributeByName(load, pbcStr("map")));
  intptr_t n = mlirAffineMapGetNumResults(m);
  MlirAffineExpr e[PBC_MAX_RANK];
  for (intptr_t r = 0; r < n; ++r)
    e[r] = mlirAffineMapGetResult(m, r);
  e[n - 2] = mlirAffineFloorDivExprGet(e[n - 2], cstExpr(mlirAffineMapGetContext(m), block));
  return mlirAffineMapGet(mlirAffineMapGetContext(m), mlirAffineMapGetNumDims(m),
                          mlirAffineMapGetNumSymbols(m), n, e);
}

/* The loop's lower bound as an index value, before it. */
static MlirValue lowerBound(MlirOperation loop) {
  MlirAffineMap lb =
      mlirAffineMapAttrGetValue(mlirOperationGetAttributeByName(loop, pbcStr("lowerBoundMap")));
  MlirAffineExpr e = mlirAffineMapGetResult(lb, 0);
  if (mlirAffineExprIsAConstant(e))
    return pbcBuildIndexConstant(loop, mlirAffineConstantExprGetValue(e));
  MlirValue ops[PBC_MAX_TERMS];
  intptr_t n = mlirAffineMapGetNumInputs(lb);
  for (intptr_t i = 0; i < n && i < PBC_MAX_TERMS; ++i)
    ops[i] = mlirOperationGetOperand(loop, i);
  return pbcBuildAffineApply(loop, lb, ops, (int)n, mlirOperationGetLocation(loop));
}

/* The kernel on vpdpbusd, reading the relaid panel p4. A's bytes go in
 * as they are when they are u8; s8 ones are flipped to u8 and 128 * sum_k B
 * comes off: from `sums` (the panel's column sums per block of `block`
 * rows: the loop's) or, without them, summed in the loop. */
static void rewriteKernel(Kernel *K, MlirValue p4, MlirValue sums, long long block) {
  MlirContext ctx = mlirOperationGetContext(K->loop);
  MlirType accType = vectorType(ctx, K->lanes, 32), byteType = vectorType(ctx, kQuad * K->lanes, 8);
  bool flipA = !K->aUnsigned;
  MlirValue flip = flipA ? splat(K->loop, accType, (int32_t)0x80808080u) : (MlirValue){NULL};
  /* Without the panel's sums, 128 * sum_k B in the loop: one accumulator
   * per panel vector, from zero. */
  int nInLoop = flipA && mlirValueIsNull(sums) ? K->nB : 0;
  MlirValue inits[kMaxLoads], bias = {NULL};
  if (nInLoop)
    inits[0] = splat(K->loop, accType, 0), bias = splat(K->loop, byteType, -128);
  for (int i = 1; i < nInLoop; ++i)
    inits[i] = inits[0];
  int nAcc = (int)mlirOperationGetNumResults(K->loop);
  /* The sums of the loop's block of rows, read before it (the old loads'
   * subscripts at the first row). */
  MlirValue comp[kMaxLoads];
  if (flipA && !nInLoop) {
    MlirValue first = lowerBound(K->loop);
    for (int i = 0; i < K->nB; ++i)
      comp[i] = vectorLoadLike(K->loop, K->bLoads[i], sums, sumsMap(K->bLoads[i], block), accType,
                               pbcLoopIv(K->loop), first);
  }
  MlirOperation old = K->loop;
  /* The old body's ops move into the new loop: the lists stay valid. */
  if (nInLoop)
    K->loop = pbcExtAffineForAddIterArgs(old, nInLoop, inits, inits);
  MlirBlock body = pbcLoopBody(K->loop);
  MlirOperation yield = mlirBlockGetTerminator(body);
  MlirOperation oldOps[2 * kMaxProducts + 5 * kMaxLoads];
  int nOld = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); op.ptr != yield.ptr;
       op = mlirOperationGetNextInBlock(op))
    oldOps[nOld++] = op;
  pbcLoopSetStep(K->loop, kQuad);

  MlirValue a[kMaxLoads], b[kMaxLoads];
  for (int i = 0; i < K->nB; ++i)
    b[i] = vectorLoadLike(yield, K->bLoads[i], p4, quadMap(K->bLoads[i]), byteType,
                          (MlirValue){NULL}, (MlirValue){NULL});
  for (int i = 0; i < K->nA; ++i) {
    MlirValue bytes = vectorLoadLike(yield, K->aLoads[i], mlirOperationGetOperand(K->aLoads[i], 0),
                                     (MlirAffineMap){NULL}, vectorType(ctx, kQuad, 8),
                                     (MlirValue){NULL}, (MlirValue){NULL});
    MlirValue word = bitcast(yield, bytes, vectorType(ctx, 1, 32));
    MlirNamedAttribute pos = pbcNamedAttr(ctx, "static_position", mlirDenseI64ArrayGet(ctx, 1, (int64_t[]){0}));
    MlirValue s = result(pbcBuildOp(yield, "vector.extract", 1, &word, mlirIntegerTypeGet(ctx, 32), 1, &pos));
    MlirValue all = result(pbcBuildOp(yield, "vector.broadcast", 1, &s, accType, 0, NULL));
    if (flipA)
      all = result(pbcBuildOp(yield, "arith.xori", 2, (MlirValue[]){all, flip}, accType, 0, NULL));
    a[i] = bitcast(yield, all, byteType);
  }
  for (int p = 0; p < K->nProd; ++p) {
    const Product *q = &K->prod[p];
    mlirOperationSetOperand(yield, q->arg,
                            vpdpbusd(yield, mlirBlockGetArgument(body, 1 + q->arg), a[q->a], b[q->b]));
  }
  for (int i = 0; i < nInLoop; ++i)
    mlirOperationSetOperand(yield, nAcc + i,
                            vpdpbusd(yield, mlirBlockGetArgument(body, 1 + nAcc + i), bias, b[i]));
  /* Each accumulator less its panel vector's 128 * sum, after the loop. */
  MlirOperation after = mlirOperationGetNextInBlock(K->loop);
  for (int i = 0; i < nInLoop; ++i)
    comp[i] = mlirOperationGetResult(K->loop, nAcc + i);
  /* The old chains, last first (users before what they use). */
  for (int i = nOld - 1; i >= 0; --i)
    mlirOperationDestroy(oldOps[i]);
  for (int p = 0; p < K->nProd && flipA; ++p) {
    const Product *q = &K->prod[p];
    MlirValue acc = mlirOperationGetResult(K->loop, q->arg);
    MlirValue ops[2] = {acc, comp[q->b]};
    MlirOperation sub = pbcBuildOp(after, "arith.subi", 2, ops, accType, 0, NULL);
    mlirValueReplaceAllUsesOfWith(acc, result(sub));
    mlirOperationSetOperand(sub, 0, acc);
  }
}

/* P4's type for the panel type `pt` (rows / 4, columns * 4), and the
 * column sums' per block of `block` rows (i32). */
static MlirType quadType(MlirType pt) {
  int rank = (int)mlirShapedTypeGetRank(pt);
  int64_t shape[PBC_MAX_RANK];
  for (int d = 0; d < rank; ++d)
    shape[d] = mlirShapedTypeGetDimSize(pt, d);
  shape[rank - 2] /= kQuad;
  shape[rank - 1] *= kQuad;
  return mlirMemRefTypeGet(mlirShapedTypeGetElementType(pt), rank, shape, mlirAttributeGetNull(),
                           mlirMemRefTypeGetMemorySpace(pt));
}

static MlirType sumsType(MlirType pt, long long block) {
  int rank = (int)mlirShapedTypeGetRank(pt);
  int64_t shape[PBC_MAX_RANK];
  for (int d = 0; d < rank; ++d)
    shape[d] = mlirShapedTypeGetDimSize(pt, d);
  shape[rank - 2] /= block;
  return mlirMemRefTypeGet(mlirIntegerTypeGet(mlirTypeGetContext(pt), 32), rank, shape,
                           mlirAttributeGetNull(), mlirMemRefTypeGetMemorySpace(pt));
}

/* The panel laid out again before `x` (and its column sums over all its
 * rows if `whole`), in buffers freed after x. */
static void relayout(MlirOperation x, MlirValue panel, bool whole, MlirValue *p4,
                     MlirValue *sums) {
  MlirType pt = mlirValueGetType(panel);
  MlirLocation loc = mlirOperationGetLocation(x);
  *p4 = result(pbcBuildAlloc(x, quadType(pt), loc));
  if (whole)
    *sums = result(pbcBuildAlloc(
        x, sumsType(pt, mlirShapedTypeGetDimSize(pt, mlirShapedTypeGetRank(pt) - 2)), loc));
  long long cols = mlirShapedTypeGetDimSize(pt, mlirShapedTypeGetRank(pt) - 1);
  buildRelayout(x, panel, *p4, *sums, cols % kLanes ? 8 : kLanes);
  MlirOperation next = mlirOperationGetNextInBlock(x);
  if (mlirOperationIsNull(next))
    next = mlirBlockGetTerminator(mlirOperationGetBlock(x));
  pbcBuildDealloc(next, *p4, loc);
  if (whole)
    pbcBuildDealloc(next, *sums, loc);
}

/* A constant global named from `base` holding `data` as `type`; its
 * memref.get_global first in `func`. */
static MlirValue constantGlobal(MlirOperation func, MlirSymbolTable table, const char *base,
                                MlirType type, const void *data, size_t bytes) {
  intptr_t rank = mlirShapedTypeGetRank(type);
  int64_t shape[PBC_MAX_RANK];
  for (intptr_t d = 0; d < rank; ++d)
    shape[d] = mlirShapedTypeGetDimSize(type, d);
  MlirType tensor = mlirRankedTensorTypeGet(rank, shape, mlirShapedTypeGetElementType(type),
                                            mlirAttributeGetNull());
  MlirStringRef name =
      pbcBuildGlobal(mlirOperationGetParentOperation(func), table, base, type,
                     mlirDenseElementsAttrRawBufferGet(tensor, bytes, data), true);
  return pbcBuildGetGlobal(func, name, type);
}

/* A panel that is a constant global (B itself, a model's weight) is laid
 * out again here, at compile time: P4 and its column sums per block of
 * `block` rows (none if 0) become constant globals, and the calls do no
 * relayout at all. False (nothing done)
 * unless the panel is memref.get_global of a constant global with dense
 * (not splat) i8 elements. */
static bool foldRelayout(MlirOperation func, MlirValue panel, long long block, MlirValue *p4,
                         MlirValue *sums) {
  MlirOperation get = defOp(panel);
  if (mlirOperationIsNull(get) || !pbcOpIsA(get, "memref.get_global"))
    return false;
  MlirSymbolTable table = mlirSymbolTableCreate(mlirOperationGetParentOperation(func));
  MlirAttribute name = mlirOperationGetAttributeByName(get, pbcStr("name"));
  MlirOperation global = mlirSymbolTableLookup(table, mlirFlatSymbolRefAttrGetValue(name));
  MlirAttribute init = mlirOperationIsNull(global)
                           ? mlirAttributeGetNull()
                           : mlirOperationGetAttributeByName(global, pbcStr("initial_value"));
  if (mlirOperationIsNull(global) || !pbcOpHasAttr(global, "constant") ||
      mlirAttributeIsNull(init) || !mlirAttributeIsADenseElements(init) ||
      mlirDenseElementsAttrIsSplat(init)) {
    mlirSymbolTableDestroy(table);
    return false;
  }
  MlirType pt = mlirValueGetType(panel);
  int rank = (int)mlirShapedTypeGetRank(pt);
  long long rows = mlirShapedTypeGetDimSize(pt, rank - 2), cols = mlirShapedTypeGetDimSize(pt, rank - 1);
  long long lead = pbcMemrefElements(pt) / (rows * cols);
  const int8_t *b = mlirDenseElementsAttrGetRawData(init);
  int8_t *q = malloc((size_t)(lead * rows * cols));
  long long blocks = block ? rows / block : 1;
  int32_t *sum = calloc((size_t)(lead * blocks * cols), sizeof(int32_t));
  for (long long l = 0; l < lead; ++l)
    for (long long r = 0; r < rows; ++r)
      for (long long j = 0; j < cols; ++j) {
        int8_t v = b[(l * rows + r) * cols + j];
        q[(l * rows + r - r % kQuad) * cols + kQuad * j + r % kQuad] = v;
        if (block) /* 128 * v summed in i32 as the instruction does (wrapping) */
          sum[(l * blocks + r / block) * cols + j] =
              (int32_t)((uint32_t)sum[(l * blocks + r / block) * cols + j] + (uint32_t)(128 * v));
      }
  char base[256];
  MlirStringRef g = mlirFlatSymbolRefAttrGetValue(name);
  snprintf(base, sizeof(base), "%.*s_quads", (int)g.length, g.data);
  *p4 = constantGlobal(func, table, base, quadType(pt), q, (size_t)(lead * rows * cols));
  if (block) {
    snprintf(base, sizeof(base), "%.*s_column_sums", (int)g.length, g.data);
    *sums = constantGlobal(func, table, base, sumsType(pt, block), sum,
                           (size_t)(lead * blocks * cols) * 4);
  }
  free(q);
  free(sum);
  mlirSymbolTableDestroy(table);
  return true;
}

typedef struct {
  MlirAttribute name;
  bool used;
} SymbolUse;

static MlirWalkResult findGetGlobal(MlirOperation op, void *data) {
  SymbolUse *u = data;
  if (pbcOpIsA(op, "memref.get_global") &&
      mlirAttributeEqual(mlirOperationGetAttributeByName(op, pbcStr("name")), u->name))
    u->used = true;
  return u->used ? MlirWalkResultInterrupt : MlirWalkResultAdvance;
}

/* A constant panel laid out at compile time that nothing reads any more:
 * its get_global goes, and its global too if no other function reads it
 * (the weight is in the binary once, relaid). */
static void eraseIfUnread(MlirOperation func, MlirValue panel) {
  if (!mlirOpOperandIsNull(mlirValueGetFirstUse(panel)))
    return;
  MlirOperation get = defOp(panel);
  SymbolUse u = {mlirOperationGetAttributeByName(get, pbcStr("name")), false};
  MlirOperation module = mlirOperationGetParentOperation(func);
  MlirSymbolTable table = mlirSymbolTableCreate(module);
  MlirOperation global = mlirSymbolTableLookup(table, mlirFlatSymbolRefAttrGetValue(u.name));
  mlirOperationDestroy(get);
  mlirOperationWalk(module, findGetGlobal, &u, MlirWalkPreOrder);
  if (!u.used && !mlirOperationIsNull(global)) {
    mlirSymbolTableErase(table, global);
  }
  mlirSymbolTableDestroy(table);
}

static bool run(MlirOperation func, void *state) {
  if (!((const State *)state)->vnni)
    return true;
  PbcOpList loops = {0};
  pbcOpListCollect(&loops, func, "affine.for");
  /* Kernels grouped by panel: each panel is laid out again once. */
  Kernel *kernels = calloc((size_t)loops.n + 1, sizeof(Kernel));
  int nK = 0;
  for (int i = 0; i < loops.n; ++i)
    if (mlirOperationGetNumResults(loops.ops[i]) > 0 && matchKernel(loops.ops[i], &kernels[nK]))
      ++nK;
  bool *done = calloc((size_t)nK + 1, sizeof(bool));
  for (int i = 0; i < nK; ++i) {
    if (done[i])
      continue;
    MlirOperation group[kMaxLoads];
    int members[kMaxLoads], n = 0;
    for (int j = i; j < nK && n < kMaxLoads; ++j)
      if (!done[j] && kernels[j].panel.ptr == kernels[i].panel.ptr)
        group[n] = kernels[j].loop, members[n++] = j, done[j] = true;
    MlirOperation x = relayoutPoint(func, kernels[i].panel, group, n);
    if (mlirOperationIsNull(x))
      continue;
    /* Kernels that all run over the same blocks of the panel's rows
     * subtract its column sums per block (made at compile time for a
     * constant panel; at run time only for one block of all rows) instead
     * of summing B in each register tile. */
    long long block = -1; /* the signed kernels' common block (u8 ones need no sums) */
    for (int m = 0; m < n; ++m)
      if (!kernels[members[m]].aUnsigned)
        block = block < 0 || block == kernels[members[m]].blockRows ? kernels[members[m]].blockRows : 0;
    block = block < 0 ? 0 : block;
    MlirType pt = mlirValueGetType(kernels[i].panel);
    long long rows = mlirShapedTypeGetDimSize(pt, mlirShapedTypeGetRank(pt) - 2);
    MlirValue p4, sums = {NULL};
    bool folded = foldRelayout(func, kernels[i].panel, block, &p4, &sums);
    if (!folded) {
      relayout(x, kernels[i].panel, block == rows, &p4, &sums);
      block = block == rows ? rows : 0;
    }
    for (int m = 0; m < n; ++m)
      rewriteKernel(&kernels[members[m]], p4, sums, block);
    if (folded)
      eraseIfUnread(func, kernels[i].panel);
  }
  free(done);
  free(kernels);
  pbcOpListDestroy(&loops);
  return true;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcDotI8Pass = {
    "pbc-dot-i8", "func.func",
    "i8 x i8 -> i32 register tiles -> the chip's dot-product instruction (AVX-512 VNNI)", run,
    sizeof(State), createPass};

/* Whether code for `cpu` with `features` (the chip's llvm-cpu and
 * llvm-features, as codegen reads them) may hold vpdpbusd: a generic
 * x86-64 level (x86-64-v4 has no VNNI) needs +avx512vnni in the features;
 * a named CPU or the host's (native) decides for itself. */
static bool mayUseVnni(const char *cpu, const char *features) {
  bool generic = strncmp(cpu, "x86-64", 6) == 0;
  return !generic || strcmp(features, "native") == 0 || strstr(features, "+avx512vnni");
}

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  static const char *const known[] = {"int8-dot", "llvm-cpu", "llvm-features", NULL};
  if (!pbcPassOptionsCheck(options, known, err, errLen))
    return (MlirPass){NULL};
  char how[32] = "none", cpu[128] = "native", features[1024] = "native";
  pbcPassOptionGet(options, "int8-dot", how, sizeof(how));
  pbcPassOptionGet(options, "llvm-cpu", cpu, sizeof(cpu));
  pbcPassOptionGet(options, "llvm-features", features, sizeof(features));
  State st = {.vnni = strcmp(how, "avx512-vnni") == 0};
  if (!st.vnni && strcmp(how, "none") != 0) {
    snprintf(err, errLen, "int8-dot: 'avx512-vnni' or 'none', not '%s'", how);
    return (MlirPass){NULL};
  }
  /* A chip that claims the instruction its code generator would not emit
   * (LLVM stops on it) is an error here, not a crash there. */
  if (st.vnni && !mayUseVnni(cpu, features)) {
    snprintf(err, errLen,
             "int8-dot=avx512-vnni needs +avx512vnni in llvm-features for llvm-cpu=%s "
             "(llvm-features='%s')",
             cpu, features);
    return (MlirPass){NULL};
  }
  return pbcCPassCreate(&pbcDotI8Pass, &st);
}
