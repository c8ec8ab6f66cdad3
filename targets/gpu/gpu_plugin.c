/* What every GPU target plugin shares (see gpu_plugin.h). */
#include "gpu_plugin.h"

#include <string.h>

const char *pbcGpuExtensionPoint(const char *name) {
  /* Matmul-kind nests go to the matrix units before any CPU-style tiling
   * would see them; the chip names the op family and the warp width, and
   * its SM count and shared memory size the block tiles; its i8
   * instruction's k decides the i8 layout. */
  if (strcmp(name, "s3-before-tiling") == 0)
    return "[matrix-units] pbc-gpu-map-matrix-units{unit=${matrix-unit-mapping} "
           "warp=${warp-size} sms=${cores} shared=${shared-memory-per-block-bytes} "
           "i8-k=${matrix-unit-i8-k}}\n";
  /* The whole parallel band (up to three loops) becomes one affine.parallel:
   * S4 maps it to blocks x threads. Every parallel loop counts on a GPU. */
  if (strcmp(name, "s3-before-parallelize") == 0)
    return "[parallelization] pbc-parallelize{min-trip=1 band=3 hoist=1}\n";
  return NULL;
}
