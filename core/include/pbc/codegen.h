/*===- pbc/codegen.h - From the LLVM dialect to files --------------------===*\
|* After S5 the module is LLVM dialect (plus embedded device binaries). This *|
|* translates it to LLVM IR, optimizes it for the chosen chip, and writes    *|
|* assembly or an object file (shared libraries: pbc/shared_library.h).           *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_CODEGEN_H
#define PBC_CODEGEN_H

#include <stdbool.h>
#include <stdio.h>

#include "mlir-c/IR.h"
#include "pbc/chip.h"
#include "pbc/entry_sig.h"
#include "pbc/plugin.h"
#include "pbc/strbuf.h"

/* The most parts (and threads) pbcCodegenParts splits object code into. */
enum { PBC_MAX_CODEGEN_PARTS = 64 };

typedef enum PbcCodegenKind {
  PBC_CODEGEN_LLVM_IR,
  PBC_CODEGEN_ASM,
  PBC_CODEGEN_OBJ,
} PbcCodegenKind;

/* Translates, optimizes at optLevel for the chip, and emits into `out`. */
bool pbcCodegen(MlirModule m, const PbcTargetPlugin *plugin, const PbcChip *chip,
                int optLevel, PbcCodegenKind kind, PbcStrBuf *out);

/* The same, but object code may come as several relocatable objects,
 * (*outs)[0 .. *numOuts) (malloc'ed; the caller destroys and frees them),
 * optimized and emitted on up to maxParts threads: the LLVM module split
 * into parts that link together (output/module_split.h), and each cacheable
 * kernel as an object of its own, taken from the kernel cache or compiled
 * and stored there (output/kernel_cache.h; kernelCacheDir: its folder, NULL
 * for the environment's, "" for none). Only
 * object code is split or cached, and only modules without constructors;
 * everything else comes as one output. */
bool pbcCodegenParts(MlirModule m, const PbcTargetPlugin *plugin, const PbcChip *chip,
                     int optLevel, PbcCodegenKind kind, int maxParts,
                     const char *kernelCacheDir, PbcStrBuf **outs, int *numOuts);

/* The kernels the last pbcCodegenParts on this thread found in the cache
 * and compiled. */
void pbcCodegenKernelCacheCounts(int *hits, int *compiled);

/* Prints the kernel cache's folder and size (pbc --cache-stats). */
void pbcCodegenPrintKernelCache(FILE *out, const char *kernelCacheDir);

/* How many threads code generation may use here: the CPUs this process may
 * run on. */
int pbcCodegenDefaultJobs(void);
#endif
