/* Attention as one mma.sync kernel (the paper's reduce-reduce fusion,
 * §4.4, in the form FlashAttention-2 runs it): the chain pbcGpuMatchAttention
 * found, softmax(f(Q Kᵀ)) V, with the score matrix never in memory.
 *
 * A thread block of 4 warps takes 64 query rows of one batch entry (16 per
 * warp, one m16 fragment row) and walks the keys 64 at a time:
 *
 *   Q's rows -> shared memory once; each warp keeps its A fragments of Q
 *   (ldmatrix) in registers for the whole walk;
 *   per key block kb (K and V tiles double-buffered in shared memory by
 *   16-byte cp.async copies, the next block's in flight while this one is
 *   multiplied):
 *     S = Q Kᵀ (16 x 64 per warp: 8 m16n8 accumulators, K staged n-major);
 *     f (the score nests' bodies, scale and masks) on each element, keys
 *     past the end -> -inf;
 *     the running row max m and sum l (FlashAttention's online softmax):
 *       m' = max(m, rowmax S), alpha = exp(m - m'), P = exp(S - m'),
 *       l = l alpha + rowsum P, O = O alpha
 *     (a row's 64 scores sit in the 4 lanes of one quad: the max meets by
 *     two xor shuffles; the sum stays per lane until the end);
 *     O += P V, P going from accumulators to A fragments in registers (the
 *     m16n8 C layout of two adjacent key slices is the m16k16 A layout);
 *   O / l (the quads' partial sums met) leaves through the P V gemm's
 *   copy-out, its fill and pointwise consumer included.
 *
 * Rows past M read the last row and are not stored; keys past N are zeros
 * in shared memory (cp.async with no source elements) and -inf in the
 * scores. A row whose scores are all -inf so far keeps exp's argument
 * finite (m' = -inf counts as 0), so a masked prefix does not poison it. */
#include <stdio.h>

#include "gpu_build.h"
#include "matrix_units.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"

enum {
  kWarp = 32,
  kWarps = 4,
  kThreads = kWarp * kWarps,
  kRows = 16 * kWarps, /* query rows per block */
  kKeys = 64,          /* keys per step */
  kPad = 8,            /* halves of padding per shared row (ldmatrix banks) */
  kChunk = 8,          /* halves per 16-byte copy */
  kMaxFrags = 128 / 8  /* n8 fragments of O at the largest head dimension */
};

typedef struct {
  const PbcAttention *at;
  MlirValue tid, b; /* thread; batch entry (null when unbatched) */
  MlirValue group;  /* a copy group's token (waits count groups) */
} Att;

static MlirValue cst(MlirOperation before, long long v) { return pbcGpuConstIndex(before, v); }
static MlirValue arith(MlirOperation before, const char *op, MlirValue a, long long b) {
  return pbcGpuArith(before, op, a, cst(before, b));
}

static MlirValue f32Const(MlirOperation before, const char *text) {
  MlirNamedAttribute value = pbcGpuNamed(before, "value", pbcGpuParseAttr(before, text));
  return pbcGpuOp(before, "arith.constant", 0, NULL,
                  mlirF32TypeGet(mlirOperationGetContext(before)), 1, &value);
}

static MlirValue unary(MlirOperation before, const char *op, MlirValue a, MlirType t) {
  return pbcGpuOp(before, op, 1, &a, t, 0, NULL);
}

static MlirValue select3(MlirOperation before, MlirValue c, MlirValue a, MlirValue b) {
  MlirValue ops[3] = {c, a, b};
  return pbcGpuOp(before, "arith.select", 3, ops, mlirValueGetType(a), 0, NULL);
}

/* `src`'s rows [origin, origin + 64) (all `cols` columns) into
 * shared[stage] by 16-byte cp.async copies, threads taking chunks
 * round-robin. Rows past `size` read its last row and, if zeroPast, put
 * zeros in shared memory. Appends the tokens; returns how many. */
static int copyRows(const Att *A, MlirOperation before, MlirValue src, MlirValue shared,
                    MlirValue stage, MlirValue origin, long long size, long long cols,
                    bool zeroPast, MlirValue *tokens) {
  int perRow = (int)(cols / kChunk), items = kKeys * perRow, n = 0;
  for (int p = 0; p * kThreads < items; ++p) {
    MlirValue item = arith(before, "addi", A->tid, (long long)p * kThreads);
    MlirValue r = arith(before, "divui", item, perRow);
    MlirValue c = arith(before, "muli", arith(before, "remui", item, perRow), kChunk);
    MlirValue row = pbcGpuArith(before, "addi", origin, r), in = {NULL};
    if (size % kKeys) {
      in = pbcGpuLessThan(before, row, cst(before, size));
      row = arith(before, "minui", row, size - 1);
    }
    MlirValue ops[9] = {shared, stage, r, c, src};
    int rank = 0;
    if (!mlirValueIsNull(A->b))
      ops[5 + rank++] = A->b;
    ops[5 + rank++] = row;
    ops[5 + rank++] = c;
    bool masked = zeroPast && !mlirValueIsNull(in);
    if (masked)
      ops[5 + rank] = select3(before, in, cst(before, kChunk), cst(before, 0));
    int32_t seg[5] = {1, 3, 1, rank, masked};
    MlirNamedAttribute attrs[3] = {
        pbcGpuNamed(before, "operandSegmentSizes",
                    mlirDenseI32ArrayGet(mlirOperationGetContext(before), 5, seg)),
        pbcGpuNamedIndex(before, "dstElements", kChunk), pbcGpuNamedUnit(before, "bypassL1")};
    tokens[n++] = pbcGpuOp(before, "nvgpu.device_async_copy", 5 + rank + masked, ops,
                           pbcGpuParseType(before, "!nvgpu.device.async.token"), 3, attrs);
  }
  return n;
}

static MlirValue group(MlirOperation before, int n, MlirValue *tokens) {
  return pbcGpuOp(before, "nvgpu.device_async_create_group", n, tokens,
                  mlirValueGetType(tokens[0]), 0, NULL);
}

static MlirValue sharedView(MlirOperation before, MlirValue raw, long long offset, int stages,
                            long long cols) {
  char type[128];
  snprintf(type, sizeof(type), "memref<%dx%dx%lldxf16, #gpu.address_space<workgroup>>", stages,
           kKeys, cols + kPad);
  MlirValue view[2] = {raw, cst(before, offset)};
  return pbcGpuOp(before, "memref.view", 2, view, pbcGpuParseType(before, type), 0, NULL);
}

static long long tileBytes(long long cols) { return 2LL * kKeys * (cols + kPad); }

long long pbcGpuAttentionSharedBytes(const PbcAttention *at) {
  return tileBytes(at->qk.k) * 3 + tileBytes(at->pv.n) * 2;
}

/* Max of a row's values across the 4 lanes of a quad. */
static MlirValue quadMax(MlirOperation before, MlirValue v) {
  for (int off = 1; off <= 2; off *= 2)
    v = pbcGpuArith(before, "maxnumf", v, pbcGpuShuffleXor(before, v, off, kWarp));
  return v;
}

void pbcGpuEmitAttentionMmaSync(const PbcAttention *at) {
  const PbcGemm *qk = &at->qk, *pv = &at->pv;
  Att A = {.at = at};
  MlirOperation here = pv->root;
  MlirContext ctx = mlirOperationGetContext(here);
  MlirType f32 = mlirF32TypeGet(ctx), f16 = mlirF16TypeGet(ctx);
  long long m = qk->m, n = qk->n, d = qk->k, dv = pv->n, nKB = (n + kKeys - 1) / kKeys;
  int fd = (int)(d / 16), fo = (int)(dv / 8);
  bool batched = qk->depth == 4;

  MlirValue c1 = cst(here, 1);
  MlirValue grid[3] = {cst(here, (m + kRows - 1) / kRows), c1, cst(here, qk->batch)};
  MlirValue block[3] = {cst(here, kThreads), c1, c1};
  MlirValue smem = pbcGpuConstI32(here, (int32_t)pbcGpuAttentionSharedBytes(at));
  MlirOperation launch = pbcGpuBuildLaunch(here, grid, block, smem);
  MlirBlock body = pbcGpuBody(launch, 0);
  MlirOperation end = mlirBlockGetTerminator(body);

  /* Shared memory: Q's rows, then K's and V's two stages. */
  MlirValue raw =
      pbcGpuOp(end, "gpu.dynamic_shared_memory", 0, NULL,
               pbcGpuParseType(end, "memref<?xi8, #gpu.address_space<workgroup>>"), 0, NULL);
  MlirValue qS = sharedView(end, raw, 0, 1, d);
  MlirValue kS = sharedView(end, raw, tileBytes(d), 2, d);
  MlirValue vS = sharedView(end, raw, tileBytes(d) * 3, 2, dv);

  A.tid = mlirBlockGetArgument(body, 3);
  A.b = batched ? mlirBlockGetArgument(body, 2) : (MlirValue){NULL};
  MlirValue i0 = arith(end, "muli", mlirBlockGetArgument(body, 0), kRows);
  MlirValue warp = arith(end, "divui", A.tid, kWarp), lane = arith(end, "remui", A.tid, kWarp);
  MlirValue gq = arith(end, "divui", lane, 4), tq = arith(end, "remui", lane, 4);
  MlirValue warpRow = arith(end, "muli", warp, 16);
  /* This lane's rows in the block's: warpRow + gq (+ 8). */
  MlirValue rowBase = pbcGpuArith(end, "addi", i0, pbcGpuArith(end, "addi", warpRow, gq));
  MlirValue lane16 = arith(end, "remui", lane, 16),
            half8 = arith(end, "muli", arith(end, "divui", lane, 16), 8);
  MlirValue bNLane = pbcGpuArith(end, "addi", arith(end, "remui", lane, 8), half8),
            bKHalf = arith(end, "muli", arith(end, "remui", arith(end, "divui", lane, 8), 2), 8);
  MlirValue zero = cst(end, 0);

  /* Prologue: Q and the first K and V block in one copy group. */
  MlirValue tokens[64];
  int nt = copyRows(&A, end, qk->a.memref, qS, zero, i0, m, d, false, tokens);
  nt += copyRows(&A, end, qk->b.memref, kS, zero, zero, n, d, true, tokens + nt);
  nt += copyRows(&A, end, pv->b.memref, vS, zero, zero, n, dv, true, tokens + nt);
  A.group = group(end, nt, tokens);
  pbcGpuAsyncWait(end, A.group, 0);
  pbcGpuOp(end, "gpu.barrier", 0, NULL, (MlirType){NULL}, 0, NULL);
  MlirValue qF[8];
  for (int kk = 0; kk < fd; ++kk)
    qF[kk] = pbcGpuLdmatrix(end, qS, zero, pbcGpuArith(end, "addi", warpRow, lane16),
                            arith(end, "addi", half8, 16 * kk), false);

  /* Carried: the running max and (per lane) sum of rows gq and gq + 8,
   * and O's fragments. */
  MlirValue negInf = f32Const(end, "0xFF800000 : f32"), zeroF = f32Const(end, "0.0 : f32");
  MlirValue init[4 + kMaxFrags];
  init[0] = init[1] = negInf;
  init[2] = init[3] = zeroF;
  for (int j = 0; j < fo; ++j)
    init[4 + j] = pbcGpuZeros(end, "vector<2x2xf32>");
  MlirOperation loop = pbcGpuBuildFor(end, zero, cst(end, nKB), c1, 4 + fo, init);
  MlirBlock lb = pbcGpuBody(loop, 0);
  MlirOperation y = mlirBlockGetTerminator(lb);
  MlirValue kb = mlirBlockGetArgument(lb, 0);
  MlirValue mOld[2] = {mlirBlockGetArgument(lb, 1), mlirBlockGetArgument(lb, 2)};
  MlirValue lOld[2] = {mlirBlockGetArgument(lb, 3), mlirBlockGetArgument(lb, 4)};
  MlirValue o[kMaxFrags];
  for (int j = 0; j < fo; ++j)
    o[j] = mlirBlockGetArgument(lb, 5 + j);

  /* Block kb has landed and every warp is done with block kb - 1, whose
   * stage the next block's copies take (the last block copies itself
   * again into the other stage: a uniform group count). */
  pbcGpuAsyncWait(y, A.group, 0);
  pbcGpuOp(y, "gpu.barrier", 0, NULL, (MlirType){NULL}, 0, NULL);
  MlirValue next = arith(y, "addi", kb, 1);
  MlirValue nextStage = arith(y, "remui", next, 2);
  MlirValue nextOrigin = arith(y, "muli", arith(y, "minui", next, nKB - 1), kKeys);
  nt = copyRows(&A, y, qk->b.memref, kS, nextStage, nextOrigin, n, d, true, tokens);
  nt += copyRows(&A, y, pv->b.memref, vS, nextStage, nextOrigin, n, dv, true, tokens + nt);
  group(y, nt, tokens);
  MlirValue cur = arith(y, "remui", kb, 2);

  /* S = Q Kᵀ for this warp's 16 rows and the block's 64 keys. */
  MlirNamedAttribute shape =
      pbcGpuNamed(y, "mmaShape", pbcGpuParseAttr(y, "[16 : i64, 8 : i64, 16 : i64]"));
  MlirType accType = pbcGpuParseType(y, "vector<2x2xf32>");
  MlirValue s[8];
  for (int ni = 0; ni < 8; ++ni)
    s[ni] = pbcGpuZeros(y, "vector<2x2xf32>");
  for (int kk = 0; kk < fd; ++kk)
    for (int np = 0; np < 4; ++np) {
      MlirValue b4 = pbcGpuLdmatrix(y, kS, cur, arith(y, "addi", bNLane, 16 * np),
                                    arith(y, "addi", bKHalf, 16 * kk), false);
      for (int h = 0; h < 2; ++h) {
        MlirValue ops[3] = {qF[kk], pbcGpuBHalf(y, b4, h), s[2 * np + h]};
        s[2 * np + h] = pbcGpuOp(y, "nvgpu.mma.sync", 3, ops, accType, 1, &shape);
      }
    }

  /* The score nests on each element, then the mask past N's end. */
  MlirValue colBase = pbcGpuArith(y, "addi", arith(y, "muli", kb, kKeys), arith(y, "muli", tq, 2));
  MlirValue x[8][2][2];
  for (int ni = 0; ni < 8; ++ni)
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 2; ++c) {
        MlirValue v = pbcGpuVectorExtract(y, s[ni], 2, (int64_t[]){r, c}, f32);
        MlirValue row = arith(y, "addi", rowBase, 8 * r);
        MlirValue col = arith(y, "addi", colBase, 8 * ni + c);
        MlirValue colIn = n % kKeys ? pbcGpuLessThan(y, col, cst(y, n)) : (MlirValue){NULL};
        if (at->nScore) {
          MlirValue idx[3];
          int k = 0;
          if (batched)
            idx[k++] = A.b;
          idx[k++] = m % kRows ? arith(y, "minui", row, m - 1) : row;
          idx[k++] = n % kKeys ? arith(y, "minui", col, n - 1) : col;
          for (int i = 0; i < at->nScore; ++i)
            v = pbcGpuInlinePointwise(y, at->scoreNests[i], at->scoreIn[i], v, idx, false);
        }
        x[ni][r][c] = mlirValueIsNull(colIn) ? v : select3(y, colIn, v, negInf);
      }

  /* The online softmax of rows gq (r = 0) and gq + 8 (r = 1). */
  MlirValue alpha[2], mNew[2], lNew[2];
  for (int r = 0; r < 2; ++r) {
    MlirValue mx = x[0][r][0];
    for (int ni = 0; ni < 8; ++ni)
      for (int c = ni == 0; c < 2; ++c)
        mx = pbcGpuArith(y, "maxnumf", mx, x[ni][r][c]);
    mNew[r] = pbcGpuArith(y, "maxnumf", mOld[r], quadMax(y, mx));
    MlirValue safe = select3(y, pbcGpuCmpF(y, 1 /* oeq */, mNew[r], negInf), zeroF, mNew[r]);
    alpha[r] = unary(y, "math.exp", pbcGpuArith(y, "subf", mOld[r], safe), f32);
    MlirValue sum = {NULL};
    for (int ni = 0; ni < 8; ++ni)
      for (int c = 0; c < 2; ++c) {
        x[ni][r][c] = unary(y, "math.exp", pbcGpuArith(y, "subf", x[ni][r][c], safe), f32);
        sum = mlirValueIsNull(sum) ? x[ni][r][c] : pbcGpuArith(y, "addf", sum, x[ni][r][c]);
      }
    lNew[r] = pbcGpuArith(y, "addf", pbcGpuArith(y, "mulf", lOld[r], alpha[r]), sum);
  }
  MlirValue scale[4] = {alpha[0], alpha[0], alpha[1], alpha[1]};
  MlirValue alphaV = pbcGpuOp(y, "vector.from_elements", 4, scale, accType, 0, NULL);
  for (int j = 0; j < fo; ++j)
    o[j] = pbcGpuArith(y, "mulf", o[j], alphaV);

  /* O += P V: P's A fragment for keys 16 kk .. 16 kk + 15 is the pair of
   * score fragments 2 kk, 2 kk + 1 (rows gq, gq + 8 each), in f16. */
  MlirType aType = pbcGpuParseType(y, "vector<4x2xf16>");
  for (int kk = 0; kk < 4; ++kk) {
    MlirValue e[8];
    for (int q = 0; q < 8; ++q)
      e[q] = unary(y, "arith.truncf", x[2 * kk + q / 4][(q / 2) % 2][q % 2], f16);
    MlirValue pA = pbcGpuOp(y, "vector.from_elements", 8, e, aType, 0, NULL);
    for (int np = 0; np < fo / 2; ++np) {
      MlirValue b4 = pbcGpuLdmatrix(y, vS, cur, arith(y, "addi", lane16, 16 * kk),
                                    arith(y, "addi", half8, 16 * np), true);
      for (int h = 0; h < 2; ++h) {
        MlirValue ops[3] = {pA, pbcGpuBHalf(y, b4, h), o[2 * np + h]};
        o[2 * np + h] = pbcGpuOp(y, "nvgpu.mma.sync", 3, ops, accType, 1, &shape);
      }
    }
  }
  MlirValue carried[4 + kMaxFrags] = {mNew[0], mNew[1], lNew[0], lNew[1]};
  for (int j = 0; j < fo; ++j)
    carried[4 + j] = o[j];
  for (int i = 0; i < 4 + fo; ++i)
    mlirOperationSetOperand(y, i, carried[i]);

  /* No copy in flight at exit; the quads' sums meet; O / l leaves through
   * the P V gemm's copy-out. */
  pbcGpuAsyncWait(end, A.group, 0);
  MlirValue one = f32Const(end, "1.0 : f32"), inv[2];
  for (int r = 0; r < 2; ++r) {
    MlirValue l = mlirOperationGetResult(loop, 2 + r);
    for (int off = 1; off <= 2; off *= 2)
      l = pbcGpuArith(end, "addf", l, pbcGpuShuffleXor(end, l, off, kWarp));
    inv[r] = pbcGpuArith(end, "divf", one, l);
  }
  for (int j = 0; j < fo; ++j) {
    MlirValue res = mlirOperationGetResult(loop, 4 + j);
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 2; ++c) {
        MlirValue row = arith(end, "addi", rowBase, 8 * r);
        MlirValue iv[kPbcMaxBand];
        int l0 = pv->depth - 3;
        if (batched)
          iv[0] = A.b;
        iv[l0] = row;
        iv[l0 + 1] = pbcGpuAffine1(end, zero, 2, tq, 8 * j + c);
        iv[l0 + 2] = zero;
        MlirOperation at = end;
        if (m % kRows)
          at = mlirBlockGetTerminator(pbcGpuBody(pbcGpuBuildIf(end, pbcGpuLessThan(end, row, cst(end, m))), 0));
        MlirValue v = pbcGpuVectorExtract(at, res, 2, (int64_t[]){r, c}, f32);
        v = pbcGpuArith(at, "mulf", v, inv[r]);
        pbcGpuCopyOut(at, pv, pbcGpuArith(at, "addf", pbcGpuAccInit(at, pv, iv), v), iv);
      }
  }

  pbcGpuTileFinish(pv);
  for (int i = at->nNests - 1; i >= 0; --i)
    mlirOperationDestroy(at->nests[i]);
  for (int i = 0; i < at->nBuffers; ++i)
    pbcEraseWithUsers(mlirOpResultGetOwner(at->buffers[i]));
}
