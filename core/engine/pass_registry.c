/* The registry of pbc's own (core and plugin) passes. */
#include "pbc/pass_registry.h"

#include <stdio.h>
#include <string.h>

void pbcPassRegistryAdd(PbcPassRegistry *reg, const char *name,
                        const char *anchorOp, const char *summary,
                        PbcPassCreateFn create) {
  for (int i = 0; i < reg->numPasses; ++i)
    if (strcmp(reg->passes[i].name, name) == 0) {
      reg->passes[i] = (PbcPassInfo){name, anchorOp, summary, create};
      return;
    }
  int cap = (int)(sizeof(reg->passes) / sizeof(reg->passes[0]));
  if (reg->numPasses == cap) {
    fprintf(stderr, "pbc: warning: pass registry full, '%s' dropped\n", name);
    return;
  }
  reg->passes[reg->numPasses++] = (PbcPassInfo){name, anchorOp, summary, create};
}

const PbcPassInfo *pbcPassRegistryLookup(const PbcPassRegistry *reg,
                                         const char *name) {
  for (int i = 0; i < reg->numPasses; ++i)
    if (strcmp(reg->passes[i].name, name) == 0)
      return &reg->passes[i];
  return NULL;
}

static void hostRegisterPass(void *hostCtx, const char *name,
                             const char *anchorOp, const char *summary,
                             PbcPassCreateFn create) {
  pbcPassRegistryAdd((PbcPassRegistry *)hostCtx, name, anchorOp, summary,
                     create);
}

const PbcHostApi *pbcHostApi(void) {
  static const PbcHostApi api = {sizeof(PbcHostApi), PBC_PLUGIN_API_VERSION,
                                 hostRegisterPass};
  return &api;
}
