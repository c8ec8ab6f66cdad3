/* memrefCopy: the copy upstream's memref-to-LLVM lowering calls for a
 * memref.copy between strided views that S2 left as a copy (pbc-copy-to-
 * loops lowers the statically shaped ones; this is the fallback). Same
 * interface as MLIR's runner utilities, which pbc no longer links (they
 * load libMLIR and libLLVM). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define PBC_EXPORT __attribute__((visibility("default")))

typedef struct UnrankedMemRef {
  int64_t rank;
  void *descriptor; /* {T *allocated, *aligned; int64_t offset, sizes[rank], strides[rank]} */
} UnrankedMemRef;

typedef struct Descriptor {
  char *allocated, *aligned;
  int64_t offset;
  int64_t sizesAndStrides[];
} Descriptor;

PBC_EXPORT void memrefCopy(int64_t elemSize, UnrankedMemRef *srcArg, UnrankedMemRef *dstArg) {
  int64_t rank = srcArg->rank;
  const Descriptor *src = srcArg->descriptor, *dst = dstArg->descriptor;
  char *from = src->aligned + src->offset * elemSize, *to = dst->aligned + dst->offset * elemSize;
  if (rank == 0) {
    memcpy(to, from, (size_t)elemSize);
    return;
  }
  const int64_t *sizes = src->sizesAndStrides, *srcStrides = sizes + rank,
                *dstStrides = dst->sizesAndStrides + rank;
  for (int64_t d = 0; d < rank; ++d)
    if (sizes[d] == 0)
      return;
  /* The innermost dimension as one memcpy when both are contiguous in it. */
  int64_t inner = sizes[rank - 1];
  bool rows = srcStrides[rank - 1] == 1 && dstStrides[rank - 1] == 1;
  int64_t index[rank];
  memset(index, 0, sizeof(index));
  for (;;) {
    int64_t s = 0, t = 0;
    for (int64_t d = 0; d < rank - 1; ++d) {
      s += index[d] * srcStrides[d];
      t += index[d] * dstStrides[d];
    }
    if (rows) {
      memmove(to + t * elemSize, from + s * elemSize, (size_t)(inner * elemSize));
    } else {
      for (int64_t i = 0; i < inner; ++i)
        memmove(to + (t + i * dstStrides[rank - 1]) * elemSize,
                from + (s + i * srcStrides[rank - 1]) * elemSize, (size_t)elemSize);
    }
    int64_t d = rank - 2;
    while (d >= 0 && ++index[d] == sizes[d])
      index[d--] = 0;
    if (d < 0)
      return;
  }
}
