/* pbc-gpu-map-matrix-units{unit=subgroup-mma|mfma|wmma warp=N}: matmul-kind
 * nests on f16 operands run on the GPU's matrix units. The matcher and the
 * launch scaffolding are shared (matrix_units.c); `unit`, from the chip's
 * matrix-unit-mapping key, picks the emitter:
 *   subgroup-mma  gpu.subgroup_mma_* (NVIDIA wmma; mma_subgroup.c)
 *   mfma          amdgpu.mfma 16x16x16 f16 (CDNA, wave 64; mma_lanes.c)
 *   wmma          amdgpu.wmma 16x16x16 f16 (RDNA3, wave 32; mma_lanes.c)
 * `warp` must be the width the unit needs: a chip that says otherwise is an
 * error, not a silently wrong kernel. Nests that do not qualify are left to
 * the generic mapping (S4). */
#include <stdio.h>
#include <string.h>

#include "gpu_passes.h"
#include "matrix_units.h"
#include "pbc/c_pass.h"

typedef struct {
  const PbcLaneLayout *lanes; /* NULL: subgroup-mma */
} State;

static bool run(MlirOperation func, void *state) {
  const State *st = state;
  MlirOperation roots[1024];
  int n = pbcRootNests(func, "matmul", roots, 1024);
  for (int i = 0; i < n; ++i) {
    PbcGemm g;
    /* Whole-fragment loads need plain row-major operands; per-lane loads
     * take any affine subscripts (convolutions too). */
    if (!pbcGpuMatchGemm(roots[i], &g) || (!st->lanes && !g.plain))
      continue;
    if (st->lanes)
      pbcGpuEmitLaneMma(&g, st->lanes);
    else
      pbcGpuEmitSubgroupMma(&g);
  }
  return true;
}

static const PbcCPassSpec kSpec = {
    "pbc-gpu-map-matrix-units", "func.func",
    "f16 matmul-kind nests -> warp-level matrix-unit ops (subgroup-mma, mfma, wmma)", run,
    sizeof(State)};

MlirPass pbcGpuCreateMapMatrixUnitsPass(const char *options, char *err, size_t errLen) {
  static const char *const known[] = {"unit", "warp", NULL};
  if (!pbcPassOptionsCheck(options, known, err, errLen))
    return (MlirPass){NULL};
  char unit[32] = "subgroup-mma";
  pbcPassOptionGet(options, "unit", unit, sizeof(unit));
  long long warp = pbcPassOptionInt(options, "warp", 32);
  State st = {NULL};
  int need = 32;
  if (strcmp(unit, "mfma") == 0)
    st.lanes = &pbcMfma16x16x16F16, need = st.lanes->lanes;
  else if (strcmp(unit, "wmma") == 0)
    st.lanes = &pbcWmma16x16x16F16, need = st.lanes->lanes;
  else if (strcmp(unit, "subgroup-mma") != 0) {
    snprintf(err, errLen, "unknown unit '%s' (expected subgroup-mma, mfma or wmma)", unit);
    return (MlirPass){NULL};
  }
  if (warp != need) {
    snprintf(err, errLen, "unit=%s needs warp=%d, got %lld", unit, need, warp);
    return (MlirPass){NULL};
  }
  return pbcCPassCreate(&kSpec, &st);
}
