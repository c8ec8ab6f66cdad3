/* The cpu target plugin: multicore x86-64 via LLVM and OpenMP.
 * Everything the host interprets is data: chip descriptions and the S4/S5
 * pipelines are text files embedded at build time. */
#include <string.h>

#include "cpu_detect.h"
#include "pbc/plugin.h"
#include "pbc/plugin_files.h"

extern const char pbc_cpu_s4[], pbc_cpu_s5[], pbc_cpu_chip_v4[], pbc_cpu_chip_v3[];

static const char *const kChips[] = {pbc_cpu_chip_v4, pbc_cpu_chip_v3, NULL};

/* pbc's cpu runtime (the buffer allocator, bf16 conversions and strided
 * copies generated code calls; it sits next to this plugin, found at query
 * time) and OpenMP for parallel loops: nothing that loads MLIR or LLVM. */
static char runtimePath[4096];
static const char *const kRuntime[] = {runtimePath, "/usr/lib/llvm-22/lib/libomp.so", NULL};

/* i8 register tiles on the chip's dot-product instruction, once the
 * tiles are vectorized and before the nests are parallelized (the LLVM
 * target too, which must have that instruction). */
static const char *extensionPoint(const char *name) {
  if (strcmp(name, "s3-before-parallelize") == 0)
    return "[vectorization] pbc-dot-i8{int8-dot=${int8-dot} llvm-cpu=${llvm-cpu} "
           "llvm-features=${llvm-features}}\n";
  return NULL;
}

static const PbcTargetPlugin kPlugin = {
    .struct_size = sizeof(PbcTargetPlugin),
    .api_version = PBC_PLUGIN_API_VERSION,
    .name = "cpu",
    .version = "0.1.0",
    .description = "Multicore x86-64 CPUs (LLVM, OpenMP, AVX2/AVX-512)",
    .chips = kChips,
    .default_chip = "native",
    .detect_native_chip = pbcCpuDetectNative,
    .s4_pipeline = pbc_cpu_s4,
    .s5_pipeline = pbc_cpu_s5,
    .host_triple = "",
    .runtime_libraries = kRuntime,
    .extension_point = extensionPoint,
};

PBC_PLUGIN_EXPORT const PbcTargetPlugin *pbc_target_plugin_query(uint32_t hostVersion) {
  (void)hostVersion; /* v1 is the only version; the host checks ours. */
  if (!runtimePath[0])
    pbcPluginFileBeside((const void *)pbc_target_plugin_query, "libpbc_cpu_runtime.so", runtimePath,
                        sizeof(runtimePath));
  return &kPlugin;
}
