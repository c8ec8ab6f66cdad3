/*===- gpu_passes.h - Passes every GPU target plugin shares ---------------===*\
|* GPU-generic passes (S3 matrix units, S4 mapping, S5 device math),         *|
|* parameterized by options the pipelines fill from the chip (${key}).       *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_GPU_PASSES_H
#define PBC_GPU_PASSES_H

#include "pbc/c_pass.h"
#include "pbc/plugin.h"

extern const PbcCPassSpec pbcGpuDeviceBuffersPass;
extern const PbcCPassSpec pbcGpuMapParallelPass;
extern const PbcCPassSpec pbcGpuMapMatrixUnitsPass;

/* pbc-gpu-map-parallel's mapping of row reductions (map_row_reductions.c):
 * whether a top-level scf.parallel reduces along contiguous rows in one
 * inner loop, and its rewrite to one warp of `warp` lanes per row in blocks
 * of `threads`. */
bool pbcGpuIsRowReduction(MlirOperation par);
bool pbcGpuMapRowReduction(MlirOperation par, long long threads, long long warp);

/* Registers the passes above with the host (a plugin's register_passes),
 * under the names in their specs. */
void pbcGpuRegisterPasses(const PbcHostApi *host, void *hostCtx);

#endif
