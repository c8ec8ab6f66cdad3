/*===- pbc/plugin_host.h - Finding and loading target plugins ------------===*\
|* Plugins are files named libpbc_target_<name>.so, found in order in:        *|
|* --plugin-dir directories, $PBC_PLUGIN_PATH (':'-separated), and the        *|
|* directory of the running executable (and of libpbc). The first plugin of  *|
|* a name wins.                                                               *|
|*                                                                          *|
|* A plugin is code that runs in the host, so discovery first loads every    *|
|* candidate in a child process: a file that is not a regular file (a FIFO,  *|
|* a symlink loop), that cannot be loaded, whose constructor or query        *|
|* crashes, ends the process or hangs (past PBC_PLUGIN_PROBE_SECONDS), is     *|
|* reported as broken with the reason and never loaded here. Broken entries  *|
|* are kept apart from usable plugins, so no number of them can crowd out a  *|
|* good one. What passes the probe is trusted from then on.                  *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_PLUGIN_HOST_H
#define PBC_PLUGIN_HOST_H

#include <stdbool.h>
#include <stddef.h>

#include "pbc/plugin.h"

#define PBC_MAX_PLUGINS 32        /* usable plugins */
#define PBC_MAX_BROKEN_PLUGINS 16 /* broken entries reported in full */
#define PBC_PLUGIN_PROBE_SECONDS 5

typedef struct PbcLoadedPlugin {
  const PbcTargetPlugin *table; /* NULL if it failed to load */
  void *handle;
  char path[4096];
  char error[512]; /* why it failed, if it did */
} PbcLoadedPlugin;

typedef struct PbcPluginSet {
  int numPlugins; /* usable plugins, in discovery order */
  PbcLoadedPlugin plugins[PBC_MAX_PLUGINS];
  int numBroken;        /* broken entries in broken[] */
  int numBrokenOmitted; /* further broken entries, only counted */
  PbcLoadedPlugin broken[PBC_MAX_BROKEN_PLUGINS];
} PbcPluginSet;

/* Loads one plugin file into this process, unprobed; on failure returns
 * false with out->error set. */
bool pbcPluginLoad(const char *path, PbcLoadedPlugin *out);
/* Scans the search path (extraDirs first), probes the candidates and loads
 * those that passed. */
void pbcPluginDiscover(const char *const *extraDirs, int numExtraDirs,
                       PbcPluginSet *set);
/* A threaded host (libpbc) names an executable whose `--probe-plugins
 * PATH...` mode is pbcPluginProbeFiles (the pbc driver): probes then run in
 * a new process, since fork-and-continue is unsafe with other threads. Set
 * once, before discovery. */
void pbcPluginSetProbeHelper(const char *executable);
/* Loads each path and writes "INDEX o" or "INDEX e REASON" lines to fd,
 * then ends the process (_exit(0)). */
void pbcPluginProbeFiles(const char *const *paths, int n, int fd) __attribute__((noreturn));

/* The plugin's s3_replaced_groups, read only where its table has the field
 * (API version 2 on); NULL for none or an older plugin. */
const char *pbcPluginReplacedGroups(const PbcTargetPlugin *t);

/* A loaded plugin by target name, or NULL. */
const PbcLoadedPlugin *pbcPluginFind(const PbcPluginSet *set, const char *name);
/* Names of the loaded targets, comma separated, for error messages. */
void pbcPluginNames(const PbcPluginSet *set, char *buf, size_t len);

#endif
