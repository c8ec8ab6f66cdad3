/* The nvgpu target plugin: NVIDIA GPUs through NVVM, PTX and ptxas (cubin),
 * with host code calling the CUDA driver API through runtime/cuda_runtime.c.
 * Chip descriptions and S4/S5 pipelines are text files embedded at build
 * time; the GPU-generic passes come from targets/gpu. */

#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpu_passes.h"
#include "pbc/plugin.h"

extern const char pbc_nvgpu_s4[], pbc_nvgpu_s5[], pbc_nvgpu_chip_sm80[], pbc_nvgpu_chip_sm86[],
    pbc_nvgpu_chip_sm89[], pbc_nvgpu_chip_sm90[];
static const char *const kChips[] = {pbc_nvgpu_chip_sm80, pbc_nvgpu_chip_sm86,
                                     pbc_nvgpu_chip_sm89, pbc_nvgpu_chip_sm90, NULL};

/* The runtime library sits next to this plugin; its path is absolute. */
static char runtimePath[4096];
static const char *kRuntime[] = {runtimePath, NULL};

static const char *extensionPoint(const char *name) {
  /* Matmul-kind nests on f16 go to the tensor cores before any CPU-style
   * tiling would see them. */
  if (strcmp(name, "s3-before-tiling") == 0)
    return "[matrix-units] pbc-gpu-map-matrix-units\n";
  /* The whole parallel band (up to three loops) becomes one affine.parallel:
   * S4 maps it to blocks x threads. Every parallel loop counts on a GPU. */
  if (strcmp(name, "s3-before-parallelize") == 0)
    return "[parallelization] pbc-parallelize{min-trip=1 band=3 hoist=1}\n";
  return NULL;
}

static void registerPasses(const PbcHostApi *host, void *hostCtx) {
  pbcGpuRegisterPasses(host, hostCtx);
}

static PbcTargetPlugin kPlugin = {
    .struct_size = sizeof(PbcTargetPlugin),
    .api_version = PBC_PLUGIN_API_VERSION,
    .name = "nvgpu",
    .version = "0.1.0",
    .description = "NVIDIA GPUs sm_80..sm_90 (NVVM, PTX, cubin via ptxas; CUDA driver API)",
    .chips = kChips,
    .default_chip = "sm_80",
    .detect_native_chip = NULL,
    .register_passes = registerPasses,
    .extension_point = extensionPoint,
    .s4_pipeline = pbc_nvgpu_s4,
    .s5_pipeline = pbc_nvgpu_s5,
    .host_triple = "",
    .runtime_libraries = kRuntime,
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
  Dl_info info;
  if (!runtimePath[0] && dladdr((void *)pbc_target_plugin_query, &info) && info.dli_fname) {
    char copy[4096];
    snprintf(copy, sizeof(copy), "%s", info.dli_fname);
    snprintf(runtimePath, sizeof(runtimePath), "%s/libpbc_nvgpu_runtime.so", dirname(copy));
  }
  findCudaToolkit();
  return &kPlugin;
}
