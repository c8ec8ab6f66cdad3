/* The contractions the matrix units take (see matrix_units.h), and the
 * launch scaffolding every emitter shares.
 *
 * A nest qualifies when S2 classified it `matmul` and its perfect band has
 * the body C[...] += ext?(A[...]) * ext?(B[...]); each loop's role (batch,
 * row, column, reduction) follows from the operands it indexes. Plain gemms
 * ([batch] i, j, k on row-major buffers, A maybe read as [k][i], B as [j][k])
 * are marked for whole-fragment loads. */
#include "matrix_units.h"

#include "gpu_build.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"


bool pbcGpuSubscriptIsIv(const PbcLinearForm *f, MlirOperation loop) {
  return f->linear && f->nTerms == 1 && f->constant == 0 && f->coeffs[0] == 1 &&
         f->values[0].ptr == pbcLoopIv(loop).ptr;
}

/* The band loop whose induction variable the subscript is, or -1. */
static int ivLoop(const PbcLinearForm *f, const PbcGemm *g) {
  for (int l = 0; l < g->depth; ++l)
    if (pbcGpuSubscriptIsIv(f, g->band[l]))
      return l;
  return -1;
}

static MlirValue stripExt(MlirValue v) {
  if (mlirValueIsAOpResult(v) && (pbcOpIsA(mlirOpResultGetOwner(v), "arith.extf") ||
                                  pbcOpIsA(mlirOpResultGetOwner(v), "arith.extsi")))
    return mlirOperationGetOperand(mlirOpResultGetOwner(v), 0);
  return v;
}

static bool isRowMajor(MlirValue memref) {
  MlirType t = mlirValueGetType(memref);
  return pbcMemrefHasIdentityLayout(t) && mlirShapedTypeHasStaticShape(t);
}

static bool allLinear(const PbcAccess *acc) {
  if (acc->lanes)
    return false;
  for (int d = 0; d < acc->rank; ++d)
    if (!acc->subscripts[d].linear)
      return false;
  return true;
}

/* The body: C = Cload + ext?(A) * ext?(B), one store, nothing else. */
static bool matchBody(PbcGemm *g, PbcAccess *x, PbcAccess *y) {
  int nLoads = 0, nStores = 0, nMul = 0, nAdd = 0;
  MlirOperation mul = {NULL}, add = {NULL}, store = {NULL};
  MlirBlock body = pbcLoopBody(g->band[g->depth - 1]);
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (pbcOpIsA(op, "affine.load"))
      ++nLoads;
    else if (pbcOpIsA(op, "affine.store"))
      store = op, ++nStores;
    else if (pbcOpIsA(op, "arith.mulf") || pbcOpIsA(op, "arith.muli"))
      mul = op, ++nMul;
    else if (pbcOpIsA(op, "arith.addf") || pbcOpIsA(op, "arith.addi"))
      add = op, ++nAdd;
    else if (!pbcOpIsA(op, "arith.extf") && !pbcOpIsA(op, "arith.extsi") &&
             !pbcOpIsA(op, "affine.yield"))
      return false;
  }
  if (nLoads != 3 || nStores != 1 || nMul != 1 || nAdd != 1 || !pbcAccessGet(store, &g->c))
    return false;
  MlirValue addL = mlirOperationGetOperand(add, 0), addR = mlirOperationGetOperand(add, 1);
  MlirValue mulV = mlirOperationGetResult(mul, 0);
  MlirValue cLoad = addL.ptr == mulV.ptr ? addR : addR.ptr == mulV.ptr ? addL : (MlirValue){NULL};
  if (mlirValueIsNull(cLoad) ||
      mlirOperationGetOperand(store, 0).ptr != mlirOperationGetResult(add, 0).ptr)
    return false;
  PbcAccess cl;
  if (!mlirValueIsAOpResult(cLoad) || !pbcAccessGet(mlirOpResultGetOwner(cLoad), &cl) ||
      !pbcAccessesSame(&cl, &g->c) || cl.memref.ptr != g->c.memref.ptr)
    return false;
  MlirValue p = stripExt(mlirOperationGetOperand(mul, 0)),
            q = stripExt(mlirOperationGetOperand(mul, 1));
  return mlirValueIsAOpResult(p) && mlirValueIsAOpResult(q) &&
         pbcAccessGet(mlirOpResultGetOwner(p), x) && pbcAccessGet(mlirOpResultGetOwner(q), y);
}

/* Every loop gets its role from the operands it indexes: C and A only: a
 * row (M) loop; C and B: a column (N) loop; C, A and B: batch; A and B, not
 * C: reduction (K). C's subscripts must be distinct loops. */
static bool assignRoles(PbcGemm *g) {
  bool inC[kPbcMaxBand] = {false};
  if (!allLinear(&g->c))
    return false;
  for (int d = 0; d < g->c.rank; ++d) {
    int l = ivLoop(&g->c.subscripts[d], g);
    if (l < 0 || inC[l])
      return false;
    inC[l] = true;
  }
  int count[4] = {0};
  for (int l = 0; l < g->depth; ++l) {
    bool inA = pbcAccessDependsOnLoop(&g->a, g->band[l]);
    bool inB = pbcAccessDependsOnLoop(&g->b, g->band[l]);
    if (inC[l] && (inA || inB))
      g->role[l] = inA && inB ? kPbcBatch : inA ? kPbcRowM : kPbcColN;
    else if (!inC[l] && inA && inB)
      g->role[l] = kPbcRed;
    else
      return false; /* a broadcast or a one-sided reduction */
    ++count[g->role[l]];
  }
  return count[kPbcRowM] && count[kPbcColN] && count[kPbcRed];
}

/* Row-major fragments: [batch] i, j, k with C[b,i,j], A[b,i,k] or [b,k,i],
 * B[b,k,j] or [b,j,k] on identity-layout buffers. */
static bool indexedBy(const PbcAccess *acc, const PbcGemm *g, int r, int c) {
  int batch = g->depth - 3;
  if (acc->rank != 2 + batch || (batch && !pbcGpuSubscriptIsIv(&acc->subscripts[0], g->band[0])))
    return false;
  return pbcGpuSubscriptIsIv(&acc->subscripts[batch], g->band[r]) &&
         pbcGpuSubscriptIsIv(&acc->subscripts[batch + 1], g->band[c]);
}

static void matchPlain(PbcGemm *g) {
  int d = g->depth, i = d - 3, j = d - 2, k = d - 1;
  g->plain = (d == 3 || (d == 4 && g->role[0] == kPbcBatch)) && g->role[i] == kPbcRowM &&
             g->role[j] == kPbcColN && g->role[k] == kPbcRed && indexedBy(&g->c, g, i, j) &&
             isRowMajor(g->a.memref) && isRowMajor(g->b.memref) && isRowMajor(g->c.memref);
  g->aT = g->plain && indexedBy(&g->a, g, k, i);
  g->bT = g->plain && indexedBy(&g->b, g, j, k);
  if (g->plain &&
      ((!g->aT && !indexedBy(&g->a, g, i, k)) || (!g->bT && !indexedBy(&g->b, g, k, j))))
    g->plain = false;
}

bool pbcGpuMatchGemm(MlirOperation root, PbcGemm *g) {
  g->root = root;
  g->depth = pbcLoopBand(root, g->band, kPbcMaxBand);
  if (g->depth < 3)
    return false;
  g->fill = g->epilogue = (MlirOperation){NULL};
  g->init = (MlirValue){NULL};
  g->storeC = true;
  for (int l = 0; l < g->depth; ++l)
    if ((g->trip[l] = pbcLoopZeroBasedTrip(g->band[l])) < 0)
      return false;
  PbcAccess x, y;
  if (!matchBody(g, &x, &y) || !allLinear(&x) || !allLinear(&y))
    return false;
  /* A is the operand that C's row subscript indexes (B does not). */
  int row = g->c.rank >= 2 ? ivLoop(&g->c.subscripts[g->c.rank - 2], g) : -1;
  bool swap = row >= 0 && pbcAccessDependsOnLoop(&y, g->band[row]) &&
              !pbcAccessDependsOnLoop(&x, g->band[row]);
  g->a = swap ? y : x;
  g->b = swap ? x : y;
  if (!assignRoles(g))
    return false;
  MlirType fa = mlirShapedTypeGetElementType(mlirValueGetType(g->a.memref));
  MlirType fb = mlirShapedTypeGetElementType(mlirValueGetType(g->b.memref));
  MlirType fc = mlirShapedTypeGetElementType(mlirValueGetType(g->c.memref));
  g->bf16 = mlirTypeIsABF16(fa);
  g->i8 = mlirTypeIsAInteger(fa) && mlirIntegerTypeGetWidth(fa) == 8;
  bool f16 = mlirTypeIsAF16(fa) && mlirTypeIsAF16(fb) && (mlirTypeIsAF16(fc) || mlirTypeIsAF32(fc));
  bool bf16 = g->bf16 && mlirTypeIsABF16(fb) && (mlirTypeIsABF16(fc) || mlirTypeIsAF32(fc));
  /* i8 x i8 -> i32: the body then sign-extends (the only integer
   * extension matchBody takes) and multiplies and adds in i32. */
  bool i8 = g->i8 && mlirTypeEqual(fa, fb) && mlirTypeIsAInteger(fc) &&
            mlirIntegerTypeGetWidth(fc) == 32;
  if (!f16 && !bf16 && !i8)
    return false;
  long long size[4] = {1, 1, 1, 1};
  for (int l = 0; l < g->depth; ++l)
    size[g->role[l]] *= g->trip[l];
  g->batch = size[kPbcBatch], g->m = size[kPbcRowM], g->n = size[kPbcColN], g->k = size[kPbcRed];
  matchPlain(g);
  /* Grid y and z hold at most 65535 blocks. */
  g->partial = g->m % kPbcFrag || g->n % kPbcFrag || g->k % kPbcFrag;
  return (g->m + kPbcFrag - 1) / kPbcFrag <= 65535 && g->batch <= 65535;
}

PbcTileLaunch pbcGpuTileLaunch(const PbcGemm *g, int lanes) {
  PbcTileLaunch t;
  MlirOperation at = g->root;
  MlirValue c1 = pbcGpuConstIndex(at, 1);
  MlirValue grid[3] = {pbcGpuConstIndex(at, g->n / kPbcFrag), pbcGpuConstIndex(at, g->m / kPbcFrag),
                       pbcGpuConstIndex(at, g->batch)};
  MlirValue block[3] = {pbcGpuConstIndex(at, lanes), c1, c1};
  t.launch = pbcGpuBuildLaunch(at, grid, block, (MlirValue){NULL});
  t.body = pbcGpuBody(t.launch, 0);
  t.end = mlirBlockGetTerminator(t.body);
  MlirValue frag = pbcGpuConstIndex(t.end, kPbcFrag);
  t.j0 = pbcGpuArith(t.end, "muli", mlirBlockGetArgument(t.body, 0), frag);
  t.i0 = pbcGpuArith(t.end, "muli", mlirBlockGetArgument(t.body, 1), frag);
  t.b = mlirBlockGetArgument(t.body, 2);
  t.lane = mlirBlockGetArgument(t.body, 3);
  t.batched = g->plain && g->depth == 4;
  return t;
}

MlirOperation pbcGpuTileKLoop(const PbcTileLaunch *t, const PbcGemm *g, int kStep,
                              MlirValue acc0) {
  return pbcGpuBuildFor(t->end, pbcGpuConstIndex(t->end, 0), pbcGpuConstIndex(t->end, g->k),
                        pbcGpuConstIndex(t->end, kStep), 1, &acc0);
}

int pbcGpuTileIndices(const PbcTileLaunch *t, MlirValue row, MlirValue col, bool transposed,
                      MlirValue out[3]) {
  int n = 0;
  if (t->batched)
    out[n++] = t->b;
  out[n++] = transposed ? col : row;
  out[n++] = transposed ? row : col;
  return n;
}
