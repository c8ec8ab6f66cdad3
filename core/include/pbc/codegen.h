/*===- pbc/codegen.h - From the LLVM dialect to files --------------------===*\
|* After S5 the module is LLVM dialect (plus embedded device binaries). This *|
|* translates it to LLVM IR, optimizes it for the chosen chip, and writes    *|
|* assembly or an object file (shared libraries: pbc/shared_library.h).           *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_CODEGEN_H
#define PBC_CODEGEN_H

#include <stdbool.h>

#include "mlir-c/IR.h"
#include "pbc/chip.h"
#include "pbc/entry_sig.h"
#include "pbc/plugin.h"
#include "pbc/strbuf.h"

typedef enum PbcCodegenKind {
  PBC_CODEGEN_LLVM_IR,
  PBC_CODEGEN_ASM,
  PBC_CODEGEN_OBJ,
} PbcCodegenKind;

/* Translates, optimizes at optLevel for the chip, and emits. */
bool pbcCodegen(MlirModule m, const PbcTargetPlugin *plugin, const PbcChip *chip,
                int optLevel, PbcCodegenKind kind, PbcStrBuf *out);
#endif
