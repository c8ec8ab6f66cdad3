/* Attention as one mma.sync kernel (the paper's reduce-reduce fusion,
 * §4.4, in the form FlashAttention-2 runs it): the chain pbcGpuMatchAttention
 * found, softmax(f(Q Kᵀ)) V, with the score matrix never in memory.
 *
 * A thread block of 4 warps takes 64 or 128 query rows of one batch entry
 * (one or two m16 tiles per warp) and walks the keys 64 or 32 at a time
 * (planFor):
 *
 *   Q's rows -> shared memory once; each warp keeps its A fragments of Q
 *   (ldmatrix) in registers for the whole walk, or reads them per step
 *   where the registers are short;
 *   per key block kb (K and V tiles double-buffered in shared memory by
 *   16-byte cp.async copies, the next block's in flight while this one is
 *   multiplied):
 *     S = Q Kᵀ (8 m16n8 accumulators per m16 tile, K staged n-major);
 *     f (the score nests' bodies, scale and masks) on each element, keys
 *     past the end -> -inf;
 *     the running row max m and sum l (FlashAttention's online softmax):
 *       m' = max(m, rowmax S), alpha = exp(m - m'), P = exp(S - m'),
 *       l = l alpha + rowsum P, O = O alpha
 *     (a row's scores sit in the 4 lanes of one quad: the max meets by
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
  kMaxTiles = 2,       /* m16 tiles of query rows per warp */
  kPad = 8,            /* halves of padding per shared row (ldmatrix banks) */
  kChunk = 8,          /* halves per 16-byte copy */
  kMaxFrags = 128 / 8, /* n8 fragments of O at the largest head dimension */
  kRegisterBudget = 200 /* of the 255 a thread has, for what the loop carries */
};

typedef struct {
  MlirValue tid, b; /* thread; batch entry (null when unbatched) */
  MlirValue group;  /* a copy group's token (waits count groups) */
} Att;

static MlirValue cst(MlirOperation before, long long v) { return pbcGpuConstIndex(before, v); }
static MlirValue arith(MlirOperation before, const char *op, MlirValue a, long long b) {
  return pbcGpuArith(before, op, a, cst(before, b));
}

static MlirValue unary(MlirOperation before, const char *op, MlirValue a, MlirType t) {
  return pbcGpuOp(before, op, 1, &a, t, 0, NULL);
}

/* `src`'s rows [origin, origin + rows) (all `cols` columns) into
 * shared[stage] by 16-byte cp.async copies, threads taking chunks
 * round-robin. Rows past `size` read its last row and, if zeroPast, put
 * zeros in shared memory. Appends the tokens; returns how many. */
static int copyRows(const Att *A, MlirOperation before, MlirValue src, MlirValue shared,
                    MlirValue stage, MlirValue origin, int rows, long long size, long long cols,
                    bool zeroPast, MlirValue *tokens) {
  int perRow = (int)(cols / kChunk), items = rows * perRow, n = 0;
  for (int p = 0; p * kThreads < items; ++p) {
    MlirValue item = arith(before, "addi", A->tid, (long long)p * kThreads);
    if ((p + 1) * kThreads > items) /* the last chunk again: same data, same place */
      item = arith(before, "minui", item, items - 1);
    MlirValue r = arith(before, "divui", item, perRow);
    MlirValue c = arith(before, "muli", arith(before, "remui", item, perRow), kChunk);
    MlirValue row = pbcGpuArith(before, "addi", origin, r), in = {NULL};
    if (size % rows) {
      in = pbcGpuLessThan(before, row, cst(before, size));
      row = arith(before, "minui", row, size - 1);
    }
    MlirValue idx[3];
    int rank = 0;
    if (!mlirValueIsNull(A->b))
      idx[rank++] = A->b;
    idx[rank++] = row;
    idx[rank++] = c;
    tokens[n++] = pbcGpuAsyncCopy(before, shared, (MlirValue[]){stage, r, c}, src, rank, idx,
                                  kChunk, zeroPast ? in : (MlirValue){NULL});
  }
  return n;
}

static MlirValue sharedView(MlirOperation before, MlirValue raw, long long offset, int stages,
                            int rows, long long cols, bool bf16) {
  char type[128];
  snprintf(type, sizeof(type), "memref<%dx%dx%lldx%s, #gpu.address_space<workgroup>>", stages,
           rows, cols + kPad, bf16 ? "bf16" : "f16");
  MlirValue view[2] = {raw, cst(before, offset)};
  return pbcGpuOp(before, "memref.view", 2, view, pbcGpuParseType(before, type), 0, NULL);
}

static long long tileBytes(int rows, long long cols) { return 2LL * rows * (cols + kPad); }

/* How the kernel is shaped: m16 tiles of query rows per warp, keys per
 * step, and whether each warp holds Q's fragments in registers (or reads
 * them from shared memory per step). Two tiles make each K and V fragment
 * read from shared memory feed two products; they need the registers (a
 * thread carries 4 per m16n8 accumulator of O, holds 4 per k16 step of Q
 * if it keeps them, and 4 per 8 keys of scores, per tile) and blocks of
 * twice the rows that still cover the SMs. Else one tile, 64 keys, Q in
 * registers. */
typedef struct {
  int tiles, keys;
  bool qRegs;
} Plan;

static Plan planFor(const PbcAttention *at, long long sms) {
  long long o = 4 * (at->pv.n / 8), q = 4 * (at->qk.k / 16);
  long long rows = 16LL * kWarps * kMaxTiles;
  bool fill = (at->qk.m + rows - 1) / rows * at->qk.batch >= sms;
  if (fill && kMaxTiles * (o + q + 4 * 64 / 8) <= kRegisterBudget)
    return (Plan){kMaxTiles, 64, true};
  if (fill && kMaxTiles * (o + 4 * 32 / 8) <= kRegisterBudget)
    return (Plan){kMaxTiles, 32, false};
  return (Plan){1, 64, true};
}

long long pbcGpuAttentionSharedBytes(const PbcAttention *at, long long sms) {
  Plan p = planFor(at, sms);
  int rows = 16 * kWarps * p.tiles;
  return tileBytes(rows, at->qk.k) + 2 * tileBytes(p.keys, at->qk.k) +
         2 * tileBytes(p.keys, at->pv.n);
}

/* Max of a row's values across the 4 lanes of a quad. */
static MlirValue quadMax(MlirOperation before, MlirValue v) {
  for (int off = 1; off <= 2; off *= 2)
    v = pbcGpuArith(before, "maxnumf", v, pbcGpuShuffleXor(before, v, off, kWarp));
  return v;
}

void pbcGpuEmitAttentionMmaSync(const PbcAttention *at, long long sms) {
  const PbcGemm *qk = &at->qk, *pv = &at->pv;
  Att A = {0};
  MlirOperation here = pv->root;
  MlirContext ctx = mlirOperationGetContext(here);
  MlirType f32 = mlirF32TypeGet(ctx), accType = mlirVectorTypeGet(2, (int64_t[]){2, 2}, f32);
  /* Q, K, V and P: f16 or bf16 alike. */
  MlirType half = mlirShapedTypeGetElementType(mlirValueGetType(qk->a.memref));
  Plan plan = planFor(at, sms);
  int keys = plan.keys, fs = keys / 8; /* score fragments per tile */
  long long m = qk->m, n = qk->n, d = qk->k, dv = pv->n, nKB = (n + keys - 1) / keys;
  int fd = (int)(d / 16), fo = (int)(dv / 8), mt = plan.tiles, rows = 16 * kWarps * mt;
  int nr = 2 * mt; /* rows per lane: gq + 8 r + 16 t for tile t */
  bool batched = qk->depth == 4;

  MlirValue c1 = cst(here, 1);
  MlirValue grid[3] = {cst(here, (m + rows - 1) / rows), c1, cst(here, qk->batch)};
  MlirValue block[3] = {cst(here, kThreads), c1, c1};
  MlirValue smem = pbcGpuConstI32(here, (int32_t)pbcGpuAttentionSharedBytes(at, sms));
  MlirOperation launch = pbcGpuBuildLaunch(here, grid, block, smem);
  MlirBlock body = pbcGpuBody(launch, 0);
  MlirOperation end = mlirBlockGetTerminator(body);

  /* Shared memory: Q's rows, then K's and V's two stages. */
  MlirValue raw = pbcGpuDynamicSharedMemory(end);
  long long qBytes = tileBytes(rows, d), kBytes = 2 * tileBytes(keys, d);
  MlirValue qS = sharedView(end, raw, 0, 1, rows, d, qk->bf16);
  MlirValue kS = sharedView(end, raw, qBytes, 2, keys, d, qk->bf16);
  MlirValue vS = sharedView(end, raw, qBytes + kBytes, 2, keys, dv, qk->bf16);

  A.tid = mlirBlockGetArgument(body, 3);
  A.b = batched ? mlirBlockGetArgument(body, 2) : (MlirValue){NULL};
  MlirValue i0 = arith(end, "muli", mlirBlockGetArgument(body, 0), rows);
  MlirValue warp = arith(end, "divui", A.tid, kWarp), lane = arith(end, "remui", A.tid, kWarp);
  MlirValue gq = arith(end, "divui", lane, 4), tq = arith(end, "remui", lane, 4);
  MlirValue warpRow = arith(end, "muli", warp, 16 * mt);
  /* This lane's rows in the block's: warpRow + gq + 8 r (r < 2 mt). */
  MlirValue rowBase = pbcGpuArith(end, "addi", i0, pbcGpuArith(end, "addi", warpRow, gq));
  MlirValue lane16 = arith(end, "remui", lane, 16),
            half8 = arith(end, "muli", arith(end, "divui", lane, 16), 8);
  MlirValue bNLane = pbcGpuArith(end, "addi", arith(end, "remui", lane, 8), half8),
            bKHalf = arith(end, "muli", arith(end, "remui", arith(end, "divui", lane, 8), 2), 8);
  MlirValue zero = cst(end, 0);

  /* Prologue: Q and the first K and V block in one copy group. */
  MlirValue tokens[64];
  int nt = copyRows(&A, end, qk->a.memref, qS, zero, i0, rows, m, d, false, tokens);
  nt += copyRows(&A, end, at->k, kS, zero, zero, keys, n, d, true, tokens + nt);
  nt += copyRows(&A, end, pv->b.memref, vS, zero, zero, keys, n, dv, true, tokens + nt);
  A.group = pbcGpuAsyncGroup(end, nt, tokens);
  pbcGpuAsyncWait(end, A.group, 0);
  pbcGpuOp(end, "gpu.barrier", 0, NULL, (MlirType){NULL}, 0, NULL);
  /* Q's A fragments of tile t, k16 step kk (kept in registers, or read
   * again where the loop needs them). */
  MlirValue qF[kMaxTiles][8];
  MlirValue qRow[kMaxTiles], qCol[8];
  for (int t = 0; t < mt; ++t)
    qRow[t] = pbcGpuAffine1(end, warpRow, 1, lane16, 16 * t);
  for (int kk = 0; kk < fd; ++kk)
    qCol[kk] = arith(end, "addi", half8, 16 * kk);
  for (int t = 0; t < mt && plan.qRegs; ++t)
    for (int kk = 0; kk < fd; ++kk)
      qF[t][kk] = pbcGpuLdmatrix(end, qS, zero, qRow[t], qCol[kk], false);

  /* Carried: the running max and (per lane) sum of each of the lane's
   * rows, and O's fragments (tile-major). */
  MlirValue negInf = pbcGpuConstF32(end, "0xFF800000 : f32"), zeroF = pbcGpuConstF32(end, "0.0 : f32");
  int carriedN = 2 * nr + mt * fo;
  MlirValue init[2 * 2 * kMaxTiles + kMaxTiles * kMaxFrags];
  for (int r = 0; r < nr; ++r)
    init[r] = negInf, init[nr + r] = zeroF;
  for (int j = 0; j < mt * fo; ++j)
    init[2 * nr + j] = pbcGpuZeros(end, accType);
  MlirOperation loop = pbcGpuBuildFor(end, zero, cst(end, nKB), c1, carriedN, init);
  MlirBlock lb = pbcGpuBody(loop, 0);
  MlirOperation y = mlirBlockGetTerminator(lb);
  MlirValue kb = mlirBlockGetArgument(lb, 0);
  MlirValue mOld[2 * kMaxTiles], lOld[2 * kMaxTiles], o[kMaxTiles * kMaxFrags];
  for (int r = 0; r < nr; ++r)
    mOld[r] = mlirBlockGetArgument(lb, 1 + r), lOld[r] = mlirBlockGetArgument(lb, 1 + nr + r);
  for (int j = 0; j < mt * fo; ++j)
    o[j] = mlirBlockGetArgument(lb, 1 + 2 * nr + j);

  /* Block kb has landed and every warp is done with block kb - 1, whose
   * stage the next block's copies take (the last block copies itself
   * again into the other stage: a uniform group count). */
  pbcGpuAsyncWait(y, A.group, 0);
  pbcGpuOp(y, "gpu.barrier", 0, NULL, (MlirType){NULL}, 0, NULL);
  MlirValue next = arith(y, "addi", kb, 1);
  MlirValue nextStage = arith(y, "remui", next, 2);
  MlirValue nextOrigin = arith(y, "muli", arith(y, "minui", next, nKB - 1), keys);
  nt = copyRows(&A, y, at->k, kS, nextStage, nextOrigin, keys, n, d, true, tokens);
  nt += copyRows(&A, y, pv->b.memref, vS, nextStage, nextOrigin, keys, n, dv, true, tokens + nt);
  pbcGpuAsyncGroup(y, nt, tokens);
  MlirValue cur = arith(y, "remui", kb, 2);

  /* S = Q Kᵀ for this warp's rows and the block's keys; each K fragment
   * feeds every tile. */
  MlirValue s[kMaxTiles][8];
  for (int t = 0; t < mt; ++t)
    for (int ni = 0; ni < fs; ++ni)
      s[t][ni] = pbcGpuZeros(y, accType);
  for (int kk = 0; kk < fd; ++kk) {
    for (int t = 0; t < mt && !plan.qRegs; ++t)
      qF[t][kk] = pbcGpuLdmatrix(y, qS, zero, qRow[t], qCol[kk], false);
    for (int np = 0; np < fs / 2; ++np) {
      MlirValue b4 = pbcGpuLdmatrix(y, kS, cur, arith(y, "addi", bNLane, 16 * np),
                                    arith(y, "addi", bKHalf, 16 * kk), false);
      for (int h = 0; h < 2; ++h) {
        MlirValue frag = pbcGpuBHalf(y, b4, h);
        for (int t = 0; t < mt; ++t)
          s[t][2 * np + h] = pbcGpuMma(y, qF[t][kk], frag, s[t][2 * np + h]);
      }
    }
  }

  /* The score nests on each element, then the mask past N's end. Row q
   * of the lane (q = 2 t + r) is rowBase + 8 q. */
  MlirValue colBase = pbcGpuArith(y, "addi", arith(y, "muli", kb, keys), arith(y, "muli", tq, 2));
  MlirValue x[2 * kMaxTiles][8][2];
  for (int q = 0; q < nr; ++q)
    for (int ni = 0; ni < fs; ++ni)
      for (int c = 0; c < 2; ++c) {
        MlirValue v = pbcGpuVectorExtract(y, s[q / 2][ni], 2, (int64_t[]){q % 2, c}, f32);
        MlirValue row = arith(y, "addi", rowBase, 8 * q);
        MlirValue col = arith(y, "addi", colBase, 8 * ni + c);
        x[q][ni][c] = pbcGpuAttentionScore(y, at, v, A.b, row, m % rows ? m : 0, col,
                                           n % keys ? n : 0);
      }

  /* The online softmax of each of the lane's rows. */
  MlirValue alpha[2 * kMaxTiles], mNew[2 * kMaxTiles], lNew[2 * kMaxTiles];
  MlirValue log2e = pbcGpuConstF32(y, "1.44269504 : f32"), negLog2e = pbcGpuConstF32(y, "-1.44269504 : f32");
  for (int q = 0; q < nr; ++q) {
    MlirValue mx = x[q][0][0];
    for (int ni = 0; ni < fs; ++ni)
      for (int c = ni == 0; c < 2; ++c)
        mx = pbcGpuArith(y, "maxnumf", mx, x[q][ni][c]);
    mNew[q] = pbcGpuArith(y, "maxnumf", mOld[q], quadMax(y, mx));
    MlirValue safe = pbcGpuSelect(y, pbcGpuCmpF(y, 1 /* oeq */, mNew[q], negInf), zeroF, mNew[q]);
    alpha[q] = unary(y, "math.exp", pbcGpuArith(y, "subf", mOld[q], safe), f32);
    /* exp(x - m) as exp2(x log2e - m log2e): one fma per score before the
     * ex2 (math.exp would subtract, then scale). */
    MlirValue shift = pbcGpuArith(y, "mulf", safe, negLog2e);
    MlirValue sum = {NULL};
    for (int ni = 0; ni < fs; ++ni)
      for (int c = 0; c < 2; ++c) {
        MlirValue fma[3] = {x[q][ni][c], log2e, shift};
        x[q][ni][c] = unary(y, "math.exp2", pbcGpuOp(y, "math.fma", 3, fma, f32, 0, NULL), f32);
        sum = mlirValueIsNull(sum) ? x[q][ni][c] : pbcGpuArith(y, "addf", sum, x[q][ni][c]);
      }
    lNew[q] = pbcGpuArith(y, "addf", pbcGpuArith(y, "mulf", lOld[q], alpha[q]), sum);
  }
  for (int t = 0; t < mt; ++t) {
    MlirValue scale[4] = {alpha[2 * t], alpha[2 * t], alpha[2 * t + 1], alpha[2 * t + 1]};
    MlirValue alphaV = pbcGpuOp(y, "vector.from_elements", 4, scale, accType, 0, NULL);
    for (int j = 0; j < fo; ++j)
      o[t * fo + j] = pbcGpuArith(y, "mulf", o[t * fo + j], alphaV);
  }

  /* O += P V: P's A fragment for keys 16 kk .. 16 kk + 15 is the pair of
   * score fragments 2 kk, 2 kk + 1 (rows gq, gq + 8 each), narrowed; each V
   * fragment feeds every tile. */
  MlirType aType = mlirVectorTypeGet(2, (int64_t[]){4, 2}, half);
  for (int kk = 0; kk < keys / 16; ++kk) {
    MlirValue pA[kMaxTiles];
    for (int t = 0; t < mt; ++t) {
      MlirValue e[8];
      for (int q = 0; q < 8; ++q)
        e[q] = unary(y, "arith.truncf", x[2 * t + (q / 2) % 2][2 * kk + q / 4][q % 2], half);
      pA[t] = pbcGpuOp(y, "vector.from_elements", 8, e, aType, 0, NULL);
    }
    for (int np = 0; np < fo / 2; ++np) {
      MlirValue b4 = pbcGpuLdmatrix(y, vS, cur, arith(y, "addi", lane16, 16 * kk),
                                    arith(y, "addi", half8, 16 * np), true);
      for (int h = 0; h < 2; ++h) {
        MlirValue frag = pbcGpuBHalf(y, b4, h);
        for (int t = 0; t < mt; ++t) {
          o[t * fo + 2 * np + h] = pbcGpuMma(y, pA[t], frag, o[t * fo + 2 * np + h]);
        }
      }
    }
  }
  for (int q = 0; q < nr; ++q) {
    mlirOperationSetOperand(y, q, mNew[q]);
    mlirOperationSetOperand(y, nr + q, lNew[q]);
  }
  for (int j = 0; j < mt * fo; ++j)
    mlirOperationSetOperand(y, 2 * nr + j, o[j]);

  /* No copy in flight at exit; the quads' sums meet; O / l leaves through
   * the P V gemm's copy-out. */
  pbcGpuAsyncWait(end, A.group, 0);
  MlirValue one = pbcGpuConstF32(end, "1.0 : f32"), inv[2 * kMaxTiles];
  for (int q = 0; q < nr; ++q) {
    MlirValue l = mlirOperationGetResult(loop, nr + q);
    for (int off = 1; off <= 2; off *= 2)
      l = pbcGpuArith(end, "addf", l, pbcGpuShuffleXor(end, l, off, kWarp));
    inv[q] = pbcGpuArith(end, "divf", one, l);
  }
  for (int t = 0; t < mt; ++t)
    for (int j = 0; j < fo; ++j) {
      MlirValue res = mlirOperationGetResult(loop, 2 * nr + t * fo + j);
      for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 2; ++c) {
          int q = 2 * t + r;
          MlirValue row = arith(end, "addi", rowBase, 8 * q);
          MlirValue iv[kPbcMaxBand];
          int l0 = pv->depth - 3;
          if (batched)
            iv[0] = A.b;
          iv[l0] = row;
          iv[l0 + 1] = pbcGpuAffine1(end, zero, 2, tq, 8 * j + c);
          iv[l0 + 2] = zero;
          MlirOperation at = end;
          if (m % rows)
            at = mlirBlockGetTerminator(
                pbcGpuBody(pbcGpuBuildIf(end, pbcGpuLessThan(end, row, cst(end, m))), 0));
          MlirValue v = pbcGpuVectorExtract(at, res, 2, (int64_t[]){r, c}, f32);
          v = pbcGpuArith(at, "mulf", v, inv[q]);
          pbcGpuCopyOut(at, pv, pbcGpuArith(at, "addf", pbcGpuAccInit(at, pv, iv), v), iv);
        }
    }

  pbcGpuAttentionFinish(at);
}
