/* The block-tiled emitter (NVIDIA mma.sync, A.2 of the paper: m16n8k16 on
 * f16 or bf16 operands, the latter through nvvm.mma.sync; m16n8k32 on i8
 * into i32): a thread block computes a BM x BN tile of C with 2 x 2 warps
 * (or fewer for small tiles), each warp a WM x WN tile of 16 x 8
 * accumulators kept in registers across the whole k loop.
 *
 * Per k tile of BK, the block copies the A (BM x BK) and B (BK x BN) tiles
 * into shared memory, rows padded by 16 bytes so that ldmatrix's eight
 * 16-byte rows fall in distinct banks. The copies run `stages` tiles ahead
 * (multi-stage software pipelining): 16-byte cp.async copies
 * (nvgpu.device_async_copy) where 16 bytes of consecutive k (A) or n (B) are
 * contiguous and aligned in global memory, element copies through the
 * nest's own subscripts otherwise (transposed operands, odd channel counts).
 * A B whose k is contiguous instead (an N x K operand) is staged n-major
 * with 16-byte copies along k. Warps read fragments with ldmatrix (x4 for
 * A; for two B fragments x4.trans of a k-major tile, x4 of an n-major one)
 * and multiply with mma.sync. Any affine subscripts work
 * (gemm_index.c), so convolutions run as implicit GEMM.
 *
 * Loop of the kernel, per k tile kt (S = stages):
 *   wait until tile kt's copies landed (at most S-2 groups in flight);
 *   barrier (tile kt visible; every warp done with tile kt-1);
 *   start the copies of tile kt+S-1 into the stage tile kt-1 used;
 *   multiply tile kt.
 * Tiles past the end re-copy the last tile (clamped index), which keeps the
 * number of copy groups per iteration uniform and costs S-1 tile copies.
 *
 * Partial tiles (M, N or K not a multiple of the tile): the grid covers the
 * edge with a last, partial tile. Copies past an operand's edge read a
 * clamped (valid) address; past K's edge they put zeros in shared memory
 * (cp.async with no source elements, a select for element copies), so the
 * padding adds nothing to the products. The copy-out of C's elements past
 * M's or N's edge is skipped (scf.if). */
#include <stdio.h>

#include "gpu_build.h"
#include "matrix_units.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/memrefs.h"

enum { kWarp = 32 };

/* Element sizes: A's and B's bytes; elements per 16 bytes, which is a
 * cp.async copy, an ldmatrix row and the padding of a shared row (so
 * that ldmatrix's eight rows fall in distinct banks); k per mma.sync
 * (m16n8k16 for 16-bit operands, m16n8k32 for i8). */
static int elemBytes(const PbcGemm *g) { return g->i8 ? 1 : 2; }
static int chunkOf(const PbcGemm *g) { return 16 / elemBytes(g); }
static int kStepOf(const PbcGemm *g) { return g->i8 ? 32 : 16; }

/* A block-tile side for x indices: the largest of cap, cap/2, ..., 16 that
 * divides x; when x is not a multiple of 16, the smallest power of two
 * from 16 up to cap that covers it (the last tile is partial: masked). */
static int tileFor(long long x, int cap) {
  int t = cap;
  if (x % kPbcFrag == 0) {
    while (t > kPbcFrag && x % t)
      t /= 2;
    return t;
  }
  for (t = kPbcFrag; t < cap && t < x; t *= 2)
    ;
  return t;
}

static long long tilesOf(long long x, int tile) { return (x + tile - 1) / tile; }
static bool chunkable(const PbcGemm *g, const PbcAccess *acc, PbcGemmRole role, int chunk);

PbcBlockTiles pbcGpuChooseBlockTiles(const PbcGemm *g, long long sms, long long sharedBytes) {
  PbcBlockTiles t;
  t.bm = tileFor(g->m, 128);
  t.bn = tileFor(g->n, 128);
  /* Fewer blocks than SMs leaves SMs idle: split the larger side (not below
   * 32) until every SM has a block. */
  while (tilesOf(g->m, t.bm) * tilesOf(g->n, t.bn) * g->batch < sms && (t.bm > 32 || t.bn > 32)) {
    if (t.bn >= t.bm && t.bn > 32)
      t.bn /= 2;
    else
      t.bm /= 2;
  }
  int chunk = chunkOf(g), pad = chunk;
  if (g->i8)
    t.bk = g->k % 64 == 0 ? 64 : 32;
  else
    t.bk = g->k % 32 == 0 || g->k % 16 ? 32 : 16;
  t.warpsM = t.bm >= 32 ? 2 : 1;
  t.warpsN = t.bn >= 32 ? 2 : 1;
  /* i8 B fragments come from n-major tiles only (ldmatrix cannot
   * transpose 8-bit elements): element copies transpose a k-major B. */
  t.bByN = g->i8 || (!chunkable(g, &g->b, kPbcColN, chunk) && chunkable(g, &g->b, kPbcRed, chunk));
  t.stageBytes = (long long)elemBytes(g) * (t.bm * (t.bk + pad) + (t.bByN ? t.bn * (t.bk + pad)
                                                                          : t.bk * (t.bn + pad)));
  /* Half the SM's shared memory per block, so that two blocks share an SM
   * and one's barrier waits hide behind the other's work. */
  long long stages = sharedBytes / 2 / t.stageBytes;
  long long kTiles = tilesOf(g->k, t.bk);
  if (stages > kTiles) /* more stages than k tiles would only re-copy */
    stages = kTiles;
  t.stages = stages < 2 ? 2 : stages > 4 ? 4 : (int)stages;
  return t;
}

/* What the kernel builder keeps at hand. */
typedef struct {
  const PbcGemm *g;
  PbcBlockTiles t;
  MlirValue aS, bS;      /* shared tiles [stage][row][col] */
  MlirValue tid, i0, j0; /* thread, the block's origin in C */
  MlirValue ivBatch[kPbcMaxBand];
  MlirValue zero; /* what partial tiles hold past the edge (A's and B's type) */
  int threads;
  long long kTiles;
  bool asyncA, asyncB; /* 16-byte cp.async copies */
} Kernel;

static MlirValue cst(MlirOperation before, long long v) { return pbcGpuConstIndex(before, v); }
static MlirValue arith(MlirOperation before, const char *op, MlirValue a, long long b) {
  return pbcGpuArith(before, op, a, cst(before, b));
}

static long long roleSize(const PbcGemm *g, PbcGemmRole role) {
  return role == kPbcRowM ? g->m : role == kPbcColN ? g->n : g->k;
}

/* Partial tiles: an index x of `role` in tiles of `tile` (x from a multiple
 * of vec). When the role's size is not a multiple of the tile, x is
 * clamped into range (so that addresses stay valid) and, if `in` is given,
 * *in ANDs whether it was in range; else nothing changes. */
static void guard(MlirOperation before, const PbcGemm *g, PbcGemmRole role, int tile, int vec,
                  MlirValue *x, MlirValue *in) {
  long long size = roleSize(g, role);
  if (size % tile == 0)
    return;
  if (in) {
    MlirValue ok = pbcGpuLessThan(before, *x, cst(before, size));
    *in = mlirValueIsNull(*in) ? ok : pbcGpuArith(before, "andi", *in, ok);
  }
  *x = arith(before, "minui", *x, size - vec);
}

/* Whether `chunk` consecutive indices of `role`, from a multiple of
 * chunk, are contiguous, aligned elements of acc (16 bytes when chunk is
 * the elements per 16 bytes): the role's innermost loop runs in multiples
 * of chunk and is acc's last subscript, alone, on a row-major buffer whose
 * rows are multiples of chunk. */
static bool chunkable(const PbcGemm *g, const PbcAccess *acc, PbcGemmRole role, int chunk) {
  int inner = -1;
  for (int l = 0; l < g->depth; ++l)
    if (g->role[l] == role)
      inner = l;
  MlirType t = mlirValueGetType(acc->memref);
  if (inner < 0 || g->trip[inner] % chunk || !pbcMemrefHasIdentityLayout(t) ||
      !mlirShapedTypeHasStaticShape(t) || acc->rank < 1 ||
      mlirShapedTypeGetDimSize(t, acc->rank - 1) % chunk)
    return false;
  if (!pbcGpuSubscriptIsIv(&acc->subscripts[acc->rank - 1], g->band[inner]))
    return false;
  for (int d = 0; d + 1 < acc->rank; ++d)
    for (int k = 0; k < acc->subscripts[d].nTerms; ++k)
      if (acc->subscripts[d].values[k].ptr == pbcLoopIv(g->band[inner]).ptr)
        return false;
  return true;
}

/* One operand's tile into shared[stage]: rows x cols elements, rows of
 * `rowRole` from rowOrigin, columns of `colRole` from colOrigin. Threads
 * take items (16-byte chunks or elements) round-robin; a thread past the
 * last item repeats it (same data, same place), so no thread branches. */
static int copyTile(const Kernel *K, MlirOperation before, const PbcAccess *acc, MlirValue shared,
                    MlirValue stage, PbcGemmRole rowRole, MlirValue rowOrigin, int rows,
                    PbcGemmRole colRole, MlirValue colOrigin, int cols, bool async,
                    MlirValue *tokens) {
  int chunk = chunkOf(K->g), vec = async ? chunk : 1;
  int items = rows * cols / vec, perRow = cols / vec, n = 0;
  for (int p = 0; p * K->threads < items; ++p) {
    MlirValue item = arith(before, "addi", K->tid, (long long)p * K->threads);
    if ((p + 1) * K->threads > items)
      item = arith(before, "minui", item, items - 1);
    MlirValue r = arith(before, "divui", item, perRow);
    MlirValue c = arith(before, "muli", arith(before, "remui", item, perRow), vec);
    /* Past K's edge (a partial tile) the tile holds zeros, which add
     * nothing to the products; past M's or N's it holds copies of the last
     * row or column, which only reach elements of C the copy-out skips. */
    MlirValue row = pbcGpuArith(before, "addi", rowOrigin, r);
    MlirValue col = pbcGpuArith(before, "addi", colOrigin, c), in = {NULL};
    guard(before, K->g, rowRole, rows, 1, &row, rowRole == kPbcRed ? &in : NULL);
    guard(before, K->g, colRole, cols, vec, &col, colRole == kPbcRed ? &in : NULL);
    MlirValue iv[kPbcMaxBand];
    for (int l = 0; l < K->g->depth; ++l)
      iv[l] = K->ivBatch[l];
    pbcGpuGemmDelinearize(before, K->g, rowRole, row, iv);
    pbcGpuGemmDelinearize(before, K->g, colRole, col, iv);
    if (!async) {
      MlirValue x = pbcGpuGemmLoad(before, K->g, acc, iv);
      if (!mlirValueIsNull(in))
        x = pbcGpuSelect(before, in, x, K->zero);
      MlirValue st[5] = {x, shared, stage, r, c};
      pbcGpuOp(before, "memref.store", 5, st, (MlirType){NULL}, 0, NULL);
      continue;
    }
    MlirValue src[PBC_MAX_RANK];
    int rank = pbcGpuGemmSubscripts(before, K->g, acc, iv, src);
    tokens[n++] = pbcGpuAsyncCopy(before, shared, (MlirValue[]){stage, r, c}, acc->memref, rank,
                                  src, chunk, in);
  }
  return n;
}

MlirValue pbcGpuAsyncCopy(MlirOperation before, MlirValue shared, const MlirValue dst[3],
                          MlirValue src, int rank, const MlirValue srcIdx[], int elements,
                          MlirValue in) {
  MlirValue ops[6 + PBC_MAX_RANK] = {shared, dst[0], dst[1], dst[2], src};
  for (int d = 0; d < rank; ++d)
    ops[5 + d] = srcIdx[d];
  /* cp.async zero-fills what it does not copy: no source elements past
   * the edge. */
  bool masked = !mlirValueIsNull(in);
  if (masked)
    ops[5 + rank] = pbcGpuSelect(before, in, cst(before, elements), cst(before, 0));
  int32_t seg[5] = {1, 3, 1, rank, masked};
  MlirNamedAttribute attrs[3] = {
      pbcGpuNamed(before, "operandSegmentSizes",
                  mlirDenseI32ArrayGet(mlirOperationGetContext(before), 5, seg)),
      pbcGpuNamedIndex(before, "dstElements", elements), pbcGpuNamedUnit(before, "bypassL1")};
  return pbcGpuOp(before, "nvgpu.device_async_copy", 5 + rank + masked, ops,
                  pbcGpuParseType(before, "!nvgpu.device.async.token"), 3, attrs);
}

/* Both operands' k tile `kt` (clamped to the last) into `stage`; returns
 * the copy group's token, or null when no copy is asynchronous. */
static MlirValue copyStage(const Kernel *K, MlirOperation before, MlirValue kt, MlirValue stage) {
  const PbcBlockTiles *t = &K->t;
  kt = arith(before, "minui", kt, K->kTiles - 1);
  MlirValue k0 = arith(before, "muli", kt, t->bk);
  MlirValue tokens[64];
  int n = copyTile(K, before, &K->g->a, K->aS, stage, kPbcRowM, K->i0, t->bm, kPbcRed, k0, t->bk,
                   K->asyncA, tokens);
  if (t->bByN)
    n += copyTile(K, before, &K->g->b, K->bS, stage, kPbcColN, K->j0, t->bn, kPbcRed, k0, t->bk,
                  K->asyncB, tokens + n);
  else
    n += copyTile(K, before, &K->g->b, K->bS, stage, kPbcRed, k0, t->bk, kPbcColN, K->j0, t->bn,
                  K->asyncB, tokens + n);
  if (!n)
    return (MlirValue){NULL};
  return pbcGpuAsyncGroup(before, n, tokens);
}

MlirValue pbcGpuAsyncGroup(MlirOperation before, int n, const MlirValue *tokens) {
  return pbcGpuOp(before, "nvgpu.device_async_create_group", n, tokens,
                  mlirValueGetType(tokens[0]), 0, NULL);
}

void pbcGpuAsyncWait(MlirOperation before, MlirValue group, int pending) {
  if (mlirValueIsNull(group))
    return;
  MlirNamedAttribute n = pbcGpuNamedI32(before, "numGroups", pending);
  pbcGpuOp(before, "nvgpu.device_async_wait", 1, &group, (MlirType){NULL}, 1, &n);
}

MlirValue pbcGpuLdmatrix(MlirOperation before, MlirValue shared, MlirValue stage, MlirValue row,
                         MlirValue col, bool transpose) {
  MlirType elem = mlirShapedTypeGetElementType(mlirValueGetType(shared));
  /* Each lane gets 4 bytes of each of the 4 matrices. */
  int64_t perLane = mlirTypeIsAInteger(elem) ? 4 : 2;
  MlirValue ops[4] = {shared, stage, row, col};
  MlirNamedAttribute attrs[2] = {
      pbcGpuNamedI32(before, "numTiles", 4),
      pbcGpuNamed(before, "transpose",
                  mlirBoolAttrGet(mlirOperationGetContext(before), transpose))};
  return pbcGpuOp(before, "nvgpu.ldmatrix", 4, ops,
                  mlirVectorTypeGet(2, (int64_t[]){4, perLane}, elem), 2, attrs);
}

MlirValue pbcGpuZeros(MlirOperation before, MlirType vectorType) {
  MlirType elem = mlirShapedTypeGetElementType(vectorType);
  MlirNamedAttribute value = pbcGpuNamed(
      before, "value",
      mlirTypeIsAInteger(elem) ? mlirDenseElementsAttrInt32SplatGet(vectorType, 0)
                               : mlirDenseElementsAttrFloatSplatGet(vectorType, 0.f));
  return pbcGpuOp(before, "arith.constant", 0, NULL, vectorType, 1, &value);
}

/* Rows 2h, 2h+1 of an x4 B load: the fragment of one 8-column slice.
 * (Row by row: n-D vector.extract_strided_slice has no NVVM lowering.) */
MlirValue pbcGpuBHalf(MlirOperation before, MlirValue b4, int h) {
  MlirType elem = mlirShapedTypeGetElementType(mlirValueGetType(b4));
  int64_t perLane = mlirShapedTypeGetDimSize(mlirValueGetType(b4), 1);
  MlirValue v = pbcGpuZeros(before, mlirVectorTypeGet(2, (int64_t[]){2, perLane}, elem));
  for (int64_t r = 0; r < 2; ++r) {
    MlirValue row = pbcGpuVectorExtract(before, b4, 1, (int64_t[]){2 * h + r},
                                        mlirVectorTypeGet(1, (int64_t[]){perLane}, elem));
    v = pbcGpuVectorInsert(before, row, v, 1, &r);
  }
  return v;
}

/* A fragment's registers as PTX sees them: each row of two 16-bit halves
 * one i32 (vector.bitcast). */
static void packRows(MlirOperation before, MlirValue frag, int rows, MlirValue out[]) {
  MlirContext ctx = mlirOperationGetContext(before);
  MlirType elem = mlirShapedTypeGetElementType(mlirValueGetType(frag));
  MlirType i32 = mlirIntegerTypeGet(ctx, 32);
  for (int64_t r = 0; r < rows; ++r) {
    MlirValue row = pbcGpuVectorExtract(before, frag, 1, &r,
                                        mlirVectorTypeGet(1, (int64_t[]){2}, elem));
    MlirValue word = pbcGpuOp(before, "vector.bitcast", 1, &row,
                              mlirVectorTypeGet(1, (int64_t[]){1}, i32), 0, NULL);
    out[r] = pbcGpuVectorExtract(before, word, 1, (int64_t[]){0}, i32);
  }
}

MlirValue pbcGpuMma(MlirOperation before, MlirValue a, MlirValue b, MlirValue c) {
  MlirType accType = mlirValueGetType(c);
  MlirType elem = mlirShapedTypeGetElementType(mlirValueGetType(a));
  if (mlirTypeIsAF16(elem) || mlirTypeIsAInteger(elem)) {
    MlirValue ops[3] = {a, b, c};
    MlirNamedAttribute shape = pbcGpuNamed(
        before, "mmaShape",
        pbcGpuParseAttr(before, mlirTypeIsAF16(elem) ? "[16 : i64, 8 : i64, 16 : i64]"
                                                     : "[16 : i64, 8 : i64, 32 : i64]"));
    return pbcGpuOp(before, "nvgpu.mma.sync", 3, ops, accType, 1, &shape);
  }
  /* bf16: MLIR 22's nvgpu-to-nvvm conversion cannot deduce the PTX types
   * of a bf16 nvgpu.mma.sync, so the kernel states them on nvvm.mma.sync
   * (the same m16n8k16 instruction, .bf16 operands) over the registers. */
  MlirContext ctx = mlirOperationGetContext(before);
  MlirType f32 = mlirF32TypeGet(ctx);
  MlirValue ops[10];
  packRows(before, a, 4, ops);
  packRows(before, b, 2, ops + 4);
  for (int e = 0; e < 4; ++e)
    ops[6 + e] = pbcGpuVectorExtract(before, c, 2, (int64_t[]){e / 2, e % 2}, f32);
  MlirNamedAttribute attrs[6] = {
      pbcGpuNamed(before, "layoutA", pbcGpuParseAttr(before, "#nvvm.mma_layout<row>")),
      pbcGpuNamed(before, "layoutB", pbcGpuParseAttr(before, "#nvvm.mma_layout<col>")),
      pbcGpuNamed(before, "multiplicandAPtxType", pbcGpuParseAttr(before, "#nvvm.mma_type<bf16>")),
      pbcGpuNamed(before, "multiplicandBPtxType", pbcGpuParseAttr(before, "#nvvm.mma_type<bf16>")),
      pbcGpuNamed(before, "operandSegmentSizes",
                  mlirDenseI32ArrayGet(ctx, 3, (int32_t[]){4, 2, 4})),
      pbcGpuNamed(before, "shape", pbcGpuParseAttr(before, "#nvvm.shape<m = 16, n = 8, k = 16>"))};
  MlirType structType = pbcGpuParseType(before, "!llvm.struct<(f32, f32, f32, f32)>");
  MlirValue d = pbcGpuOp(before, "nvvm.mma.sync", 10, ops, structType, 6, attrs);
  MlirValue e[4];
  for (int i = 0; i < 4; ++i) {
    MlirNamedAttribute pos =
        pbcGpuNamed(before, "position", mlirDenseI64ArrayGet(ctx, 1, (int64_t[]){i}));
    e[i] = pbcGpuOp(before, "llvm.extractvalue", 1, &d, f32, 1, &pos);
  }
  return pbcGpuOp(before, "vector.from_elements", 4, e, accType, 0, NULL);
}

/* C's element (r, c) of accumulator (mi, ni) of this lane's warp tile:
 * row wRow + 16 mi + g + 8 r, column wCol + 8 ni + 2 t + c (the mma.sync
 * m16n8 accumulator layout; g = lane / 4, t = lane % 4), as band indices
 * iv[]. Returns whether the element lies inside C (null: always), with the
 * indices clamped into C when it may not. */
static MlirValue accElement(const Kernel *K, MlirOperation before, MlirValue wRow, MlirValue wCol,
                            MlirValue g, MlirValue t, int mi, int ni, int r, int c,
                            MlirValue iv[]) {
  for (int l = 0; l < K->g->depth; ++l)
    iv[l] = K->ivBatch[l];
  MlirValue row = pbcGpuAffine1(before, wRow, 1, g, 16 * mi + 8 * r);
  MlirValue col = pbcGpuAffine1(before, wCol, 2, t, 8 * ni + c), in = {NULL};
  guard(before, K->g, kPbcRowM, K->t.bm, 1, &row, &in);
  guard(before, K->g, kPbcColN, K->t.bn, 1, &col, &in);
  pbcGpuGemmDelinearize(before, K->g, kPbcRowM, row, iv);
  pbcGpuGemmDelinearize(before, K->g, kPbcColN, col, iv);
  return in;
}

/* Bytes of an element type the copy-out stages (f32, f16, bf16, i32, i8;
 * 0: none of those), and its spelling. */
static int typeBytes(MlirType t) {
  bool known = mlirTypeIsAF32(t) || mlirTypeIsAF16(t) || mlirTypeIsABF16(t) ||
               (mlirTypeIsAInteger(t) && (pbcElementBits(t) == 32 || pbcElementBits(t) == 8));
  return known ? pbcElementBits(t) / 8 : 0;
}

static const char *typeText(MlirType t) {
  if (mlirTypeIsAInteger(t))
    return pbcElementBits(t) == 8 ? "i8" : "i32";
  return mlirTypeIsAF32(t) ? "f32" : mlirTypeIsABF16(t) ? "bf16" : "f16";
}

/* The copy-out through shared memory: C's tile (or, with an absorbed
 * epilogue, what the epilogue stores for it) is stored there (the
 * accumulator layout gives each lane two adjacent columns only), then
 * copied to global memory in 16-byte vector stores, one row chunk per
 * thread. Applies when the destination is C, or the epilogue's output
 * indexed as C (C itself dead); C's tile is whole (no edge); the
 * destination's n runs contiguously in 16-byte aligned rows; every thread
 * copies the same number of chunks and the staged tile fits in the shared
 * memory the stages used. Returns the elements per chunk (and the
 * destination), or 0 for the element-wise copy-out. */
static int stagedCopyOutWidth(const Kernel *K, PbcAccess *dst) {
  const PbcGemm *g = K->g;
  const PbcBlockTiles *t = &K->t;
  if (mlirOperationIsNull(g->epilogue) ? !g->storeC : !pbcGpuEpilogueOutput(g, dst))
    return 0;
  if (mlirOperationIsNull(g->epilogue))
    *dst = g->c;
  int bytes = typeBytes(mlirShapedTypeGetElementType(mlirValueGetType(dst->memref)));
  if (!bytes)
    return 0;
  int vec = 16 / bytes;
  if (g->m % t->bm || g->n % t->bn || !chunkable(g, dst, kPbcColN, vec) ||
      (long long)t->bm * t->bn / vec % K->threads ||
      (long long)t->bm * (t->bn + vec) * bytes > t->stages * t->stageBytes)
    return 0;
  return vec;
}

static void stagedCopyOut(const Kernel *K, MlirOperation end, MlirValue raw, MlirOperation loop,
                          int vec, const PbcAccess *dst, MlirValue wRow, MlirValue wCol,
                          MlirValue wRowIn, MlirValue wColIn, MlirValue gq, MlirValue tq, int fm,
                          int fn) {
  const PbcGemm *g = K->g;
  const PbcBlockTiles *t = &K->t;
  MlirType elem = mlirShapedTypeGetElementType(mlirValueGetType(dst->memref));
  MlirType accElem = mlirShapedTypeGetElementType(mlirValueGetType(mlirOperationGetResult(loop, 0)));
  const char *elemText = typeText(elem);
  char type[160];
  /* Rows padded by one chunk: still 16-byte aligned, and lanes g = 0..7
   * of a fragment start in different banks. */
  snprintf(type, sizeof(type), "memref<%dx%dx%s, #gpu.address_space<workgroup>>", t->bm,
           t->bn + vec, elemText);
  /* Every warp is past its last read of the stages before they are reused. */
  pbcGpuOp(end, "gpu.barrier", 0, NULL, (MlirType){NULL}, 0, NULL);
  MlirValue view[2] = {raw, cst(end, 0)};
  MlirValue tile = pbcGpuOp(end, "memref.view", 2, view, pbcGpuParseType(end, type), 0, NULL);
  for (int mi = 0; mi < fm; ++mi)
    for (int ni = 0; ni < fn; ++ni) {
      MlirValue res = mlirOperationGetResult(loop, mi * fn + ni);
      for (int e = 0; e < 4; ++e) {
        MlirValue x = pbcGpuVectorExtract(end, res, 2, (int64_t[]){e / 2, e % 2}, accElem);
        if (mlirOperationIsNull(g->epilogue)) {
          if (!mlirTypeEqual(elem, accElem))
            x = pbcGpuOp(end, "arith.truncf", 1, &x, elem, 0, NULL);
        } else { /* C is dead: only the epilogue's value is stored */
          MlirValue iv[kPbcMaxBand];
          accElement(K, end, wRow, wCol, gq, tq, mi, ni, e / 2, e % 2, iv);
          x = pbcGpuEpilogueValue(end, g, x, iv);
        }
        MlirValue st[4] = {x, tile, pbcGpuAffine1(end, wRowIn, 1, gq, 16 * mi + 8 * (e / 2)),
                           pbcGpuAffine1(end, wColIn, 2, tq, 8 * ni + e % 2)};
        pbcGpuOp(end, "memref.store", 4, st, (MlirType){NULL}, 0, NULL);
      }
    }
  pbcGpuOp(end, "gpu.barrier", 0, NULL, (MlirType){NULL}, 0, NULL);
  int perRow = t->bn / vec, items = t->bm * perRow;
  snprintf(type, sizeof(type), "vector<%dx%s>", vec, elemText);
  MlirType vecType = pbcGpuParseType(end, type);
  MlirNamedAttribute align = pbcGpuNamed(
      end, "alignment", mlirIntegerAttrGet(mlirIntegerTypeGet(mlirOperationGetContext(end), 64), 16));
  for (int p = 0; p * K->threads < items; ++p) {
    MlirValue item = arith(end, "addi", K->tid, (long long)p * K->threads);
    MlirValue r = arith(end, "divui", item, perRow);
    MlirValue c = arith(end, "muli", arith(end, "remui", item, perRow), vec);
    MlirValue ld[3] = {tile, r, c};
    MlirValue v = pbcGpuOp(end, "vector.load", 3, ld, vecType, 1, &align);
    MlirValue iv[kPbcMaxBand];
    for (int l = 0; l < g->depth; ++l)
      iv[l] = K->ivBatch[l];
    pbcGpuGemmDelinearize(end, g, kPbcRowM, pbcGpuArith(end, "addi", K->i0, r), iv);
    pbcGpuGemmDelinearize(end, g, kPbcColN, pbcGpuArith(end, "addi", K->j0, c), iv);
    MlirValue ops[2 + PBC_MAX_RANK] = {v, dst->memref};
    int rank = pbcGpuGemmSubscripts(end, g, dst, iv, ops + 2);
    pbcGpuOp(end, "vector.store", 2 + rank, ops, (MlirType){NULL}, 1, &align);
  }
}

void pbcGpuEmitMmaSync(const PbcGemm *g, long long sms, long long sharedBytes) {
  Kernel K = {.g = g, .t = pbcGpuChooseBlockTiles(g, sms, sharedBytes)};
  const PbcBlockTiles *t = &K.t;
  MlirOperation at = g->root;
  MlirContext ctx = mlirOperationGetContext(at);
  K.threads = kWarp * t->warpsM * t->warpsN;
  K.kTiles = tilesOf(g->k, t->bk);
  int chunk = chunkOf(g), pad = chunk, kStep = kStepOf(g);
  K.asyncA = chunkable(g, &g->a, kPbcRed, chunk);
  K.asyncB = t->bByN ? chunkable(g, &g->b, kPbcRed, chunk) : chunkable(g, &g->b, kPbcColN, chunk);
  int wm = t->bm / t->warpsM, wn = t->bn / t->warpsN, fm = wm / 16, fn = wn / 8;
  /* The accumulators: f32, or i32 for i8 operands. */
  MlirType accElem = g->i8 ? mlirIntegerTypeGet(ctx, 32) : mlirF32TypeGet(ctx);

  MlirValue c1 = cst(at, 1);
  MlirValue grid[3] = {cst(at, tilesOf(g->n, t->bn)), cst(at, tilesOf(g->m, t->bm)),
                       cst(at, g->batch)};
  MlirValue block[3] = {cst(at, K.threads), c1, c1};
  long long aBytes = (long long)elemBytes(g) * t->stages * t->bm * (t->bk + pad);
  MlirValue smem = pbcGpuConstI32(at, (int32_t)(t->stages * t->stageBytes));
  MlirOperation launch = pbcGpuBuildLaunch(at, grid, block, smem);
  MlirBlock body = pbcGpuBody(launch, 0);
  MlirOperation end = mlirBlockGetTerminator(body);

  /* Shared memory: the A stages, then the B stages, in one dynamic buffer
   * (16-byte aligned, as cp.async and ldmatrix need). */
  MlirValue raw = pbcGpuDynamicSharedMemory(end);
  char type[128];
  MlirType abType = mlirShapedTypeGetElementType(mlirValueGetType(g->a.memref));
  const char *ab = typeText(abType);
  snprintf(type, sizeof(type), "memref<%dx%dx%dx%s, #gpu.address_space<workgroup>>", t->stages,
           t->bm, t->bk + pad, ab);
  MlirValue view[2] = {raw, cst(end, 0)};
  K.aS = pbcGpuOp(end, "memref.view", 2, view, pbcGpuParseType(end, type), 0, NULL);
  snprintf(type, sizeof(type), "memref<%dx%dx%dx%s, #gpu.address_space<workgroup>>", t->stages,
           t->bByN ? t->bn : t->bk, t->bByN ? t->bk + pad : t->bn + pad, ab);
  view[1] = cst(end, aBytes);
  K.bS = pbcGpuOp(end, "memref.view", 2, view, pbcGpuParseType(end, type), 0, NULL);

  K.tid = mlirBlockGetArgument(body, 3);
  MlirNamedAttribute zero = pbcGpuNamed(
      end, "value", g->i8 ? mlirIntegerAttrGet(abType, 0) : mlirFloatAttrDoubleGet(ctx, abType, 0.0));
  K.zero = pbcGpuOp(end, "arith.constant", 0, NULL, abType, 1, &zero);
  K.j0 = arith(end, "muli", mlirBlockGetArgument(body, 0), t->bn);
  K.i0 = arith(end, "muli", mlirBlockGetArgument(body, 1), t->bm);
  pbcGpuGemmDelinearize(end, g, kPbcBatch, mlirBlockGetArgument(body, 2), K.ivBatch);
  MlirValue warp = arith(end, "divui", K.tid, kWarp), lane = arith(end, "remui", K.tid, kWarp);
  /* The warp's tile origin within the block and in C. */
  MlirValue wRowIn = arith(end, "muli", arith(end, "divui", warp, t->warpsN), wm);
  MlirValue wColIn = arith(end, "muli", arith(end, "remui", warp, t->warpsN), wn);
  MlirValue wRow = pbcGpuArith(end, "addi", K.i0, wRowIn);
  MlirValue wCol = pbcGpuArith(end, "addi", K.j0, wColIn);
  MlirValue gq = arith(end, "divui", lane, 4), tq = arith(end, "remui", lane, 4);

  /* Prologue: the first S-1 tiles in flight. */
  MlirValue group = {NULL};
  for (int s = 0; s + 1 < t->stages; ++s)
    group = copyStage(&K, end, cst(end, s), cst(end, s));

  /* Accumulators start from the fill's value or from C (widened). */
  MlirValue acc[256];
  for (int mi = 0; mi < fm; ++mi)
    for (int ni = 0; ni < fn; ++ni) {
      MlirValue v = pbcGpuZeros(end, mlirVectorTypeGet(2, (int64_t[]){2, 2}, accElem));
      for (int e = 0; e < 4; ++e) {
        MlirValue iv[kPbcMaxBand];
        accElement(&K, end, wRow, wCol, gq, tq, mi, ni, e / 2, e % 2, iv);
        v = pbcGpuVectorInsert(end, pbcGpuAccInit(end, g, iv), v, 2, (int64_t[]){e / 2, e % 2});
      }
      acc[mi * fn + ni] = v;
    }

  MlirOperation loop = pbcGpuBuildFor(end, cst(end, 0), cst(end, K.kTiles), c1, fm * fn, acc);
  MlirBlock lb = pbcGpuBody(loop, 0);
  MlirOperation yield = mlirBlockGetTerminator(lb);
  MlirValue kt = mlirBlockGetArgument(lb, 0);
  pbcGpuAsyncWait(yield, group, t->stages - 2);
  pbcGpuOp(yield, "gpu.barrier", 0, NULL, (MlirType){NULL}, 0, NULL);
  MlirValue ahead = arith(yield, "addi", kt, t->stages - 1);
  copyStage(&K, yield, ahead, arith(yield, "remui", ahead, t->stages));
  MlirValue cur = arith(yield, "remui", kt, t->stages);
  /* In 16-byte units along k (8 halves, 16 bytes of i8): lanes 16-31 of
   * an A load and odd matrices of an n-major B load take the second. */
  MlirValue lane16 = arith(yield, "remui", lane, 16),
            half8 = arith(yield, "muli", arith(yield, "divui", lane, 16), 8);
  MlirValue kHalf16 = arith(yield, "muli", arith(yield, "divui", lane, 16), chunk);
  MlirValue bNLane = pbcGpuArith(yield, "addi", arith(yield, "remui", lane, 8), half8),
            bKHalf =
                arith(yield, "muli", arith(yield, "remui", arith(yield, "divui", lane, 8), 2), chunk);
  MlirValue next[256];
  for (int i = 0; i < fm * fn; ++i)
    next[i] = mlirBlockGetArgument(lb, 1 + i);
  for (int kk = 0; kk < t->bk / kStep; ++kk) {
    /* A: lanes 0-15 address rows 0-15 at k 0, lanes 16-31 at the second
     * 16 bytes. B (x4, transposed): rows k 0-15, columns n and n + 8. */
    MlirValue aF[8], bF[16];
    MlirValue kCol = arith(yield, "addi", kHalf16, kStep * kk);
    for (int mi = 0; mi < fm; ++mi)
      aF[mi] =
          pbcGpuLdmatrix(yield, K.aS, cur, pbcGpuAffine1(yield, wRowIn, 1, lane16, 16 * mi), kCol, false);
    MlirValue kRow = arith(yield, "addi", lane16, kStep * kk);
    MlirValue kHalf = arith(yield, "addi", bKHalf, kStep * kk);
    for (int np = 0; np < fn / 2; ++np) {
      /* n-major B (not transposed): lanes 8i..8i+7 address matrix i's rows
       * n (+8 for i >= 2) at k (+16 bytes for odd i), so registers 0, 1
       * hold the first 8 columns' fragment and 2, 3 the next, as with
       * .trans. */
      MlirValue b4 =
          t->bByN ? pbcGpuLdmatrix(yield, K.bS, cur, pbcGpuAffine1(yield, wColIn, 1, bNLane, 16 * np),
                             kHalf, false)
                  : pbcGpuLdmatrix(yield, K.bS, cur, kRow,
                             pbcGpuAffine1(yield, wColIn, 1, half8, 16 * np), true);
      bF[2 * np] = pbcGpuBHalf(yield, b4, 0);
      bF[2 * np + 1] = pbcGpuBHalf(yield, b4, 1);
    }
    for (int mi = 0; mi < fm; ++mi)
      for (int ni = 0; ni < fn; ++ni)
        next[mi * fn + ni] = pbcGpuMma(yield, aF[mi], bF[ni], next[mi * fn + ni]);
  }
  for (int i = 0; i < fm * fn; ++i)
    mlirOperationSetOperand(yield, i, next[i]);

  /* No copy may be in flight when the block exits; then the copy-out, once
   * per element of C (the absorbed epilogue included). */
  pbcGpuAsyncWait(end, group, 0);
  PbcAccess dst;
  int vec = stagedCopyOutWidth(&K, &dst);
  if (vec) {
    stagedCopyOut(&K, end, raw, loop, vec, &dst, wRow, wCol, wRowIn, wColIn, gq, tq, fm, fn);
    pbcGpuTileFinish(g);
    return;
  }
  for (int mi = 0; mi < fm; ++mi)
    for (int ni = 0; ni < fn; ++ni) {
      MlirValue res = mlirOperationGetResult(loop, mi * fn + ni);
      for (int e = 0; e < 4; ++e) {
        MlirValue x = pbcGpuVectorExtract(end, res, 2, (int64_t[]){e / 2, e % 2}, accElem);
        MlirValue iv[kPbcMaxBand];
        MlirValue in = accElement(&K, end, wRow, wCol, gq, tq, mi, ni, e / 2, e % 2, iv);
        MlirOperation at = end;
        if (!mlirValueIsNull(in)) /* past C's edge in a partial tile */
          at = mlirBlockGetTerminator(pbcGpuBody(pbcGpuBuildIf(end, in), 0));
        pbcGpuCopyOut(at, g, x, iv);
      }
    }
  pbcGpuTileFinish(g);
}
