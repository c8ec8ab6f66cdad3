/* The cpu runtime's buffer allocator: 64-byte aligned, writable blocks; a
 * large freed block comes back for the next allocation of its size (and only
 * of its size); small blocks are not kept; a full cache (64 slots) frees its
 * oldest block; concurrent use from threads gets distinct blocks;
 * pbc_cpu_release_buffers() empties the cache; a thread gets back the block
 * it freed before a newer one of the same size; a large block is 2 MiB
 * aligned and advised as huge pages (its mapping's VmFlags). Run with
 * PBC_BUFFER_CACHE_MB=0 nothing is kept; =1 a block that needs the room
 * evicts the older one; a value that is not a whole number (=-1) leaves the
 * default limit. */
#define _POSIX_C_SOURCE 200809L /* pthread_barrier */
#include "pbc_cpu_runtime.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *_mlir_memref_to_llvm_alloc(uint64_t size);
void _mlir_memref_to_llvm_free(void *p);

static int failures;
#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c);                        \
      ++failures;                                                                                  \
    }                                                                                              \
  } while (0)

/* Whether the mapping that holds p carries the huge-page advice ("hg" in
 * its VmFlags; /proc/self/smaps). */
static int adviseHuge(const void *p) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f)
    return 0;
  char line[512];
  int inside = 0, huge = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
      inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
    else if (inside && !strncmp(line, "VmFlags:", 8)) {
      huge = strstr(line, " hg") != NULL;
      break;
    }
  }
  fclose(f);
  return huge;
}

/* The other thread of ownTest: frees its block, then (after the main thread
 * has freed a newer one of the same size) allocates again. */
static pthread_barrier_t ownBarrier;
static void *ownWorker(void *arg) {
  size_t size = *(size_t *)arg;
  void *mine = _mlir_memref_to_llvm_alloc(size);
  _mlir_memref_to_llvm_free(mine);
  pthread_barrier_wait(&ownBarrier); /* main frees its block: the newest */
  pthread_barrier_wait(&ownBarrier);
  void *again = _mlir_memref_to_llvm_alloc(size);
  CHECK(again == mine);
  _mlir_memref_to_llvm_free(again);
  return NULL;
}

static void ownTest(size_t size) {
  void *mine = _mlir_memref_to_llvm_alloc(size);
  pthread_t t;
  pthread_barrier_init(&ownBarrier, NULL, 2);
  pthread_create(&t, NULL, ownWorker, &size);
  pthread_barrier_wait(&ownBarrier);
  _mlir_memref_to_llvm_free(mine);
  pthread_barrier_wait(&ownBarrier);
  pthread_join(t, NULL);
  pthread_barrier_destroy(&ownBarrier);
  void *again = _mlir_memref_to_llvm_alloc(size);
  CHECK(again == mine);
  _mlir_memref_to_llvm_free(again);
  pbc_cpu_release_buffers();
}

static void *worker(void *arg) {
  (void)arg;
  for (int i = 0; i < 200; ++i) {
    size_t n = (size_t)(1 + i % 3) << 20;
    unsigned char *p = _mlir_memref_to_llvm_alloc(n);
    memset(p, i & 0xff, n); /* a block shared by two threads would be clobbered */
    for (size_t j = 0; j < n; j += 4093)
      if (p[j] != (i & 0xff))
        return (void *)1;
    _mlir_memref_to_llvm_free(p);
  }
  return NULL;
}

int main(void) {
  const size_t big = 3 << 20, small = 1000;
  const char *limit = getenv("PBC_BUFFER_CACHE_MB");
  if (limit && !strcmp(limit, "0")) { /* nothing kept */
    void *a = _mlir_memref_to_llvm_alloc(big);
    CHECK(a && (uintptr_t)a % 64 == 0);
    _mlir_memref_to_llvm_free(a);
    CHECK(pbc_cpu_cached_bytes() == 0);
    return failures ? 1 : (puts("PASS (PBC_BUFFER_CACHE_MB=0)"), 0);
  }
  if (limit && !strcmp(limit, "1")) { /* 1 MiB: room for one 768 KiB block */
    const size_t kb768 = 768 << 10;
    void *x = _mlir_memref_to_llvm_alloc(kb768), *y = _mlir_memref_to_llvm_alloc(kb768 + 64);
    _mlir_memref_to_llvm_free(x);
    _mlir_memref_to_llvm_free(y); /* evicts x */
    CHECK(pbc_cpu_cached_bytes() == kb768 + 64);
    void *z = _mlir_memref_to_llvm_alloc(2 << 20); /* beyond the limit: not kept */
    _mlir_memref_to_llvm_free(z);
    CHECK(pbc_cpu_cached_bytes() == kb768 + 64);
    return failures ? 1 : (puts("PASS (PBC_BUFFER_CACHE_MB=1)"), 0);
  }
  void *a = _mlir_memref_to_llvm_alloc(big);
  CHECK(a && (uintptr_t)a % 64 == 0);
  memset(a, 1, big);
  _mlir_memref_to_llvm_free(a);
  void *b = _mlir_memref_to_llvm_alloc(big + 64); /* another size: not a's */
  CHECK(b != a);
  void *c = _mlir_memref_to_llvm_alloc(big); /* a's size: a comes back */
  CHECK(c == a);
  _mlir_memref_to_llvm_free(b);
  _mlir_memref_to_llvm_free(c);
  CHECK(pbc_cpu_cached_bytes() == 2 * big + 64);
  pbc_cpu_release_buffers();
  CHECK(pbc_cpu_cached_bytes() == 0);

  /* 65 sizes: the 65th evicts the first, the cache keeps the newest 64. */
  void *blocks[65];
  size_t kept = 0;
  for (int i = 0; i < 65; ++i)
    blocks[i] = _mlir_memref_to_llvm_alloc(big + 64 * (size_t)i);
  for (int i = 0; i < 65; ++i) {
    _mlir_memref_to_llvm_free(blocks[i]);
    kept += i > 0 ? big + 64 * (size_t)i : 0;
  }
  CHECK(pbc_cpu_cached_bytes() == kept);
  void *newest = _mlir_memref_to_llvm_alloc(big + 64 * 64);
  CHECK(newest == blocks[64]); /* the newest stays */
  _mlir_memref_to_llvm_free(newest);
  pbc_cpu_release_buffers();

  ownTest(big);

  /* Large blocks: 2 MiB aligned (behind the 64-byte header) and advised as
   * huge pages; small ones are left to malloc. */
  void *h = _mlir_memref_to_llvm_alloc(8 << 20);
  CHECK(h && ((uintptr_t)h - 64) % (2 << 20) == 0);
  CHECK(adviseHuge(h));
  _mlir_memref_to_llvm_free(h);
  pbc_cpu_release_buffers();

  void *s = _mlir_memref_to_llvm_alloc(small);
  CHECK(s && (uintptr_t)s % 64 == 0);
  _mlir_memref_to_llvm_free(s);
  _mlir_memref_to_llvm_free(NULL);

  pthread_t t[4];
  for (int i = 0; i < 4; ++i)
    pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < 4; ++i) {
    void *r;
    pthread_join(t[i], &r);
    CHECK(r == NULL);
  }
  if (failures)
    return 1;
  puts("PASS");
  return 0;
}
