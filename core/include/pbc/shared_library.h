/*===- pbc/shared_library.h - AOT shared libraries -----------------------===*\
|* `--emit=lib` and libpbc turn an S5 module into a shared library: the     *|
|* object code, the target's runtime libraries (found again by rpath), and  *|
|* for each entry point F, besides `_mlir_ciface_F(in0*, ..., out0*, ...)`, *|
|* a packed form `_pbc_packed_F(void **descriptors)` so callers that only   *|
|* know the argument count at run time (libpbc, FFIs) need no per-arity     *|
|* call code.                                                               *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_SHARED_LIBRARY_H
#define PBC_SHARED_LIBRARY_H

#include <stdbool.h>

#include "mlir-c/IR.h"
#include "pbc/chip.h"
#include "pbc/entry_sig.h"
#include "pbc/plugin.h"

/* Generates code for m (LLVM dialect) on up to `jobs` threads, taking
 * compiled kernels from the kernel cache in kernelCacheDir and storing new
 * ones (NULL: the environment's folder, "": none; pbc/codegen.h), and links `outPath`; writes the C header too when
 * headerPath is not NULL. Errors go to stderr. */
bool pbcEmitSharedLibrary(MlirModule m, const PbcTargetPlugin *plugin,
                          const PbcChip *chip, int optLevel, int jobs, const char *kernelCacheDir,
                          const PbcEntrySig *sigs, int numSigs, const char *outPath,
                          const char *headerPath);

/* Writes the C header declaring the entry points of a library. */
bool pbcWriteHeader(const char *path, const char *libName,
                    const PbcEntrySig *sigs, int numSigs);

#endif
