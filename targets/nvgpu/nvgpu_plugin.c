/* The nvgpu target plugin: NVIDIA GPUs through NVVM, PTX and ptxas (cubin),
 * with host code calling the CUDA driver API (runtime/cuda_driver.c under
 * the shared mgpu runtime). Chip descriptions and the S5 pipeline are text
 * files embedded at build time; S4, the S3 extension points and the passes
 * come from targets/gpu. */

#include <stdlib.h>
#include <unistd.h>

#include "gpu_passes.h"
#include "gpu_plugin.h"
#include "pbc/plugin.h"
#include "pbc/plugin_files.h"

extern const char pbc_nvgpu_s5[], pbc_nvgpu_chip_sm80[], pbc_nvgpu_chip_sm86[],
    pbc_nvgpu_chip_sm89[], pbc_nvgpu_chip_sm90[];
static const char *const kChips[] = {pbc_nvgpu_chip_sm80, pbc_nvgpu_chip_sm86,
                                     pbc_nvgpu_chip_sm89, pbc_nvgpu_chip_sm90, NULL};

/* The runtime library sits next to this plugin; its path is absolute. */
static char runtimePath[4096];
static const char *kRuntime[] = {runtimePath, NULL};

static PbcTargetPlugin kPlugin = {
    .struct_size = sizeof(PbcTargetPlugin),
    .api_version = PBC_PLUGIN_API_VERSION,
    .name = "nvgpu",
    .version = "0.1.0",
    .description = "NVIDIA GPUs sm_80..sm_90 (NVVM, PTX, cubin via ptxas; CUDA driver API)",
    .chips = kChips,
    .default_chip = "sm_80",
    .s5_pipeline = pbc_nvgpu_s5,
    .runtime_libraries = kRuntime,
    PBC_GPU_PLUGIN_SHARED,
};

/* MLIR finds ptxas on PATH or under $CUDA_HOME/bin; the toolkit's usual
 * home is offered when neither is set. */
static void findCudaToolkit(void) {
  if (getenv("CUDA_HOME") || getenv("CUDA_PATH") || getenv("CUDA_ROOT"))
    return;
  if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0)
    setenv("CUDA_HOME", "/usr/local/cuda", 0);
}

PBC_PLUGIN_EXPORT const PbcTargetPlugin *pbc_target_plugin_query(uint32_t hostVersion) {
  (void)hostVersion;
  if (!runtimePath[0])
    pbcPluginFileBeside((const void *)pbc_target_plugin_query, "libpbc_nvgpu_runtime.so",
                        runtimePath, sizeof(runtimePath));
  findCudaToolkit();
  return &kPlugin;
}
