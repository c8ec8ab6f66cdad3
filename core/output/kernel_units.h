/*===- output/kernel_units.h - A model's kernels, one LLVM module each ----===*\
|* A kernel unit is a set of functions that reference only each other: an   *|
|* outlined nest (S4) and the parallel-region bodies it hands to OpenMP,    *|
|* with copies of the private constants they read. Each cacheable unit is   *|
|* cloned into a module of its own, its functions given canonical names for *|
|* the key (output/kernel_cache.h), then final names made of the key        *|
|* (pbc_kKEY_i, hidden): identical kernels of two models or two versions of *|
|* one model are one cache entry and define the same symbols. The unit's    *|
|* bodies leave the model's module, which keeps declarations of them.       *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_OUTPUT_KERNEL_UNITS_H
#define PBC_OUTPUT_KERNEL_UNITS_H

#include <stdbool.h>

#include "llvm-c/Core.h"
#include "output/kernel_cache.h"
#include "pbc/strbuf.h"

typedef struct PbcKernelUnit {
  PbcKernelKey key;
  bool hit;                    /* obj came from the cache */
  LLVMMemoryBufferRef bitcode; /* a miss: the unit's module to compile */
  PbcStrBuf obj;               /* its object code */
} PbcKernelUnit;

/* Takes the cacheable units out of `m` (keys start from `base`), looks each
 * up in the cache folder `dir`; returns them in *units (malloc'ed) and
 * their count. Units whose functions are not all local, or that read a
 * variable that is not a private constant, stay in m. */
int pbcKernelUnitsExtract(LLVMModuleRef m, PbcKernelKey base, const char *dir,
                          PbcKernelUnit **units);

#endif
