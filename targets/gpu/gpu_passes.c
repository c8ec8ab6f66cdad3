/* Registration of the GPU-generic passes (see gpu_passes.h). */
#include "gpu_passes.h"

void pbcGpuRegisterPasses(const PbcHostApi *host, void *hostCtx) {
  host->register_pass(hostCtx, "pbc-gpu-device-buffers", "func.func",
                      "Entry-point buffers mirrored in device memory", pbcGpuCreateDeviceBuffersPass);
  host->register_pass(hostCtx, "pbc-gpu-map-parallel", "func.func",
                      "Top-level parallel loops -> thread blocks x threads",
                      pbcGpuCreateMapParallelPass);
  host->register_pass(hostCtx, "pbc-gpu-map-matrix-units", "func.func",
                      "f16 matmul-kind nests -> warp-level matrix-unit ops",
                      pbcGpuCreateMapMatrixUnitsPass);
}
