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

/* Registers the passes above with the host (a plugin's register_passes),
 * under the names in their specs. */
void pbcGpuRegisterPasses(const PbcHostApi *host, void *hostCtx);

#endif
