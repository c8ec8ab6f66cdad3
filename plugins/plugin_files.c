/* Files that ship next to a plugin (see pbc/plugin_files.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include "pbc/plugin_files.h"

#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>

void pbcPluginFileBeside(const void *anchor, const char *file, char *out, size_t len) {
  Dl_info info;
  out[0] = 0;
  if (!dladdr(anchor, &info) || !info.dli_fname)
    return;
  char copy[4096];
  snprintf(copy, sizeof(copy), "%s", info.dli_fname);
  snprintf(out, len, "%s/%s", dirname(copy), file);
}
