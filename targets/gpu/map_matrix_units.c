/* pbc-gpu-map-matrix-units{unit=mma-sync|subgroup-mma|mfma|wmma warp=N
 * sms=N shared=BYTES i8-k=16|32}: matmul-kind nests on f16, bf16 or i8
 * operands run on the GPU's matrix units. The matcher and the launch scaffolding are shared
 * (matrix_units.c); `unit`, from the chip's matrix-unit-mapping key, picks
 * the emitter:
 *   mma-sync      block tiles in shared memory, cp.async pipelining,
 *                 nvgpu.mma.sync m16n8k16 (NVIDIA; mma_sync.c); `sms` and
 *                 `shared` (the chip's SM count and shared memory per
 *                 block) size the tiles
 *   subgroup-mma  gpu.subgroup_mma_* (NVIDIA wmma; mma_subgroup.c)
 *   mfma          amdgpu.mfma 16x16x16 f16/bf16/i8, or 16x16x32 i8 (CDNA,
 *                 wave 64; mma_lanes.c)
 *   wmma          amdgpu.wmma 16x16x16 f16/bf16/i8 (RDNA3, wave 32;
 *                 mma_lanes.c)
 * `i8-k`, from the chip's matrix-unit-i8-k key, is the k of its i8
 * instruction (CDNA3 has only 16x16x32; mma.sync's is m16n8k32).
 * `warp` and `i8-k` must be what the unit has: a chip that says otherwise
 * is an error, not a silently wrong kernel. Nests that do not qualify (f16
 * only for subgroup-mma; partial tiles except on mma-sync) are left to the
 * generic mapping (S4). */
#include <stdio.h>
#include <string.h>

#include "gpu_passes.h"
#include "matrix_units.h"
#include "pbc/c_pass.h"
#include "pbc/op_list.h"

typedef struct {
  const PbcLaneLayout *lanes; /* per-lane AMD units, else NVIDIA: */
  const PbcLaneLayout *lanesI8; /* the i8 form */
  bool mmaSync;               /* block tiles, else whole fragments */
  long long sms, shared;
} State;

/* Attention chains first: each becomes one kernel (mma-sync's block
 * tiles, or the per-lane units' waves), and the roots are collected again
 * after each, as the chain's second gemm is gone. */
static void fuseAttention(MlirOperation func, const State *st) {
  for (bool again = true; again;) {
    again = false;
    PbcOpList roots = {0};
    pbcRootNests(func, "matmul", &roots);
    for (int i = 0; i < roots.n && !again; ++i) {
      PbcAttention at;
      if (!pbcGpuMatchAttention(roots.ops[i], &at))
        continue;
      if (st->lanes) {
        pbcGpuEmitAttentionLanes(&at, st->lanes);
        again = true;
      } else if (pbcGpuAttentionSharedBytes(&at, st->sms) <= st->shared) {
        pbcGpuEmitAttentionMmaSync(&at, st->sms);
        again = true;
      }
    }
    pbcOpListDestroy(&roots);
  }
}

static bool run(MlirOperation func, void *state) {
  const State *st = state;
  if (st->mmaSync || st->lanes)
    fuseAttention(func, st);
  PbcOpList roots = {0};
  pbcRootNests(func, "matmul", &roots);
  for (int i = 0; i < roots.n; ++i) {
    PbcGemm g;
    /* Whole-fragment loads need plain row-major operands; the other
     * emitters take any affine subscripts (convolutions too). */
    bool wholeFragments = !st->lanes && !st->mmaSync;
    if (!pbcGpuMatchGemm(roots.ops[i], &g) || (wholeFragments && (!g.plain || g.bf16 || g.i8)) ||
        (g.partial && !st->mmaSync))
      continue;
    const PbcLaneLayout *lanes = g.i8 ? st->lanesI8 : st->lanes;
    if (lanes && g.k % lanes->k)
      continue;
    /* Per-element copy-out absorbs the fill and the pointwise consumer. */
    if (!wholeFragments)
      pbcGpuMatchNeighbours(&g);
    if (lanes)
      pbcGpuEmitLaneMma(&g, lanes);
    else if (st->mmaSync)
      pbcGpuEmitMmaSync(&g, st->sms, st->shared);
    else
      pbcGpuEmitSubgroupMma(&g);
  }
  pbcOpListDestroy(&roots);
  return true;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcGpuMapMatrixUnitsPass = {
    "pbc-gpu-map-matrix-units",
    "func.func",
    "f16 matmul-kind nests -> matrix-unit kernels (mma-sync, subgroup-mma, mfma, wmma)",
    run,
    sizeof(State),
    createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  static const char *const known[] = {"unit", "warp", "sms", "shared", "i8-k", NULL};
  static const char *const counts[] = {"warp", "sms", "shared", "i8-k", NULL};
  if (!pbcPassOptionsCheckSomeCounts(options, known, counts, err, errLen))
    return (MlirPass){NULL};
  char unit[32] = "mma-sync";
  pbcPassOptionGet(options, "unit", unit, sizeof(unit));
  long long warp = pbcPassOptionInt(options, "warp", 32);
  /* Without i8-k: the unit's first i8 form. */
  long long i8k = pbcPassOptionInt(options, "i8-k", strcmp(unit, "mma-sync") == 0 ? 32 : 16);
  State st = {.sms = pbcPassOptionInt(options, "sms", 108),
              .shared = pbcPassOptionInt(options, "shared", 48 * 1024)};
  int need = 32, needI8k = 32;
  if (st.sms < 1 || st.shared < 48 * 1024) {
    snprintf(err, errLen, "sms=%lld shared=%lld: need at least 1 SM and 48 KiB of shared memory",
             st.sms, st.shared);
    return (MlirPass){NULL};
  }
  if (strcmp(unit, "mma-sync") == 0)
    st.mmaSync = true;
  else if (strcmp(unit, "mfma") == 0) {
    st.lanes = &pbcMfma16x16x16, need = st.lanes->lanes;
    st.lanesI8 = i8k == 32 ? &pbcMfma16x16x32 : &pbcMfma16x16x16, needI8k = st.lanesI8->k;
  } else if (strcmp(unit, "wmma") == 0)
    st.lanes = st.lanesI8 = &pbcWmma16x16x16, need = st.lanes->lanes, needI8k = 16;
  else if (strcmp(unit, "subgroup-mma") != 0) {
    snprintf(err, errLen, "unknown unit '%s' (expected mma-sync, subgroup-mma, mfma or wmma)",
             unit);
    return (MlirPass){NULL};
  }
  if (warp != need) {
    snprintf(err, errLen, "unit=%s needs warp=%d, got %lld", unit, need, warp);
    return (MlirPass){NULL};
  }
  /* subgroup-mma has no i8 form: any k will do. */
  if (i8k != needI8k && strcmp(unit, "subgroup-mma") != 0) {
    snprintf(err, errLen, "unit=%s has no i8 instruction with k=%lld", unit, i8k);
    return (MlirPass){NULL};
  }
  return pbcCPassCreate(&pbcGpuMapMatrixUnitsPass, &st);
}
