/*===- matrix_units.h - Matmul-kind nests on a GPU's matrix units ---------===*\
|* pbc-gpu-map-matrix-units matches the nest once (matrix_units.c) and       |*
|* hands it to the emitter of the chip's matrix-unit family:                 |*
|*   mma-sync      block tiles through shared memory, cp.async pipelining,  |*
|*                 ldmatrix and nvgpu.mma.sync m16n8k16, NVIDIA;             |*
|*   subgroup-mma  warp-wide opaque fragments (gpu.subgroup_mma_*), NVIDIA;  |*
|*   mfma, wmma    per-lane operand vectors in the layout the AMD            |*
|*                 instruction defines (amdgpu.mfma / amdgpu.wmma).          |*
|* Every emitter replaces the nest with one gpu.launch, the accumulators in  |*
|* registers across the k loop, stored once; subgroup-mma, mfma and wmma run |*
|* one warp (wave) per 16x16 tile of C (grid N/16 x M/16 x batch).           |*
\*===----------------------------------------------------------------------===*/
#ifndef PBC_GPU_MATRIX_UNITS_H
#define PBC_GPU_MATRIX_UNITS_H

#include <stdbool.h>

#include "pbc/affine_access.h"

enum { kPbcFrag = 16 };

enum { kPbcMaxBand = 8 };

/* What a loop of the nest is to the gemm. */
typedef enum { kPbcBatch, kPbcRowM, kPbcColN, kPbcRed } PbcGemmRole;

/* A contraction C[...] += ext?(A[...]) * ext?(B[...]) on f16, bf16 or i8
 * operands (both the same; not subgroup-mma's whole fragments): a
 * perfect band whose loops are batch (in A, B and C), row (A and C), column
 * (B and C) or reduction (A and B) loops. M, N, K and batch are the products
 * of their loops' trips; element m of the rows is the row loops' indices
 * linearized (outer first), and so on. A matmul has one loop per role; a
 * convolution (implicit GEMM) has rows n, oh, ow and reductions kh, kw, c,
 * with A read through affine subscripts (oh + kh, ...). */
typedef struct {
  MlirOperation band[kPbcMaxBand];
  int depth;
  PbcGemmRole role[kPbcMaxBand];
  long long trip[kPbcMaxBand];
  PbcAccess a, b, c;
  long long m, n, k, batch;
  /* plain: [batch] i, j, k, one loop each, and row-major buffers indexed by
   * them: what whole-fragment loads need. aT/bT: A read as [k][i], B as
   * [j][k] (column-major fragments). */
  bool plain, aT, bT;
  bool bf16; /* A and B are bf16 (else f16) */
  bool i8;   /* A and B are i8, C i32 */
  /* M, N or K is not a multiple of 16: only emitters that mask their
   * copies and stores (mma-sync) take it. */
  bool partial;
  MlirOperation root;
  /* Neighbours the kernel absorbs (pbcGpuMatchNeighbours), or null: the
   * nest before that stores `init` into all of C, and the pointwise nest
   * after that reads C. storeC: the kernel still stores C (read elsewhere
   * too, or no epilogue). */
  MlirOperation fill, epilogue;
  MlirValue init;
  bool storeC;
} PbcGemm;

/* Whether the nest rooted at `root` (classified matmul by S2) is a
 * contraction the matrix units take: f16 A and B with f16 or f32 C, bf16
 * A and B with bf16 or f32 C, or i8 A and B sign-extended into i32 C;
 * linear
 * subscripts, loops from 0 with step 1 (g->partial when M, N or K is not a
 * multiple of 16). */
bool pbcGpuMatchGemm(MlirOperation root, PbcGemm *g);

/* Finds the neighbours of a matched gemm its kernel can absorb
 * (gemm_epilogue.c): a fill of all of C with a loop-invariant value just
 * before it (the accumulators start from that value instead of loading C),
 * and a pointwise nest just after it that reads each element of C once at
 * its own index and writes another buffer (bias, activation, truncation
 * run on the accumulators in registers; C need not be stored at all when
 * nothing else reads it). Constants and allocations between the nests move
 * above the gemm. */
void pbcGpuMatchNeighbours(PbcGemm *g);
/* (The nests next to one past constants and allocations, which may sit
 * between nests a kernel fuses: pbcChainNeighbour, pbc/chain_match.h.) */
/* Whether `nest` stores one value from outside it into every element of
 * `memref` (its value into *value). */
bool pbcGpuMatchFill(MlirOperation nest, MlirValue memref, MlirValue *value);
/* Whether `nest` is pointwise over `input`: a perfect band over all of its
 * store's buffer whose body loads input's element at the band's indices
 * (other buffers at any linear subscripts), runs arith and math ops, and
 * stores one element at those indices (into *store) of a buffer that
 * neither input nor the others may alias. */
bool pbcGpuMatchPointwise(MlirOperation nest, MlirValue input, PbcAccess *store);
/* A pointwise nest's body for one element, before `before`: input's load
 * stands for x, the loop index of input's subscript d for idx[d]; other
 * loads become memref.loads there. Returns the value the body stores,
 * which is stored too if `store`. */
MlirValue pbcGpuInlinePointwise(MlirOperation before, MlirOperation nest, MlirValue input,
                                MlirValue x, const MlirValue idx[], bool store);
/* C's element at the band indices iv[] as the accumulator starts, in f32:
 * the fill's value, or C loaded. */
MlirValue pbcGpuAccInit(MlirOperation before, const PbcGemm *g, const MlirValue iv[]);
/* The copy-out of the f32 accumulator of C's element at iv[]: stored into
 * C (narrowed to C's type) if g->storeC, then the epilogue's body for that
 * element. */
void pbcGpuCopyOut(MlirOperation before, const PbcGemm *g, MlirValue acc, const MlirValue iv[]);
/* The same without the epilogue's store: the value it would store. */
MlirValue pbcGpuEpilogueValue(MlirOperation before, const PbcGemm *g, MlirValue acc,
                              const MlirValue iv[]);
/* Whether the absorbed epilogue alone stores (C is dead) into a buffer
 * whose element is C's at the same subscripts: then *out is C's access on
 * that buffer. */
bool pbcGpuEpilogueOutput(const PbcGemm *g, PbcAccess *out);

/* Whether subscript f is exactly loop's induction variable. */
bool pbcGpuSubscriptIsIv(const PbcLinearForm *f, MlirOperation loop);

/* The launch every emitter builds in place of the nest: a warp of `lanes`
 * threads per 16x16 tile of C. Ops go before `end` (the gpu.terminator). */
typedef struct {
  MlirOperation launch, end;
  MlirBlock body;
  MlirValue i0, j0, b, lane; /* tile origin in C, batch, thread x */
  bool batched;
} PbcTileLaunch;
PbcTileLaunch pbcGpuTileLaunch(const PbcGemm *g, int lanes);
/* scf.for k0 = 0 to K step kStep carrying the accumulator (from acc0),
 * before t->end; its body ends with scf.yield of the carried value. */
MlirOperation pbcGpuTileKLoop(const PbcTileLaunch *t, const PbcGemm *g, int kStep,
                              MlirValue acc0);
/* The subscripts of element (row, col) of a plain gemm's operand ([b,] row,
 * col, or [b,] col, row when stored transposed); returns their number. */
int pbcGpuTileIndices(const PbcTileLaunch *t, MlirValue row, MlirValue col, bool transposed,
                      MlirValue out[3]);
/* Erases the nest the launch replaces and the neighbours it absorbed (and
 * C's buffer, once nothing uses it). */
void pbcGpuTileFinish(const PbcGemm *g);

/* Element addressing for emitters that load per thread (gemm_index.c). */
/* base + factor * v + offset (index values; factor 0 drops v). */
MlirValue pbcGpuAffine1(MlirOperation before, MlirValue base, long long factor, MlirValue v,
                        long long offset);
/* The indices of the loops with `role` for their linearized index x
 * (innermost loop fastest), into iv[] at those loops' positions. */
void pbcGpuGemmDelinearize(MlirOperation before, const PbcGemm *g, PbcGemmRole role, MlirValue x,
                           MlirValue iv[]);
/* acc's subscripts evaluated with the band's loop indices iv[], into out[];
 * returns their number. */
/* A linear form evaluated with index values: every from[i] among its
 * values stands for to[i]. */
MlirValue pbcGpuEvalLinear(MlirOperation before, const PbcLinearForm *f, int n,
                           const MlirValue from[], const MlirValue to[]);
int pbcGpuGemmSubscripts(MlirOperation before, const PbcGemm *g, const PbcAccess *acc,
                         const MlirValue iv[], MlirValue out[]);
/* memref.load of acc at iv[]; memref.store of v into C at iv[]. */
MlirValue pbcGpuGemmLoad(MlirOperation before, const PbcGemm *g, const PbcAccess *acc,
                         const MlirValue iv[]);
void pbcGpuGemmStore(MlirOperation before, const PbcGemm *g, MlirValue v, const MlirValue iv[]);

/* The lane layout of a per-lane matrix instruction, 16x16xk. With lane l,
 * r = l % 16, q = l / 16 and e the element of a lane's vector:
 *   A[r][kPerQuad*q + e] and B[kPerQuad*q + e][r]   (e < abElems)
 *   C[cRowPerQuad*q + cRowPerElem*e][r]             (e < cElems)  */
typedef struct {
  const char *op; /* amdgpu.mfma, amdgpu.wmma */
  int lanes, k, abElems, kPerQuad, cElems, cRowPerQuad, cRowPerElem;
} PbcLaneLayout;

/* CDNA (wave 64): v_mfma_f32_16x16x16f16, _16x16x16bf16_1k and
 * v_mfma_i32_16x16x16i8 take 4 elements of A and B per lane;
 * v_mfma_i32_16x16x32_i8 (CDNA3, which has no k16 i8 form) takes 8.
 * RDNA3 (wave 32): v_wmma_f32_16x16x16_f16, _bf16 and
 * v_wmma_i32_16x16x16_iu8 (signed operands); the two half-waves hold the
 * same A and B. */
extern const PbcLaneLayout pbcMfma16x16x16, pbcMfma16x16x32, pbcWmma16x16x16;
/* D = A B + acc on one 16x16 tile: the layout's instruction on the lane's
 * operand vectors (acc's type is D's). */
MlirValue pbcGpuLaneMma(MlirOperation before, const PbcLaneLayout *L, MlirValue a, MlirValue b,
                        MlirValue acc);

/* The block tiling of the mma.sync emitter (mma_sync.c): BM x BN x BK block
 * tiles, warpsM x warpsN warps, `stages` shared-memory copies in flight of
 * stageBytes each. Chosen from the gemm, the chip's SM count and its shared
 * memory per block. */
typedef struct {
  int bm, bn, bk, warpsM, warpsN, stages;
  long long stageBytes;
  /* B's tile is staged n-major ([n][k]) because B's k, not its n, runs
   * contiguously in memory (an N x K operand: x Wᵀ, Q Kᵀ). */
  bool bByN;
} PbcBlockTiles;
PbcBlockTiles pbcGpuChooseBlockTiles(const PbcGemm *g, long long sms, long long sharedBytes);

/* Pieces of the mma.sync kernels (mma_sync.c): nvgpu.device_async_wait
 * until at most `pending` copy groups are in flight (nothing if group is
 * null); nvgpu.ldmatrix x4 of shared[stage][row][col] (.trans if
 * transpose); a zero constant of a vector type; rows 2h, 2h+1 of an x4 B
 * load (the fragment of one 8-column slice). */
void pbcGpuAsyncWait(MlirOperation before, MlirValue group, int pending);
/* A 16-byte cp.async of `elements` from src[srcIdx] into shared[dst]
 * (nvgpu.device_async_copy, L1 bypassed); where `in` (unless null) is
 * false, nothing is read and the destination gets zeros. Returns its
 * token. */
MlirValue pbcGpuAsyncCopy(MlirOperation before, MlirValue shared, const MlirValue dst[3],
                          MlirValue src, int rank, const MlirValue srcIdx[], int elements,
                          MlirValue in);
MlirValue pbcGpuLdmatrix(MlirOperation before, MlirValue shared, MlirValue stage, MlirValue row,
                         MlirValue col, bool transpose);
MlirValue pbcGpuZeros(MlirOperation before, MlirType vectorType);
/* nvgpu.device_async_create_group of n copy tokens; returns its token. */
MlirValue pbcGpuAsyncGroup(MlirOperation before, int n, const MlirValue *tokens);
MlirValue pbcGpuBHalf(MlirOperation before, MlirValue b4, int h);
/* D = A B + C on one fragment: m16n8k16 (A vector<4x2>, B vector<2x2> of
 * f16 or bf16; C vector<2x2xf32>) or m16n8k32 (vector<4x4xi8>,
 * vector<2x4xi8>; vector<2x2xi32>). */
MlirValue pbcGpuMma(MlirOperation before, MlirValue a, MlirValue b, MlirValue c);

/* Attention, softmax(f(Q Kᵀ)) V, as S2 leaves it (Q, K, V all f16 or all
 * bf16): the Q Kᵀ gemm (K read as [j][k], or a transposing copy of K just
 * before it) into an f32 or f16 score buffer S (after a fill with 0; the
 * softmax's buffers of S's type), pointwise nests on the scores
 * (f: scale, masks: `scoreNests`, in order), softmax along the key
 * dimension as its decomposition writes it (fills of the row max with -inf
 * or NaN and of the row sum with 0, the row max, exp(x - max), the row sum,
 * the division), its truncation to f16 (bf16) unless S has that type, and
 * the P V gemm (whose fill and
 * pointwise consumer the kernel absorbs as any gemm's). Both gemms plain
 * ([batch] i, j, k), K read as [j][k] (n-major), head dimensions multiples
 * of 16 up to 128. `nests` are what the kernel replaces besides the P V
 * gemm and its neighbours; `buffers` the intermediates, dead after it. */
enum { kPbcMaxScoreNests = 8, kPbcMaxChain = 24 };
typedef struct {
  PbcGemm qk, pv;
  /* K as the kernel reads it, [batch,] key, d: the Q Kᵀ gemm's B, or what
   * a transposing copy before it read (Kᵀ materialized as [batch,] d, key
   * is then part of the chain). */
  MlirValue k;
  MlirOperation scoreNests[kPbcMaxScoreNests];
  MlirValue scoreIn[kPbcMaxScoreNests]; /* the score buffer each one reads */
  int nScore;
  MlirOperation nests[kPbcMaxChain];
  int nNests;
  MlirValue buffers[kPbcMaxChain];
  int nBuffers;
} PbcAttention;

/* Whether the matmul nest `qkRoot` starts an attention chain (then *at
 * holds it, the P V gemm's neighbours matched). */
bool pbcGpuMatchAttention(MlirOperation qkRoot, PbcAttention *at);
/* Erases the chain a fused kernel replaced: the P V gemm and what it
 * absorbed, the other nests, the intermediate buffers. */
void pbcGpuAttentionFinish(const PbcAttention *at);
/* One score as the chain's score nests leave it, in f32, before `before`:
 * the product s (f32) narrowed to S's type where the program keeps scores
 * narrow, through the score nests at ([b,] row, col) (each clamped below
 * its limit unless that is 0: rows and keys past the ends read the last
 * one), and -inf for a key at or past colLimit. */
MlirValue pbcGpuAttentionScore(MlirOperation before, const PbcAttention *at, MlirValue s,
                               MlirValue b, MlirValue row, long long rowLimit, MlirValue col,
                               long long colLimit);
/* The chain as one mma.sync kernel (mma_attention.c) for a chip of `sms`
 * SMs; erases the chain. */
void pbcGpuEmitAttentionMmaSync(const PbcAttention *at, long long sms);
/* The dynamic shared memory that kernel takes. */
long long pbcGpuAttentionSharedBytes(const PbcAttention *at, long long sms);
/* The chain as one kernel of per-lane matrix instructions (AMD MFMA/WMMA,
 * lane_attention.c), a wave per 16 query rows; erases the chain. */
void pbcGpuEmitAttentionLanes(const PbcAttention *at, const PbcLaneLayout *layout);

/* Replace the nest (then erased) with its gpu.launch. */
void pbcGpuEmitMmaSync(const PbcGemm *g, long long sms, long long sharedBytes);
void pbcGpuEmitSubgroupMma(const PbcGemm *g);
void pbcGpuEmitLaneMma(const PbcGemm *g, const PbcLaneLayout *layout);

#endif
