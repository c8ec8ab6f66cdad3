/*===- gpu_plugin.h - What every GPU target plugin shares -----------------===*\
|* The S4 pipeline (affine -> gpu.launch, kernels outlined), the S3          *|
|* extension-point entries (matrix units, the parallel band), and finding    *|
|* the target's runtime library next to its plugin. A GPU plugin adds its    *|
|* chips, its S5 pipeline and its vendor driver table (runtime/).            *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_GPU_PLUGIN_H
#define PBC_GPU_PLUGIN_H

#include <stddef.h>

/* S4 for every GPU target (targets/gpu/s4.pipeline). */
extern const char pbc_gpu_s4[];

/* The core S3 groups a GPU target replaces: slice fusion allocates its
 * private buffers per CPU thread; cache tiling, packing, register tiles,
 * vectorization, prefetch and streaming stores are CPU schedules; the
 * extension points map matrix units and (at @target:s3-before-parallelize)
 * the whole parallel band instead. */
#define PBC_GPU_S3_REPLACED_GROUPS                                                         \
  "attention-fusion,slice-fusion,prefetch,tiling,fast-buffers,unroll,vectorization,parallelization,"        \
  "streaming-stores"

/* The PbcTargetPlugin fields every GPU plugin fills the same way. */
#define PBC_GPU_PLUGIN_SHARED                                                              \
  .register_passes = pbcGpuRegisterPasses, .extension_point = pbcGpuExtensionPoint,        \
  .s4_pipeline = pbc_gpu_s4, .host_triple = "", .detect_native_chip = NULL,                \
  .s3_replaced_groups = PBC_GPU_S3_REPLACED_GROUPS

/* The S3 extension-point entries of a GPU target; chip keys parameterize
 * them (matrix-unit-mapping, warp-size). */
const char *pbcGpuExtensionPoint(const char *name);

#endif
