/*===- pbc/pass_registry.h - Passes by name ------------------------------===*\
|* MLIR's C API cannot register a C-defined pass under a textual name, so    *|
|* pbc keeps its own registry of core and plugin passes. A pipeline entry     *|
|* whose name is not here is handed to MLIR's own pipeline parser.            *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_PASS_REGISTRY_H
#define PBC_PASS_REGISTRY_H

#include "pbc/plugin.h"

typedef struct PbcPassInfo {
  const char *name;
  const char *anchorOp;
  const char *summary;
  PbcPassCreateFn create;
} PbcPassInfo;

typedef struct PbcPassRegistry {
  int numPasses;
  PbcPassInfo passes[256];
} PbcPassRegistry;

void pbcPassRegistryAdd(PbcPassRegistry *reg, const char *name,
                        const char *anchorOp, const char *summary,
                        PbcPassCreateFn create);
const PbcPassInfo *pbcPassRegistryLookup(const PbcPassRegistry *reg,
                                         const char *name);
/* The core's own passes (core/passes/). */
void pbcRegisterCorePasses(PbcPassRegistry *reg);
/* The table handed to plugins; hostCtx is the PbcPassRegistry. */
const PbcHostApi *pbcHostApi(void);

#endif
