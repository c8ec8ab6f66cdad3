/*===- output/kernel_cache.h - Compiled kernels on disk -------------------===*\
|* Object code of one kernel (an outlined nest with its parallel-region      *|
|* bodies: output/kernel_units.h), keyed by its LLVM IR with names made      *|
|* canonical, the target machine (triple, CPU, features), the optimization   *|
|* level and this build of pbc. A model recompiled after a small change, or  *|
|* another model with the same layers, pays LLVM only for new kernels.       *|
|*                                                                          *|
|* Folder: the one named (pbc --kernel-cache-dir, which libpbc sets to its  *|
|* own cache folder's kernels/), else $PBC_KERNEL_CACHE_DIR, else           *|
|* $PBC_CACHE_DIR/kernels, else $XDG_CACHE_HOME/pbc/kernels or             *|
|* ~/.cache/pbc/kernels. "" or "off" for the folder, "" for $PBC_CACHE_DIR  *|
|* (libpbc's "no cache"), or a folder that cannot be made means no cache.   *|
|* An entry is one file, k-KEY.o.pbc:                                       *|
|* a header line with the key, size and checksum of the object after it.    *|
|* Entries are written to a temporary file and renamed into place (other    *|
|* processes see a whole entry or none); one that fails its check is        *|
|* removed and compiled again. Bounded by $PBC_KERNEL_CACHE_MAX_MB (default *|
|* 1024): the least recently used go first.                                 *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_OUTPUT_KERNEL_CACHE_H
#define PBC_OUTPUT_KERNEL_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pbc/strbuf.h"

typedef struct PbcKernelKey {
  uint64_t h[2];
} PbcKernelKey;

/* 128 bits of FNV-1a (two seeds) over bytes, continuing from `k`. */
void pbcKernelKeyAdd(PbcKernelKey *k, const void *data, size_t n);
/* The key's 32 hex digits and a NUL. */
void pbcKernelKeyHex(const PbcKernelKey *k, char out[33]);
/* The start of every key: pbc's build (its core library's size and time)
 * and the LLVM it links. */
PbcKernelKey pbcKernelKeyBase(void);

/* The cache's folder into dir: `named` if not NULL, else from the
 * environment; false if there is none (off, or unusable). */
bool pbcKernelCacheFolder(const char *named, char *dir, size_t len);
/* The object stored under `key` into *obj (appended); false on a miss or a
 * damaged entry (removed). A hit marks the entry used. */
bool pbcKernelCacheGet(const char *dir, const PbcKernelKey *key, PbcStrBuf *obj);
/* Stores an object; failures are silent (the cache is an optimization). */
void pbcKernelCachePut(const char *dir, const PbcKernelKey *key, const void *obj, size_t n);
/* Removes the least recently used entries while the folder holds more than
 * its bound. */
void pbcKernelCacheEvict(const char *dir);
/* Prints the folder (as pbcKernelCacheFolder finds it), its entries and
 * their size (pbc --cache-stats). */
void pbcKernelCachePrintStats(FILE *out, const char *named);

#endif
