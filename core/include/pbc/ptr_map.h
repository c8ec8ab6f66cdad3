/*===- pbc/ptr_map.h - Pointer-keyed maps --------------------------------===*\
|* A fixed-capacity map from pointers (an MLIR operation's or an LLVM       *|
|* value's) to non-negative ints, for passes that number the things they    *|
|* visit and look them up in constant time.                                 *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_PTR_MAP_H
#define PBC_PTR_MAP_H

#include <stddef.h>

typedef struct PbcPtrMap {
  const void **keys;
  int *values;
  size_t cap; /* a power of two, at least twice the entries */
} PbcPtrMap;

/* A map for up to `entries` keys. */
void pbcPtrMapInit(PbcPtrMap *m, size_t entries);
void pbcPtrMapDestroy(PbcPtrMap *m);
/* Sets key's value (key not NULL). */
void pbcPtrMapPut(PbcPtrMap *m, const void *key, int value);
/* key's value, or -1 if it has none. */
int pbcPtrMapGet(const PbcPtrMap *m, const void *key);

#endif
