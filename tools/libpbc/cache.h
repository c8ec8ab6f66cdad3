/*===- cache.h - libpbc's on-disk cache of compiled programs -------------===*\
|* An entry is a commit record `pbc-KEY.sig` (KEY: a hash of everything the *|
|* library depends on) naming its library `pbc-KEY-SUM.so` (SUM: the       *|
|* library's checksum) with its size, followed by the entry signatures. A   *|
|* library is renamed into place under its own checksum before the record   *|
|* that names it, so a record never names a half-written or another        *|
|* writer's library, and concurrent writers of one key (whose libraries    *|
|* may differ in bytes) each leave a consistent entry; the last record      *|
|* wins. An entry is loaded only after its record parses, names the key,   *|
|* and its library has the recorded size and checksum; anything else is    *|
|* removed and rebuilt. The folder is bounded by $PBC_CACHE_MAX_MB (default *|
|* 2048): least recently used entries go first, then libraries no record   *|
|* names and temporary files left by dead writers.                          *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_LIBPBC_CACHE_H
#define PBC_LIBPBC_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pbc/entry_sig.h"

typedef struct PbcCacheEntry {
  char dir[4096];
  uint64_t key;
  char sig[4200]; /* the commit record */
  char lib[4200]; /* the library, once known (read or committed) */
} PbcCacheEntry;

uint64_t pbcHashBytes(uint64_t h, const void *data, size_t n);
uint64_t pbcHashString(uint64_t h, const char *s);
/* Path, size and modification time of a file. */
uint64_t pbcHashFileIdentity(uint64_t h, const char *path);

/* The cache folder for the option value `optionDir` (NULL: $PBC_CACHE_DIR,
 * else $XDG_CACHE_HOME/pbc or ~/.cache/pbc; "": none), created if missing.
 * `dir` is "" when there is no cache. A folder the caller named (option or
 * $PBC_CACHE_DIR) that cannot be used is an error (false, `why` set); the
 * default folder unusable just means no cache. */
bool pbcCacheFolder(const char *optionDir, char *dir, size_t len, char *why, size_t whyLen);

void pbcCacheEntryInit(PbcCacheEntry *e, const char *dir, uint64_t key);
/* A path prefix for temporary files of e, unique per process and call. */
void pbcCacheTempBase(const PbcCacheEntry *e, char *out, size_t len);

/* The signatures of a valid entry (e->lib set), or NULL: `*missing` says
 * there was no record at all; otherwise `why` says what was wrong. */
PbcEntrySig *pbcCacheRead(PbcCacheEntry *e, int *n, bool *missing, char *why, size_t whyLen);
/* Moves the library built at tmpLib into place and writes the record. */
bool pbcCacheCommit(PbcCacheEntry *e, const char *tmpLib, const PbcEntrySig *sigs, int n,
                    char *why, size_t whyLen);
/* Removes the record (and its library when known). */
void pbcCacheRemove(const PbcCacheEntry *e);
/* Marks an entry used now (for eviction order). */
void pbcCacheTouch(const PbcCacheEntry *e);
/* Bounds the folder (see above); never removes `keep`. */
void pbcCacheEvict(const char *dir, const PbcCacheEntry *keep);

#endif
