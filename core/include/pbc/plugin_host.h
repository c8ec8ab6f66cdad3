/*===- pbc/plugin_host.h - Finding and loading target plugins ------------===*\
|* Plugins are files named libpbc_target_<name>.so, found in order in:        *|
|* --plugin-dir directories, $PBC_PLUGIN_PATH (':'-separated), and the        *|
|* directory of the running executable. The first plugin of a name wins.     *|
|* A plugin that cannot be loaded is reported (never a crash) and skipped.   *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_PLUGIN_HOST_H
#define PBC_PLUGIN_HOST_H

#include <stdbool.h>
#include <stddef.h>

#include "pbc/plugin.h"

#define PBC_MAX_PLUGINS 32

typedef struct PbcLoadedPlugin {
  const PbcTargetPlugin *table; /* NULL if it failed to load */
  void *handle;
  char path[4096];
  char error[512]; /* why it failed, if it did */
} PbcLoadedPlugin;

typedef struct PbcPluginSet {
  int numPlugins;
  PbcLoadedPlugin plugins[PBC_MAX_PLUGINS];
} PbcPluginSet;

/* Loads one plugin file; on failure returns false with out->error set. */
bool pbcPluginLoad(const char *path, PbcLoadedPlugin *out);
/* Scans the search path (extraDirs first). Failed loads are kept in the set
 * with their error, for --list-targets and for the error of --target. */
void pbcPluginDiscover(const char *const *extraDirs, int numExtraDirs,
                       PbcPluginSet *set);
/* A loaded plugin by target name, or NULL. */
const PbcLoadedPlugin *pbcPluginFind(const PbcPluginSet *set, const char *name);
/* Names of the loaded targets, comma separated, for error messages. */
void pbcPluginNames(const PbcPluginSet *set, char *buf, size_t len);

#endif
