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

#include "pbc/files.h"

#define SIG_MAGIC "pbc-cache-entry 3"
#define STALE_SECONDS 3600 /* a temporary file this old has no live writer */
#define GRACE_SECONDS 60    /* a library no record names may be loading now */

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

bool pbcCacheFolder(const char *optionDir, char *dir, size_t len, char *why,
                    size_t whyLen) {
  const char *env = getenv("PBC_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"),
             *home = getenv("HOME");
  bool named = true;
  const char *given = optionDir ? optionDir : env;
  /* Room for the file names in it (pbc-KEY.PID-N-TIME.tmp.entries): a
   * longer path was cut short, and its files failed later, in the linker. */
  if (given && strlen(given) + 96 > len) {
    snprintf(why, whyLen, "libpbc: the cache folder path has %zu characters; at most %zu",
             strlen(given), len - 96);
    dir[0] = 0;
    return false;
  }
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
  pbcMakeDirs(dir);
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

void pbcCacheEntryInit(PbcCacheEntry *e, const char *dir, uint64_t key) {
  snprintf(e->dir, sizeof(e->dir), "%s", dir);
  e->key = key;
  snprintf(e->sig, sizeof(e->sig), "%s/pbc-%016llx.sig", dir, (unsigned long long)key);
  e->lib[0] = 0;
}

void pbcCacheTempBase(const PbcCacheEntry *e, char *out, size_t len) {
  static atomic_uint counter;
  snprintf(out, len, "%s/pbc-%016llx.%d-%u-%ld.tmp", e->dir, (unsigned long long)e->key,
           (int)getpid(), atomic_fetch_add(&counter, 1), (long)time(NULL));
}

static void libraryPath(const PbcCacheEntry *e, uint64_t sum, char *out, size_t len) {
  snprintf(out, len, "%s/pbc-%016llx-%016llx.so", e->dir, (unsigned long long)e->key,
           (unsigned long long)sum);
}

/* The record's header: key, library checksum and size. */
static bool readHeader(FILE *f, unsigned long long *key, long long *size,
                       unsigned long long *sum) {
  char magic[64] = "";
  return fgets(magic, sizeof(magic), f) &&
         strncmp(magic, SIG_MAGIC "\n", sizeof(SIG_MAGIC)) == 0 &&
         fscanf(f, " key %llx library %lld %llx", key, size, sum) == 3;
}

PbcEntrySig *pbcCacheRead(PbcCacheEntry *e, int *n, bool *missing, char *why, size_t whyLen) {
  *missing = false;
  e->lib[0] = 0;
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
    snprintf(why, whyLen, "its record cannot be read");
    return NULL;
  }
  unsigned long long key = 0, sum = 0;
  long long size = -1;
  PbcEntrySig *sigs = NULL;
  if (!readHeader(f, &key, &size, &sum))
    snprintf(why, whyLen, "its record is not a pbc cache entry");
  else if (key != e->key)
    snprintf(why, whyLen, "its record belongs to another program");
  else if (!(sigs = pbcEntrySigsRead(f, n)))
    snprintf(why, whyLen, "its entry signatures are malformed");
  fclose(f);
  if (!sigs)
    return NULL;
  libraryPath(e, sum, e->lib, sizeof(e->lib));
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

bool pbcCacheCommit(PbcCacheEntry *e, const char *tmpLib, const PbcEntrySig *sigs, int n,
                    char *why, size_t whyLen) {
  int64_t size;
  uint64_t sum;
  if (!fileChecksum(tmpLib, &size, &sum)) {
    snprintf(why, whyLen, "cannot read the built library '%s'", tmpLib);
    return false;
  }
  char tmpSig[4300];
  snprintf(tmpSig, sizeof(tmpSig), "%.4200s.sig", tmpLib);
  libraryPath(e, sum, e->lib, sizeof(e->lib));
  FILE *f = fopen(tmpSig, "w");
  bool ok = f != NULL;
  if (f) {
    fprintf(f, "%s\nkey %016llx\nlibrary %lld %016llx\n", SIG_MAGIC,
            (unsigned long long)e->key, (long long)size, (unsigned long long)sum);
    ok = pbcEntrySigsWrite(f, sigs, n);
    ok = fclose(f) == 0 && ok;
  }
  /* The library first: a record never names a library not in place. */
  ok = ok && rename(tmpLib, e->lib) == 0 && rename(tmpSig, e->sig) == 0;
  if (!ok)
    snprintf(why, whyLen, "cannot write the cache entry '%s': %s", e->sig, strerror(errno));
  unlink(tmpSig);
  return ok;
}

void pbcCacheRemove(const PbcCacheEntry *e) {
  unlink(e->sig); /* the record first: no reader trusts the rest */
  if (e->lib[0])
    unlink(e->lib);
}

void pbcCacheTouch(const PbcCacheEntry *e) { utimensat(AT_FDCWD, e->sig, NULL, 0); }

static long long maxBytes(void) {
  const char *env = getenv("PBC_CACHE_MAX_MB");
  char *end = NULL;
  long long mb = env && *env ? strtoll(env, &end, 10) : 2048;
  if (env && *env && (*end || mb < 0))
    mb = 2048;
  return mb * 1024 * 1024;
}

typedef struct Item {
  unsigned long long key;
  long long bytes;
  time_t used;
  bool hasRecord;
  unsigned long long sum; /* the library the record names */
} Item;

static int byUse(const void *a, const void *b) {
  const Item *x = a, *y = b;
  return x->used < y->used ? -1 : x->used > y->used;
}

static Item *itemFor(Item **items, int *n, int *cap, unsigned long long key) {
  for (int i = 0; i < *n; ++i)
    if ((*items)[i].key == key)
      return &(*items)[i];
  if (*n == *cap)
    *items = realloc(*items, (size_t)(*cap = *cap ? 2 * *cap : 64) * sizeof(**items));
  (*items)[*n] = (Item){.key = key};
  return &(*items)[(*n)++];
}

void pbcCacheEvict(const char *dir, const PbcCacheEntry *keep) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  Item *items = NULL;
  int n = 0, cap = 0;
  time_t now = time(NULL);
  /* Records first (they name the live libraries), then libraries. */
  for (int pass = 0; pass < 2; ++pass) {
    rewinddir(d);
    for (struct dirent *ent; (ent = readdir(d));) {
      const char *name = ent->d_name;
      char path[4400];
      snprintf(path, sizeof(path), "%s/%s", dir, name);
      unsigned long long key, sum;
      int used = 0;
      struct stat st;
      if (strncmp(name, "pbc-", 4) != 0 || lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        continue;
      if (strstr(name, ".tmp")) {
        if (pass == 0 && now - st.st_mtime > STALE_SECONDS)
          unlink(path);
        continue;
      }
      if (pass == 0 && sscanf(name, "pbc-%16llx.sig%n", &key, &used) == 1 && !name[used]) {
        Item *it = itemFor(&items, &n, &cap, key);
        FILE *f = fopen(path, "r");
        long long size;
        it->hasRecord = f && readHeader(f, &key, &size, &it->sum);
        if (f)
          fclose(f);
        it->bytes += st.st_size;
        it->used = st.st_mtime;
      } else if (pass == 1 && sscanf(name, "pbc-%16llx-%16llx.so%n", &key, &sum, &used) == 2 &&
                 !name[used]) {
        Item *it = itemFor(&items, &n, &cap, key);
        if (!(it->hasRecord && it->sum == sum)) {
          if (now - st.st_mtime > GRACE_SECONDS)
            unlink(path); /* no record names it */
          continue;
        }
        it->bytes += st.st_size;
      }
    }
  }
  closedir(d);
  long long total = 0, limit = maxBytes();
  for (int i = 0; i < n; ++i)
    total += items[i].bytes;
  qsort(items, (size_t)n, sizeof(*items), byUse);
  for (int i = 0; i < n && total > limit; ++i) {
    if (!items[i].hasRecord || (keep && items[i].key == keep->key))
      continue;
    PbcCacheEntry e;
    pbcCacheEntryInit(&e, dir, items[i].key);
    libraryPath(&e, items[i].sum, e.lib, sizeof(e.lib));
    pbcCacheRemove(&e);
    total -= items[i].bytes;
  }
  free(items);
}
