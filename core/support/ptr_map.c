/* Pointer-keyed maps: open addressing with linear probing (pbc/ptr_map.h). */
#include "pbc/ptr_map.h"

#include <stdint.h>
#include <stdlib.h>

void pbcPtrMapInit(PbcPtrMap *m, size_t entries) {
  for (m->cap = 16; m->cap < 2 * entries; m->cap *= 2)
    ;
  m->keys = calloc(m->cap, sizeof(const void *));
  m->values = calloc(m->cap, sizeof(int));
}

void pbcPtrMapDestroy(PbcPtrMap *m) {
  free(m->keys);
  free(m->values);
  m->keys = NULL;
  m->values = NULL;
  m->cap = 0;
}

static size_t slotOf(const PbcPtrMap *m, const void *key) {
  size_t i = (size_t)(((uintptr_t)key >> 4) * 0x9E3779B97F4A7C15ull) & (m->cap - 1);
  while (m->keys[i] && m->keys[i] != key)
    i = (i + 1) & (m->cap - 1);
  return i;
}

void pbcPtrMapPut(PbcPtrMap *m, const void *key, int value) {
  size_t i = slotOf(m, key);
  m->keys[i] = key;
  m->values[i] = value;
}

int pbcPtrMapGet(const PbcPtrMap *m, const void *key) {
  size_t i = slotOf(m, key);
  return m->keys[i] ? m->values[i] : -1;
}
