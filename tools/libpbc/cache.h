/*===- cache.h - libpbc's on-disk cache of compiled programs -------------===*\
|* One entry is two files named by the key (a hash of everything the        *|
|* library depends on): `pbc-KEY.so` and `pbc-KEY.sig`. The .sig file is   *|
|* the commit record, written last: it holds the key, the library's size    *|
|* and checksum, and the entry signatures. An entry is loaded only after    *|
|* its .sig parses, names the same key, and the library has that size and   *|
|* checksum; anything else (truncated, empty, garbage, another key) is     *|
|* removed and rebuilt. Files are written under unique temporary names and  *|
|* renamed into place, so concurrent processes and threads never see a     *|
|* half-written entry; the folder is bounded by PBC_CACHE_MAX_MB (default   *|
|* 2048), least recently used entries going first.                          *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_LIBPBC_CACHE_H
#define PBC_LIBPBC_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pbc/entry_sig.h"

typedef struct PbcCacheEntry {
  char lib[4200], sig[4200];
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

void pbcCacheEntryPaths(const char *dir, uint64_t key, PbcCacheEntry *e);

/* Temporary names beside the entry, unique per process and call. */
void pbcCacheTempPaths(const PbcCacheEntry *e, PbcCacheEntry *tmp);

/* Writes the .sig of a freshly built library (size and checksum taken from
 * the file at `libPath`). */
bool pbcCacheWriteSig(const char *sigPath, const char *libPath, uint64_t key,
                      const PbcEntrySig *sigs, int n);

/* The signatures of a valid entry, or NULL: `*missing` says whether there
 * was no entry at all; otherwise `why` says what was wrong. */
PbcEntrySig *pbcCacheRead(const PbcCacheEntry *e, uint64_t key, int *n, bool *missing,
                          char *why, size_t whyLen);

/* Moves a built entry into place (library first, then its .sig). */
bool pbcCacheCommit(const PbcCacheEntry *tmp, const PbcCacheEntry *e);
void pbcCacheRemove(const PbcCacheEntry *e);
/* Marks an entry used now (for eviction order). */
void pbcCacheTouch(const PbcCacheEntry *e);
/* Removes least recently used entries (never `keep`) until the folder holds
 * at most the limit, and temporary files left by dead writers. */
void pbcCacheEvict(const char *dir, const PbcCacheEntry *keep);

#endif
