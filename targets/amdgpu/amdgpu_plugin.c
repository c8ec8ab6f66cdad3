/* The amdgpu target plugin: AMD GPUs (CDNA gfx90a/gfx942, RDNA3 gfx1100)
 * through ROCDL, AMDGPU machine code and HSACO (ld.lld-22), with host code
 * calling HIP's module API (runtime/hip_driver.c under the shared mgpu
 * runtime). What is AMD's own: the chips, the S5 pipeline, the driver table
 * and the toolkit folder below; S4, the S3 extension points, the passes and
 * the runtime come from targets/gpu. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu_passes.h"
#include "gpu_plugin.h"
#include "pbc/plugin.h"
#include "pbc/plugin_files.h"

extern const char pbc_amdgpu_s5[], pbc_amdgpu_chip_gfx90a[], pbc_amdgpu_chip_gfx942[],
    pbc_amdgpu_chip_gfx1100[];
static const char *const kChips[] = {pbc_amdgpu_chip_gfx90a, pbc_amdgpu_chip_gfx942,
                                     pbc_amdgpu_chip_gfx1100, NULL};

static char runtimePath[4096];
static const char *kRuntime[] = {runtimePath, NULL};

static PbcTargetPlugin kPlugin = {
    .struct_size = sizeof(PbcTargetPlugin),
    .api_version = PBC_PLUGIN_API_VERSION,
    .name = "amdgpu",
    .version = "0.1.0",
    .description = "AMD GPUs gfx90a, gfx942, gfx1100 (ROCDL, HSACO via ld.lld; HIP module API)",
    .chips = kChips,
    .default_chip = "gfx90a",
    .s5_pipeline = pbc_amdgpu_s5,
    .runtime_libraries = kRuntime,
    PBC_GPU_PLUGIN_SHARED,
};

/* Debian's pieces of a ROCm toolkit: LLVM 22's tools (ld.lld) and
 * rocm-device-libs. */
static const char kLlvmBin[] = "/usr/lib/llvm-22/bin";
static const char kDeviceLibs[] = "/usr/lib/x86_64-linux-gnu/amdgcn";

/* A link at `path` to `target`: made if absent, kept if it already is
 * exactly that link (another pbc made it), refused otherwise. */
static int linkTo(const char *target, const char *path) {
  if (symlink(target, path) == 0)
    return 0;
  char seen[4096];
  ssize_t n = errno == EEXIST ? readlink(path, seen, sizeof(seen) - 1) : -1;
  if (n < 0)
    return -1;
  seen[n] = 0;
  return strcmp(seen, target) == 0 ? 0 : -1;
}

static int makeDir(const char *path) { return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1; }

/* Lays out ROOT/llvm/bin -> LLVM 22's tools, ROOT/amdgcn -> the device
 * libraries. */
static int layOut(const char *root) {
  char path[1200];
  snprintf(path, sizeof(path), "%s/llvm", root);
  if (makeDir(root) || makeDir(path))
    return -1;
  snprintf(path, sizeof(path), "%s/llvm/bin", root);
  if (linkTo(kLlvmBin, path))
    return -1;
  snprintf(path, sizeof(path), "%s/amdgcn", root);
  return linkTo(kDeviceLibs, path);
}

/* MLIR's HSACO step runs $ROCM_PATH/llvm/bin/ld.lld and links device
 * libraries from $ROCM_PATH/amdgcn/bitcode (default /opt/rocm). Without a
 * ROCm installation, a folder laid out that way from Debian's LLVM 22 and
 * rocm-device-libs serves: one per user under the temporary folder, or a
 * fresh one if that name is taken by something else. */
static void findRocmToolkit(void) {
  if (getenv("ROCM_PATH") || getenv("ROCM_ROOT") || getenv("ROCM_HOME"))
    return;
  if (access("/opt/rocm/llvm/bin/ld.lld", X_OK) == 0)
    return;
  const char *tmp = getenv("TMPDIR");
  char root[1024];
  snprintf(root, sizeof(root), "%s/pbc-rocm-toolkit-%u", tmp && *tmp ? tmp : "/tmp",
           (unsigned)getuid());
  if (layOut(root) != 0) {
    snprintf(root, sizeof(root), "%s/pbc-rocm-toolkit-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root) || layOut(root) != 0)
      return; /* MLIR then names the ld.lld it could not find */
  }
  setenv("ROCM_PATH", root, 0);
}

PBC_PLUGIN_EXPORT const PbcTargetPlugin *pbc_target_plugin_query(uint32_t hostVersion) {
  (void)hostVersion;
  if (!runtimePath[0])
    pbcPluginFileBeside((const void *)pbc_target_plugin_query, "libpbc_amdgpu_runtime.so",
                        runtimePath, sizeof(runtimePath));
  findRocmToolkit();
  return &kPlugin;
}
