/* Registration of the GPU-generic passes (see gpu_passes.h). */
#include "gpu_passes.h"

void pbcGpuRegisterPasses(const PbcHostApi *host, void *hostCtx) {
  static const PbcCPassSpec *const kPasses[] = {&pbcGpuDeviceBuffersPass, &pbcGpuMapParallelPass,
                                                &pbcGpuMapMatrixUnitsPass};
  for (size_t i = 0; i < sizeof(kPasses) / sizeof(kPasses[0]); ++i)
    host->register_pass(hostCtx, kPasses[i]->name, kPasses[i]->anchorOp, kPasses[i]->summary,
                        kPasses[i]->create);
}
