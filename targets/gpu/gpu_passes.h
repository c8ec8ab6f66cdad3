/*===- gpu_passes.h - Passes every GPU target plugin shares ---------------===*\
|* GPU-generic passes (S3 matrix units, S4 mapping, S5 device math),         *|
|* parameterized by options the pipelines fill from the chip (${key}).       *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_GPU_PASSES_H
#define PBC_GPU_PASSES_H

#include <stddef.h>

#include "pbc/plugin.h"

MlirPass pbcGpuCreateDeviceBuffersPass(const char *options, char *err, size_t errLen);
MlirPass pbcGpuCreateMapParallelPass(const char *options, char *err, size_t errLen);
MlirPass pbcGpuCreateMapMatrixUnitsPass(const char *options, char *err, size_t errLen);

/* Registers the passes above with the host (a plugin's register_passes). */
void pbcGpuRegisterPasses(const PbcHostApi *host, void *hostCtx);

#endif
