/* pbc-gpu-map-matrix-units: matmul-kind nests on f16 operands run on the
 * GPU's matrix units (tensor cores), through gpu.subgroup_mma_* ops that
 * NVVM lowers to wmma.mma.sync.
 *
 * A nest qualifies when S2 classified it `matmul` and its perfect band is
 * [batch] i, j, k (k the reduction) with the body
 *     C[b,i,j] += ext?(A[b,i,k]) * ext?(B[b,k,j])
 * (A may be read as [k][i] and B as [j][k]: transposed fragments) on
 * row-major buffers, A and B f16, C f16 or f32, and M, N, K multiples of
 * the fragment (16x16x16). It becomes one gpu.launch: a warp per 16x16 tile
 * of C (grid N/16 x M/16 x batch), the accumulator fragment loaded once,
 * kept in registers across the k loop, and stored once.
 * Nests that do not qualify are left to the generic mapping (S4). */
#include <stdio.h>

#include "gpu_build.h"
#include "gpu_passes.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"

enum { kFrag = 16, kWarp = 32 };

static MlirStringRef str(const char *s) { return mlirStringRefCreateFromCString(s); }

typedef struct {
  MlirOperation band[4];
  int depth; /* 3 (i, j, k) or 4 (batch, i, j, k) */
  PbcAccess a, b, c;
  bool aT, bT; /* A read as [k][i] / B as [j][k] (column-major fragment) */
  long long m, n, k, batch;
  MlirOperation root;
} Gemm;

static bool isIv(const PbcLinearForm *f, MlirOperation loop) {
  return f->linear && f->nTerms == 1 && f->constant == 0 && f->coeffs[0] == 1 &&
         f->values[0].ptr == pbcLoopIv(loop).ptr;
}

/* subscripts == (batch iv?, r, c) over the band. */
static bool indexedBy(const PbcAccess *acc, const Gemm *g, MlirOperation r, MlirOperation c) {
  int batch = g->depth - 3;
  if (acc->rank != 2 + batch || acc->lanes)
    return false;
  if (batch && !isIv(&acc->subscripts[0], g->band[0]))
    return false;
  return isIv(&acc->subscripts[batch], r) && isIv(&acc->subscripts[batch + 1], c);
}

static MlirValue stripExt(MlirValue v) {
  if (mlirValueIsAOpResult(v) && pbcOpIsA(mlirOpResultGetOwner(v), "arith.extf"))
    return mlirOperationGetOperand(mlirOpResultGetOwner(v), 0);
  return v;
}

static bool isRowMajor(MlirValue memref) {
  MlirType t = mlirValueGetType(memref);
  return mlirTypeIsAMemRef(t) && mlirShapedTypeHasStaticShape(t) &&
         mlirAffineMapIsIdentity(mlirMemRefTypeGetAffineMap(t));
}

/* The fragments index from the tile origin: the loops must start at 0. */
static bool startsAtZero(MlirOperation loop) {
  MlirAttribute lb = mlirOperationGetAttributeByName(loop, str("lowerBoundMap"));
  if (mlirAttributeIsNull(lb) || !mlirAttributeIsAAffineMap(lb))
    return false;
  MlirAffineMap map = mlirAffineMapAttrGetValue(lb);
  return mlirAffineMapIsSingleConstant(map) && mlirAffineMapGetSingleConstantResult(map) == 0;
}

static bool match(MlirOperation root, Gemm *g) {
  g->root = root;
  g->depth = pbcLoopBand(root, g->band, 4);
  if (g->depth < 3 || g->depth > 4)
    return false;
  long long trips[4];
  for (int l = 0; l < g->depth; ++l) {
    trips[l] = pbcExtAffineConstantTripCount(g->band[l]);
    if (trips[l] <= 0 || pbcLoopStep(g->band[l]) != 1 || !startsAtZero(g->band[l]))
      return false;
  }
  MlirOperation li = g->band[g->depth - 3], lj = g->band[g->depth - 2],
                lk = g->band[g->depth - 1];
  int nLoads = 0, nStores = 0, nMul = 0, nAdd = 0;
  MlirOperation mul = {NULL}, add = {NULL}, store = {NULL};
  MlirBlock body = pbcLoopBody(lk);
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (pbcOpIsA(op, "affine.load"))
      ++nLoads;
    else if (pbcOpIsA(op, "affine.store"))
      store = op, ++nStores;
    else if (pbcOpIsA(op, "arith.mulf"))
      mul = op, ++nMul;
    else if (pbcOpIsA(op, "arith.addf"))
      add = op, ++nAdd;
    else if (!pbcOpIsA(op, "arith.extf") && !pbcOpIsA(op, "affine.yield"))
      return false;
  }
  if (nLoads != 3 || nStores != 1 || nMul != 1 || nAdd != 1 ||
      !pbcAccessGet(store, &g->c) || !indexedBy(&g->c, g, li, lj))
    return false;
  /* add = Cload + mul, store add; mul = A * B (in either order). */
  MlirValue addL = mlirOperationGetOperand(add, 0), addR = mlirOperationGetOperand(add, 1);
  MlirValue mulV = mlirOperationGetResult(mul, 0);
  MlirValue cLoad = addL.ptr == mulV.ptr ? addR : addR.ptr == mulV.ptr ? addL : (MlirValue){NULL};
  if (mlirValueIsNull(cLoad) || mlirOperationGetOperand(store, 0).ptr != mlirOperationGetResult(add, 0).ptr)
    return false;
  PbcAccess cl, x, y;
  if (!mlirValueIsAOpResult(cLoad) || !pbcAccessGet(mlirOpResultGetOwner(cLoad), &cl) ||
      !pbcAccessesSame(&cl, &g->c) || cl.memref.ptr != g->c.memref.ptr)
    return false;
  MlirValue p = stripExt(mlirOperationGetOperand(mul, 0)), q = stripExt(mlirOperationGetOperand(mul, 1));
  if (!mlirValueIsAOpResult(p) || !mlirValueIsAOpResult(q) ||
      !pbcAccessGet(mlirOpResultGetOwner(p), &x) || !pbcAccessGet(mlirOpResultGetOwner(q), &y))
    return false;
  /* A is the operand indexed by i, B the one indexed by j; either may be
   * transposed (Q.K^T in attention reads K as [j][k]). */
  bool swap = !(pbcAccessDependsOnLoop(&x, li) && !pbcAccessDependsOnLoop(&x, lj));
  g->a = swap ? y : x;
  g->b = swap ? x : y;
  g->aT = indexedBy(&g->a, g, lk, li);
  g->bT = indexedBy(&g->b, g, lj, lk);
  if ((!g->aT && !indexedBy(&g->a, g, li, lk)) || (!g->bT && !indexedBy(&g->b, g, lk, lj)))
    return false;
  MlirType fa = mlirShapedTypeGetElementType(mlirValueGetType(g->a.memref));
  MlirType fb = mlirShapedTypeGetElementType(mlirValueGetType(g->b.memref));
  MlirType fc = mlirShapedTypeGetElementType(mlirValueGetType(g->c.memref));
  if (!mlirTypeIsAF16(fa) || !mlirTypeIsAF16(fb) || !(mlirTypeIsAF16(fc) || mlirTypeIsAF32(fc)))
    return false;
  if (!isRowMajor(g->a.memref) || !isRowMajor(g->b.memref) || !isRowMajor(g->c.memref))
    return false;
  g->batch = g->depth == 4 ? trips[0] : 1;
  g->m = trips[g->depth - 3], g->n = trips[g->depth - 2], g->k = trips[g->depth - 1];
  /* Grid y and z hold at most 65535 blocks. */
  return g->m % kFrag == 0 && g->n % kFrag == 0 && g->k % kFrag == 0 &&
         g->m / kFrag <= 65535 && g->batch <= 65535;
}

static MlirType fragType(MlirOperation at, MlirType elem, const char *operand) {
  char text[96];
  snprintf(text, sizeof(text), "!gpu.mma_matrix<%dx%dx%s, \"%s\">", kFrag, kFrag,
           mlirTypeIsAF16(elem) ? "f16" : "f32", operand);
  return mlirTypeParseGet(mlirOperationGetContext(at), str(text));
}

static long long leadDim(MlirValue memref) {
  MlirType t = mlirValueGetType(memref);
  return mlirShapedTypeGetDimSize(t, mlirShapedTypeGetRank(t) - 1);
}

static MlirValue loadFrag(MlirOperation before, MlirValue memref, const MlirValue *idx, int n,
                          const char *operand, bool transpose) {
  MlirValue ops[4] = {memref};
  for (int i = 0; i < n; ++i)
    ops[1 + i] = idx[i];
  MlirType t = fragType(before, mlirShapedTypeGetElementType(mlirValueGetType(memref)), operand);
  MlirNamedAttribute attrs[2] = {pbcGpuNamedIndex(before, "leadDimension", leadDim(memref)),
                                 pbcGpuNamedUnit(before, "transpose")};
  MlirOperationState st =
      mlirOperationStateGet(str("gpu.subgroup_mma_load_matrix"), mlirOperationGetLocation(before));
  mlirOperationStateAddOperands(&st, 1 + n, ops);
  mlirOperationStateAddAttributes(&st, transpose ? 2 : 1, attrs);
  mlirOperationStateAddResults(&st, 1, &t);
  MlirOperation op = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(before), before, op);
  return mlirOperationGetResult(op, 0);
}

static void rewrite(const Gemm *g) {
  MlirOperation at = g->root;
  MlirValue c1 = pbcGpuConstIndex(at, 1);
  MlirValue grid[3] = {pbcGpuConstIndex(at, g->n / kFrag), pbcGpuConstIndex(at, g->m / kFrag),
                       pbcGpuConstIndex(at, g->batch)};
  MlirValue block[3] = {pbcGpuConstIndex(at, kWarp), c1, c1};
  MlirOperation launch = pbcGpuBuildLaunch(at, grid, block);
  MlirBlock lb = pbcGpuBody(launch, 0);
  MlirOperation term = mlirBlockGetTerminator(lb);
  MlirValue frag = pbcGpuConstIndex(term, kFrag);
  MlirValue j0 = pbcGpuArith(term, "muli", mlirBlockGetArgument(lb, 0), frag);
  MlirValue i0 = pbcGpuArith(term, "muli", mlirBlockGetArgument(lb, 1), frag);
  MlirValue b = mlirBlockGetArgument(lb, 2);
  int nb = g->depth == 4 ? 1 : 0;
  MlirValue cIdx[3] = {b, i0, j0};
  MlirValue acc0 = loadFrag(term, g->c.memref, cIdx + 1 - nb, 2 + nb, "COp", false);
  MlirOperation loop = pbcGpuBuildFor(term, pbcGpuConstIndex(term, 0),
                                      pbcGpuConstIndex(term, g->k), frag, acc0);
  MlirBlock fb = pbcGpuBody(loop, 0);
  MlirOperation yield = mlirBlockGetTerminator(fb);
  MlirValue k0 = mlirBlockGetArgument(fb, 0);
  MlirValue aIdx[3] = {b, g->aT ? k0 : i0, g->aT ? i0 : k0};
  MlirValue bIdx[3] = {b, g->bT ? j0 : k0, g->bT ? k0 : j0};
  MlirValue fa = loadFrag(yield, g->a.memref, aIdx + 1 - nb, 2 + nb, "AOp", g->aT);
  MlirValue fbv = loadFrag(yield, g->b.memref, bIdx + 1 - nb, 2 + nb, "BOp", g->bT);
  MlirValue ops[3] = {fa, fbv, mlirBlockGetArgument(fb, 1)};
  MlirType accType = mlirValueGetType(acc0);
  MlirOperationState cst =
      mlirOperationStateGet(str("gpu.subgroup_mma_compute"), mlirOperationGetLocation(yield));
  mlirOperationStateAddOperands(&cst, 3, ops);
  mlirOperationStateAddResults(&cst, 1, &accType);
  /* A transposed fragment is laid out column-major: the mma must know. */
  MlirNamedAttribute aT = pbcGpuNamedUnit(yield, "a_transpose"),
                     bT = pbcGpuNamedUnit(yield, "b_transpose");
  if (g->aT)
    mlirOperationStateAddAttributes(&cst, 1, &aT);
  if (g->bT)
    mlirOperationStateAddAttributes(&cst, 1, &bT);
  MlirOperation compute = mlirOperationCreate(&cst);
  mlirBlockInsertOwnedOperationBefore(fb, yield, compute);
  mlirOperationSetOperand(yield, 0, mlirOperationGetResult(compute, 0));
  /* Store the accumulator once, after the k loop. */
  MlirValue sops[5] = {mlirOperationGetResult(loop, 0), g->c.memref};
  for (int i = 0; i < 2 + nb; ++i)
    sops[2 + i] = cIdx[1 - nb + i];
  MlirNamedAttribute ld = pbcGpuNamedIndex(term, "leadDimension", leadDim(g->c.memref));
  MlirOperationState sst =
      mlirOperationStateGet(str("gpu.subgroup_mma_store_matrix"), mlirOperationGetLocation(term));
  mlirOperationStateAddOperands(&sst, 4 + nb, sops);
  mlirOperationStateAddAttributes(&sst, 1, &ld);
  mlirBlockInsertOwnedOperationBefore(lb, term, mlirOperationCreate(&sst));
  mlirOperationDestroy(g->root);
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  MlirOperation roots[1024];
  int n = pbcRootNests(func, "matmul", roots, 1024);
  for (int i = 0; i < n; ++i) {
    Gemm g;
    if (match(roots[i], &g))
      rewrite(&g);
  }
  return true;
}

static const PbcCPassSpec kSpec = {
    "pbc-gpu-map-matrix-units", "func.func",
    "f16 matmul-kind nests -> warp-level matrix-unit ops (gpu.subgroup_mma_*)", run, 0};

MlirPass pbcGpuCreateMapMatrixUnitsPass(const char *options, char *err, size_t errLen) {
  static const char *const known[] = {NULL};
  if (!pbcPassOptionsCheck(options, known, err, errLen))
    return (MlirPass){NULL};
  return pbcCPassCreate(&kSpec, NULL);
}
