/* Compiled kernels on disk: see output/kernel_cache.h. */
#include "output/kernel_cache.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "llvm-c/Core.h"
#include "pbc/files.h"

#define MAGIC "pbc-kernel 1"
#define STALE_SECONDS 3600 /* a temporary file this old has no live writer */

void pbcKernelKeyAdd(PbcKernelKey *k, const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t a = k->h[0], b = k->h[1];
  for (size_t i = 0; i < n; ++i) {
    a = (a ^ p[i]) * 1099511628211ull;
    b = (b ^ p[i] ^ (unsigned char)i) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
  }
  k->h[0] = a;
  k->h[1] = b;
}

void pbcKernelKeyHex(const PbcKernelKey *k, char out[33]) {
  snprintf(out, 33, "%016" PRIx64 "%016" PRIx64, k->h[0], k->h[1]);
}

PbcKernelKey pbcKernelKeyBase(void) {
  PbcKernelKey k = {{1469598103934665603ull, 0x6c62272e07bb0142ull}};
  pbcKernelKeyAdd(&k, MAGIC, sizeof(MAGIC));
  Dl_info info;
  struct stat st;
  if (dladdr((void *)pbcKernelKeyBase, &info) && info.dli_fname &&
      stat(info.dli_fname, &st) == 0) {
    pbcKernelKeyAdd(&k, &st.st_size, sizeof(st.st_size));
    pbcKernelKeyAdd(&k, &st.st_mtim, sizeof(st.st_mtim));
  }
  unsigned v[3];
  LLVMGetVersion(&v[0], &v[1], &v[2]);
  pbcKernelKeyAdd(&k, v, sizeof(v));
  return k;
}

bool pbcKernelCacheFolder(const char *named, char *dir, size_t len) {
  const char *own = named ? named : getenv("PBC_KERNEL_CACHE_DIR");
  const char *shared = getenv("PBC_CACHE_DIR");
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (own) {
    if (!*own || strcmp(own, "off") == 0)
      return false;
    snprintf(dir, len, "%s", own);
  } else if (shared) {
    if (!*shared)
      return false; /* libpbc's "no cache" */
    snprintf(dir, len, "%s/kernels", shared);
  } else if (xdg && *xdg) {
    snprintf(dir, len, "%s/pbc/kernels", xdg);
  } else if (home && *home) {
    snprintf(dir, len, "%s/.cache/pbc/kernels", home);
  } else {
    return false;
  }
  struct stat st;
  return pbcMakeDirs(dir) && stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
         access(dir, W_OK | X_OK) == 0;
}

static void entryPath(const char *dir, const PbcKernelKey *key, char *out, size_t len) {
  char hex[33];
  pbcKernelKeyHex(key, hex);
  snprintf(out, len, "%s/k-%s.o.pbc", dir, hex);
}

static uint64_t checksum(const void *data, size_t n) {
  PbcKernelKey k = {{1469598103934665603ull, 0}};
  pbcKernelKeyAdd(&k, data, n);
  return k.h[0];
}

bool pbcKernelCacheGet(const char *dir, const PbcKernelKey *key, PbcStrBuf *obj) {
  char path[4200], hex[33], want[128], line[128];
  entryPath(dir, key, path, sizeof(path));
  FILE *f = fopen(path, "rb");
  if (!f)
    return false;
  pbcKernelKeyHex(key, hex);
  unsigned long long size = 0, sum = 0;
  bool ok = fgets(line, sizeof(line), f) &&
            sscanf(line, MAGIC " %32s %llu %llx", want, &size, &sum) == 3 &&
            strcmp(want, hex) == 0 && size > 0 && size < (1ull << 30);
  char *data = ok ? malloc(size) : NULL;
  ok = ok && data && fread(data, 1, size, f) == size && fgetc(f) == EOF &&
       checksum(data, size) == sum;
  fclose(f);
  if (ok) {
    pbcStrBufAppend(obj, data, size);
    utimensat(AT_FDCWD, path, NULL, 0); /* used now: evicted last */
  } else {
    unlink(path); /* damaged, or another format: compiled again */
  }
  free(data);
  return ok;
}

void pbcKernelCachePut(const char *dir, const PbcKernelKey *key, const void *obj, size_t n) {
  char path[4200], tmp[4300], hex[33];
  entryPath(dir, key, path, sizeof(path));
  pbcKernelKeyHex(key, hex);
  snprintf(tmp, sizeof(tmp), "%s/k-%s.tmp.%d.%lu", dir, hex, (int)getpid(),
           (unsigned long)pthread_self());
  FILE *f = fopen(tmp, "wb");
  if (!f)
    return;
  bool ok = fprintf(f, MAGIC " %s %zu %" PRIx64 "\n", hex, n, checksum(obj, n)) > 0 &&
            fwrite(obj, 1, n, f) == n;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp, path) != 0)
    unlink(tmp);
}

typedef struct Entry {
  char name[64];
  long long bytes;
  time_t used;
} Entry;

static int oldestFirst(const void *a, const void *b) {
  time_t x = ((const Entry *)a)->used, y = ((const Entry *)b)->used;
  return x < y ? -1 : x > y;
}

/* The entries of dir (and stale temporary files removed); NULL if none. */
static Entry *listEntries(const char *dir, int *n, long long *total) {
  *n = 0;
  *total = 0;
  DIR *d = opendir(dir);
  if (!d)
    return NULL;
  Entry *e = NULL;
  int cap = 0;
  time_t now = time(NULL);
  for (struct dirent *de; (de = readdir(d));) {
    if (strncmp(de->d_name, "k-", 2) != 0 || strlen(de->d_name) >= sizeof(e->name))
      continue;
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
    struct stat st;
    if (stat(path, &st) != 0)
      continue;
    if (strstr(de->d_name, ".tmp.")) {
      if (now - st.st_mtime > STALE_SECONDS)
        unlink(path);
      continue;
    }
    if (*n == cap) {
      cap = cap ? 2 * cap : 256;
      e = realloc(e, (size_t)cap * sizeof(Entry));
    }
    memcpy(e[*n].name, de->d_name, strlen(de->d_name) + 1); /* shorter: checked above */
    e[*n].bytes = st.st_size;
    e[*n].used = st.st_mtime;
    *total += st.st_size;
    ++*n;
  }
  closedir(d);
  return e;
}

static long long maxBytes(void) {
  const char *env = getenv("PBC_KERNEL_CACHE_MAX_MB");
  long long mb = env && *env ? atoll(env) : 1024;
  return (mb < 0 ? 0 : mb) << 20;
}

void pbcKernelCacheEvict(const char *dir) {
  int n = 0;
  long long total = 0, limit = maxBytes();
  Entry *e = listEntries(dir, &n, &total);
  if (total > limit) {
    qsort(e, (size_t)n, sizeof(Entry), oldestFirst);
    for (int i = 0; i < n && total > limit * 9 / 10; ++i) {
      char path[4200];
      snprintf(path, sizeof(path), "%s/%s", dir, e[i].name);
      if (unlink(path) == 0)
        total -= e[i].bytes;
    }
  }
  free(e);
}

void pbcKernelCachePrintStats(FILE *out, const char *named) {
  char dir[4096];
  if (!pbcKernelCacheFolder(named, dir, sizeof(dir))) {
    fprintf(out, "kernel cache: off (--kernel-cache-dir, PBC_KERNEL_CACHE_DIR, PBC_CACHE_DIR, "
                 "HOME)\n");
    return;
  }
  int n = 0;
  long long total = 0;
  free(listEntries(dir, &n, &total));
  fprintf(out, "kernel cache: %s\n  %d kernels, %.1f MiB of %lld MiB (PBC_KERNEL_CACHE_MAX_MB)\n",
          dir, n, (double)total / (1 << 20), maxBytes() >> 20);
}
