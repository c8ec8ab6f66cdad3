/* The cpu runtime's buffer allocator. Generated code allocates its buffers
 * (intermediates, packed and padded copies) through
 * _mlir_memref_to_llvm_alloc/_free (S5: finalize-memref-to-llvm with
 * use-generic-functions), per call. With plain malloc, glibc returns large
 * buffers to the system when they are freed (munmap, or trimming the heap),
 * so every call faults their pages in again. Freed buffers of at least
 * kMinCachedBytes are kept here instead (up to a limit in all) and
 * handed to the next allocation of the same size: a program called in a loop
 * allocates the same sizes every call. Thread-safe (parallel loops allocate
 * their private buffers concurrently).
 *
 * When the cache is full (in bytes or slots), the oldest blocks are freed to
 * make room: sizes a program no longer allocates do not stay pinned. A host
 * that is done with pbc's code for a while calls pbc_cpu_release_buffers()
 * (pbc_cpu_runtime.h) to give the kept memory back; $PBC_BUFFER_CACHE_MB
 * (read at the first free: a whole number of MiB) sets the limit, default
 * 1024, 0 keeps nothing; another value is reported and the default used.
 * A thread gets back, where it can, a block that it freed itself.
 *
 * Blocks of at least kHugePageBytes are 2 MiB aligned and advised to the
 * kernel as transparent-huge-page candidates (madvise; a hint, ignored where
 * THP is off). Tiled nests walk short row segments of large buffers, which
 * costs more on 4 KiB pages (likely TLB reach and page-bounded hardware
 * prefetch; this VM has no counters to tell; tools/bench/README.md). */
#define _DEFAULT_SOURCE /* madvise */
#include "pbc_cpu_runtime.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PBC_EXPORT __attribute__((visibility("default")))

enum {
  kHeader = 64, /* size and owner in front of each block; keeps 64-byte alignment */
  kSlots = 64,
};
static const size_t kMinCachedBytes = 256 << 10;
static const size_t kHugePageBytes = 2 << 20;
static const size_t kDefaultLimitBytes = (size_t)1 << 30;

static struct {
  void *block[kSlots]; /* oldest first */
  size_t size[kSlots];
  int n;
  size_t bytes;
  size_t limit;
  pthread_mutex_t lock;
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t limitOnce = PTHREAD_ONCE_INIT;

static void readLimit(void) {
  cache.limit = kDefaultLimitBytes;
  const char *mb = getenv("PBC_BUFFER_CACHE_MB");
  if (!mb)
    return;
  size_t v = 0;
  const char *c = mb;
  for (; *c >= '0' && *c <= '9'; ++c) {
    if (v > (SIZE_MAX >> 20) / 10) /* v << 20 must not wrap */
      break;
    v = v * 10 + (size_t)(*c - '0');
  }
  if (c == mb || *c || v > SIZE_MAX >> 20) {
    fprintf(stderr,
            "pbc: ignoring PBC_BUFFER_CACHE_MB=%s (not a whole number of MiB); "
            "keeping up to %zu MiB\n",
            mb, kDefaultLimitBytes >> 20);
    return;
  }
  cache.limit = v << 20;
}

/* Removes entry i, keeping the others in age order. */
static void removeAt(int i) {
  cache.bytes -= cache.size[i];
  --cache.n;
  memmove(&cache.block[i], &cache.block[i + 1], sizeof(void *) * (size_t)(cache.n - i));
  memmove(&cache.size[i], &cache.size[i + 1], sizeof(size_t) * (size_t)(cache.n - i));
}

/* Names the calling thread (its address); a freed block's header records
 * who freed it, after its size. */
static _Thread_local char threadTag;

static void **headerOwner(void *block) { return &((void **)block)[1]; }

/* A kept block of this size: the newest that this thread freed, else the
 * newest. A parallel loop's threads each allocate a private buffer of the
 * same size every call; a block that goes back to the thread that last
 * wrote it is warm in that core's cache. Taking the newest alone swapped
 * the two threads' packed B of a 256^3 matmul in about half the calls. */
static void *takeCached(size_t size) {
  void *block = NULL;
  int found = -1;
  pthread_mutex_lock(&cache.lock);
  for (int i = cache.n - 1; i >= 0; --i)
    if (cache.size[i] == size) {
      if (found < 0)
        found = i;
      if (*headerOwner(cache.block[i]) == &threadTag) {
        found = i;
        break;
      }
    }
  if (found >= 0) {
    block = cache.block[found];
    removeAt(found);
  }
  pthread_mutex_unlock(&cache.lock);
  return block;
}

/* Keeps block, freeing the oldest ones to make room; false if it can
 * never fit (larger than the limit). */
static int keep(void *block, size_t size) {
  pthread_once(&limitOnce, readLimit);
  if (size > cache.limit)
    return 0;
  void *evicted[kSlots];
  int nEvicted = 0;
  pthread_mutex_lock(&cache.lock);
  while (cache.n == kSlots || cache.bytes + size > cache.limit) {
    evicted[nEvicted++] = cache.block[0];
    removeAt(0);
  }
  cache.block[cache.n] = block;
  cache.size[cache.n++] = size;
  cache.bytes += size;
  pthread_mutex_unlock(&cache.lock);
  for (int i = 0; i < nEvicted; ++i) /* outside the lock: munmap is slow */
    free(evicted[i]);
  return 1;
}

/* A new block of kHeader + size bytes; a large one on huge pages if the
 * kernel grants them. */
static void *allocBlock(size_t size) {
  int huge = size >= kHugePageBytes;
  void *block = NULL;
  if (posix_memalign(&block, huge ? kHugePageBytes : kHeader, kHeader + size))
    return NULL;
  if (huge) /* whole huge pages only: the tail's page may hold other blocks */
    madvise(block, (kHeader + size) & ~(kHugePageBytes - 1), MADV_HUGEPAGE);
  return block;
}

PBC_EXPORT void *_mlir_memref_to_llvm_alloc(uint64_t size) {
  void *block = size >= kMinCachedBytes ? takeCached(size) : NULL;
  if (!block && !(block = allocBlock(size)))
    return NULL;
  *(size_t *)block = size;
  return (char *)block + kHeader;
}

PBC_EXPORT void _mlir_memref_to_llvm_free(void *p) {
  if (!p)
    return;
  void *block = (char *)p - kHeader;
  size_t size = *(size_t *)block;
  *headerOwner(block) = &threadTag;
  if (size < kMinCachedBytes || !keep(block, size))
    free(block);
}

PBC_EXPORT void pbc_cpu_release_buffers(void) {
  pthread_mutex_lock(&cache.lock);
  while (cache.n > 0)
    free(cache.block[--cache.n]);
  cache.bytes = 0;
  pthread_mutex_unlock(&cache.lock);
}

PBC_EXPORT size_t pbc_cpu_cached_bytes(void) {
  pthread_mutex_lock(&cache.lock);
  size_t bytes = cache.bytes;
  pthread_mutex_unlock(&cache.lock);
  return bytes;
}
