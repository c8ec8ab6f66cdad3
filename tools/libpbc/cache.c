/* libpbc's on-disk cache: keys, validated entries, atomic commits, bounded
 * size. See cache.h. */
#include "cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SIG_MAGIC "pbc-cache-entry 2"
#define STALE_SECONDS 3600 /* a temporary file this old has no live writer */

uint64_t pbcHashBytes(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; ++i)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

uint64_t pbcHashString(uint64_t h, const char *s) {
  return pbcHashBytes(h, s ? s : "", strlen(s ? s : "") + 1);
}

uint64_t pbcHashFileIdentity(uint64_t h, const char *path) {
  struct stat st;
  h = pbcHashString(h, path);
  if (path && stat(path, &st) == 0) {
    h = pbcHashBytes(h, &st.st_size, sizeof(st.st_size));
    h = pbcHashBytes(h, &st.st_mtim, sizeof(st.st_mtim));
  }
  return h;
}

/* Size and content hash of a file; false if it cannot be read. */
static bool fileChecksum(const char *path, int64_t *size, uint64_t *sum) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return false;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return false;
  }
  uint64_t h = 1469598103934665603ull;
  int64_t total = 0;
  static _Thread_local unsigned char chunk[1 << 16];
  for (ssize_t n; (n = read(fd, chunk, sizeof(chunk))) != 0;) {
    if (n < 0) {
      if (errno == EINTR)
        continue;
      close(fd);
      return false;
    }
    h = pbcHashBytes(h, chunk, (size_t)n);
    total += n;
  }
  close(fd);
  *size = total;
  *sum = h;
  return true;
}

static bool makeDirs(const char *path) {
  char buf[4096];
  snprintf(buf, sizeof(buf), "%s", path);
  for (char *p = buf + 1; *p; ++p)
    if (*p == '/') {
      *p = 0;
      mkdir(buf, 0755);
      *p = '/';
    }
  return mkdir(buf, 0755) == 0 || errno == EEXIST;
}

bool pbcCacheFolder(const char *optionDir, char *dir, size_t len, char *why,
                    size_t whyLen) {
  const char *env = getenv("PBC_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"),
             *home = getenv("HOME");
  bool named = true;
  if (optionDir)
    snprintf(dir, len, "%s", optionDir);
  else if (env)
    snprintf(dir, len, "%s", env);
  else {
    named = false;
    if (xdg && *xdg)
      snprintf(dir, len, "%s/pbc", xdg);
    else if (home && *home)
      snprintf(dir, len, "%s/.cache/pbc", home);
    else
      dir[0] = 0;
  }
  if (!dir[0])
    return true;
  makeDirs(dir);
  struct stat st;
  const char *problem = NULL;
  if (stat(dir, &st) != 0)
    problem = strerror(errno);
  else if (!S_ISDIR(st.st_mode))
    problem = "not a directory";
  else if (access(dir, W_OK | X_OK) != 0)
    problem = "not writable";
  if (!problem)
    return true;
  if (named)
    snprintf(why, whyLen, "libpbc: cannot use the cache folder '%s': %s (set another, or "
             "\"\" for no cache)", dir, problem);
  dir[0] = 0;
  return !named;
}

void pbcCacheEntryPaths(const char *dir, uint64_t key, PbcCacheEntry *e) {
  snprintf(e->lib, sizeof(e->lib), "%s/pbc-%016llx.so", dir, (unsigned long long)key);
  snprintf(e->sig, sizeof(e->sig), "%s/pbc-%016llx.sig", dir, (unsigned long long)key);
}

void pbcCacheTempPaths(const PbcCacheEntry *e, PbcCacheEntry *tmp) {
  static atomic_uint counter;
  unsigned c = atomic_fetch_add(&counter, 1);
  long t = (long)time(NULL);
  snprintf(tmp->lib, sizeof(tmp->lib), "%.4100s.%d-%u-%ld.tmp", e->lib, (int)getpid(), c, t);
  snprintf(tmp->sig, sizeof(tmp->sig), "%.4100s.%d-%u-%ld.tmp", e->sig, (int)getpid(), c, t);
}

bool pbcCacheWriteSig(const char *sigPath, const char *libPath, uint64_t key,
                      const PbcEntrySig *sigs, int n) {
  int64_t size;
  uint64_t sum;
  if (!fileChecksum(libPath, &size, &sum))
    return false;
  FILE *f = fopen(sigPath, "w");
  if (!f)
    return false;
  fprintf(f, "%s\nkey %016llx\nlibrary %lld %016llx\nentries %d\n", SIG_MAGIC,
          (unsigned long long)key, (long long)size, (unsigned long long)sum, n);
  for (int s = 0; s < n; ++s) {
    fprintf(f, "%s %d %d\n", sigs[s].name, sigs[s].numInputs, sigs[s].numOutputs);
    for (int i = 0; i < sigs[s].numInputs + sigs[s].numOutputs; ++i) {
      const PbcTensorType *t = i < sigs[s].numInputs ? &sigs[s].inputs[i]
                                                     : &sigs[s].outputs[i - sigs[s].numInputs];
      fprintf(f, "%d %d", (int)t->elem, t->rank);
      for (int d = 0; d < t->rank; ++d)
        fprintf(f, " %lld", (long long)t->shape[d]);
      fprintf(f, "\n");
    }
  }
  fprintf(f, "end\n");
  return fclose(f) == 0;
}

static bool readTensor(FILE *f, PbcTensorType *t) {
  int elem;
  if (fscanf(f, "%d %d", &elem, &t->rank) != 2 || t->rank < 0 || t->rank > PBC_MAX_RANK ||
      elem < 0 || elem > PBC_ELEM_I64)
    return false;
  t->elem = (PbcElemKind)elem;
  for (int d = 0; d < t->rank; ++d) {
    long long v;
    if (fscanf(f, "%lld", &v) != 1 || v < 0)
      return false;
    t->shape[d] = v;
  }
  return true;
}

static PbcEntrySig *readSigs(FILE *f, int n) {
  PbcEntrySig *sigs = calloc((size_t)(n ? n : 1), sizeof(PbcEntrySig));
  bool ok = sigs != NULL;
  for (int s = 0; ok && s < n; ++s) {
    PbcEntrySig *g = &sigs[s];
    ok = fscanf(f, "%1023s %d %d", g->name, &g->numInputs, &g->numOutputs) == 3 &&
         g->numInputs >= 0 && g->numOutputs >= 0 && g->numInputs <= PBC_MAX_ARGS &&
         g->numOutputs <= PBC_MAX_ARGS;
    for (int i = 0; ok && i < g->numInputs + g->numOutputs; ++i)
      ok = readTensor(f, i < g->numInputs ? &g->inputs[i] : &g->outputs[i - g->numInputs]);
  }
  char end[8] = "";
  ok = ok && fscanf(f, "%7s", end) == 1 && strcmp(end, "end") == 0;
  if (!ok) {
    free(sigs);
    return NULL;
  }
  return sigs;
}

PbcEntrySig *pbcCacheRead(const PbcCacheEntry *e, uint64_t key, int *n, bool *missing,
                          char *why, size_t whyLen) {
  *missing = false;
  int fd = open(e->sig, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 && errno == ENOENT) {
    *missing = true;
    return NULL;
  }
  struct stat st;
  FILE *f = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? fdopen(fd, "r") : NULL;
  if (!f) {
    if (fd >= 0)
      close(fd);
    snprintf(why, whyLen, "its signature file cannot be read");
    return NULL;
  }
  char magic[64] = "";
  unsigned long long fileKey = 0, sum = 0;
  long long size = -1;
  PbcEntrySig *sigs = NULL;
  if (!fgets(magic, sizeof(magic), f) || strncmp(magic, SIG_MAGIC "\n", sizeof(SIG_MAGIC)) != 0)
    snprintf(why, whyLen, "its signature file is not a pbc cache entry");
  else if (fscanf(f, " key %llx library %lld %llx entries %d", &fileKey, &size, &sum, n) != 4 ||
           *n < 0 || *n > 4096)
    snprintf(why, whyLen, "its signature file is malformed");
  else if (fileKey != key)
    snprintf(why, whyLen, "its signature file belongs to another program");
  else if (!(sigs = readSigs(f, *n)))
    snprintf(why, whyLen, "its entry signatures are malformed");
  fclose(f);
  if (!sigs)
    return NULL;
  int64_t libSize;
  uint64_t libSum;
  if (!fileChecksum(e->lib, &libSize, &libSum))
    snprintf(why, whyLen, "its library is missing or unreadable");
  else if (libSize != size)
    snprintf(why, whyLen, "its library has %lld bytes, not %lld", (long long)libSize, size);
  else if (libSum != sum)
    snprintf(why, whyLen, "its library's checksum does not match");
  else
    return sigs;
  free(sigs);
  return NULL;
}

bool pbcCacheCommit(const PbcCacheEntry *tmp, const PbcCacheEntry *e) {
  return rename(tmp->lib, e->lib) == 0 && rename(tmp->sig, e->sig) == 0;
}

void pbcCacheRemove(const PbcCacheEntry *e) {
  unlink(e->sig); /* the commit record first: no reader trusts the rest */
  unlink(e->lib);
}

void pbcCacheTouch(const PbcCacheEntry *e) {
  utimensat(AT_FDCWD, e->sig, NULL, 0);
}

static long long maxBytes(void) {
  const char *env = getenv("PBC_CACHE_MAX_MB");
  char *end = NULL;
  long long mb = env && *env ? strtoll(env, &end, 10) : 2048;
  if (env && *env && (*end || mb < 0))
    mb = 2048;
  return mb * 1024 * 1024;
}

typedef struct Item {
  char key[32];
  long long bytes;
  time_t used;
} Item;

static int byUse(const void *a, const void *b) {
  const Item *x = a, *y = b;
  return x->used < y->used ? -1 : x->used > y->used;
}

void pbcCacheEvict(const char *dir, const PbcCacheEntry *keep) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  Item *items = NULL;
  int n = 0, cap = 0;
  long long total = 0;
  time_t now = time(NULL);
  for (struct dirent *ent; (ent = readdir(d));) {
    const char *name = ent->d_name;
    if (strncmp(name, "pbc-", 4) != 0)
      continue;
    char path[4400];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    size_t len = strlen(name);
    if (len > 4 && strcmp(name + len - 4, ".tmp") == 0) {
      if (now - st.st_mtime > STALE_SECONDS)
        unlink(path);
      continue;
    }
    const char *dot = strrchr(name, '.');
    if (!dot || (strcmp(dot, ".so") != 0 && strcmp(dot, ".sig") != 0) || dot - name > 31)
      continue;
    char key[32];
    snprintf(key, sizeof(key), "%.*s", (int)(dot - name), name);
    int i = 0;
    while (i < n && strcmp(items[i].key, key) != 0)
      ++i;
    if (i == n) {
      if (n == cap)
        items = realloc(items, (size_t)(cap = cap ? 2 * cap : 64) * sizeof(*items));
      items[n++] = (Item){.used = st.st_mtime};
      snprintf(items[i].key, sizeof(items[i].key), "%s", key);
    }
    items[i].bytes += st.st_size;
    if (strcmp(dot, ".sig") == 0 || st.st_mtime > items[i].used)
      items[i].used = st.st_mtime;
    total += st.st_size;
  }
  closedir(d);
  long long limit = maxBytes();
  qsort(items, (size_t)n, sizeof(*items), byUse);
  for (int i = 0; i < n && total > limit; ++i) {
    PbcCacheEntry e;
    snprintf(e.lib, sizeof(e.lib), "%s/%s.so", dir, items[i].key);
    snprintf(e.sig, sizeof(e.sig), "%s/%s.sig", dir, items[i].key);
    if (keep && strcmp(e.lib, keep->lib) == 0)
      continue;
    pbcCacheRemove(&e);
    total -= items[i].bytes;
  }
  free(items);
}
