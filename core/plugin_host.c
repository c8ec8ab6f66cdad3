/* Discovers, loads and version-checks target plugins. */
#include "pbc/plugin_host.h"

#include <dirent.h>
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PREFIX "libpbc_target_"
#define SUFFIX ".so"

/* The smallest table a v1 host can read: everything up to runtime_libraries. */
static const size_t kMinTableSize =
    offsetof(PbcTargetPlugin, runtime_libraries) + sizeof(void *);

bool pbcPluginLoad(const char *path, PbcLoadedPlugin *out) {
  memset(out, 0, sizeof(*out));
  snprintf(out->path, sizeof(out->path), "%s", path);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(out->error, sizeof(out->error), "cannot load: %s", dlerror());
    return false;
  }
  PbcTargetPluginQueryFn query =
      (PbcTargetPluginQueryFn)dlsym(h, PBC_PLUGIN_QUERY_SYMBOL);
  if (!query) {
    snprintf(out->error, sizeof(out->error),
             "not a pbc target plugin: no symbol '%s'", PBC_PLUGIN_QUERY_SYMBOL);
    dlclose(h);
    return false;
  }
  const PbcTargetPlugin *t = query(PBC_PLUGIN_API_VERSION);
  if (!t) {
    snprintf(out->error, sizeof(out->error),
             "the plugin declined host plugin API version %u",
             PBC_PLUGIN_API_VERSION);
    dlclose(h);
    return false;
  }
  if (t->api_version < PBC_PLUGIN_API_VERSION_MIN ||
      t->api_version > PBC_PLUGIN_API_VERSION) {
    snprintf(out->error, sizeof(out->error),
             "incompatible plugin API version: the plugin has version %u, this "
             "pbc serves versions %u to %u",
             t->api_version, PBC_PLUGIN_API_VERSION_MIN, PBC_PLUGIN_API_VERSION);
    dlclose(h);
    return false;
  }
  if (t->struct_size < kMinTableSize) {
    snprintf(out->error, sizeof(out->error),
             "plugin table too small: %zu bytes, plugin API version %u needs at "
             "least %zu",
             t->struct_size, t->api_version, kMinTableSize);
    dlclose(h);
    return false;
  }
  if (!t->name || !*t->name || !t->chips || !t->chips[0]) {
    snprintf(out->error, sizeof(out->error),
             "plugin table has no name or no chip description");
    dlclose(h);
    return false;
  }
  out->table = t;
  out->handle = h;
  return true;
}

static bool nameTaken(const PbcPluginSet *set, const char *name) {
  for (int i = 0; i < set->numPlugins; ++i)
    if (set->plugins[i].table && strcmp(set->plugins[i].table->name, name) == 0)
      return true;
  return false;
}

static void scanDir(const char *dir, PbcPluginSet *set) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *ent;
  /* Sorted order keeps discovery deterministic. */
  char names[64][256];
  int n = 0;
  while ((ent = readdir(d)) && n < 64) {
    size_t len = strlen(ent->d_name);
    if (strncmp(ent->d_name, PREFIX, strlen(PREFIX)) == 0 &&
        len > strlen(SUFFIX) &&
        strcmp(ent->d_name + len - strlen(SUFFIX), SUFFIX) == 0)
      snprintf(names[n++], sizeof(names[0]), "%s", ent->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof(names[0]),
        (int (*)(const void *, const void *))strcmp);
  for (int i = 0; i < n && set->numPlugins < PBC_MAX_PLUGINS; ++i) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
    char resolved[4096];
    if (realpath(path, resolved)) {
      bool seen = false;
      for (int j = 0; j < set->numPlugins; ++j)
        if (strcmp(set->plugins[j].path, resolved) == 0)
          seen = true;
      if (seen)
        continue;
    } else {
      snprintf(resolved, sizeof(resolved), "%s", path);
    }
    PbcLoadedPlugin *p = &set->plugins[set->numPlugins];
    if (pbcPluginLoad(resolved, p) && nameTaken(set, p->table->name)) {
      dlclose(p->handle); /* an earlier directory already provides it */
      continue;
    }
    set->numPlugins++;
  }
}

void pbcPluginDiscover(const char *const *extraDirs, int numExtraDirs,
                       PbcPluginSet *set) {
  memset(set, 0, sizeof(*set));
  for (int i = 0; i < numExtraDirs; ++i)
    scanDir(extraDirs[i], set);
  const char *env = getenv("PBC_PLUGIN_PATH");
  if (env) {
    char *copy = strdup(env), *save = NULL;
    for (char *tok = strtok_r(copy, ":", &save); tok;
         tok = strtok_r(NULL, ":", &save))
      if (*tok)
        scanDir(tok, set);
    free(copy);
  }
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    exe[n] = 0;
    scanDir(dirname(exe), set);
  }
  /* Embedded (libpbc): also the directory of the library holding this code. */
  Dl_info info;
  char self[4096], selfReal[4096];
  if (dladdr((void *)&pbcPluginDiscover, &info) && info.dli_fname &&
      realpath(info.dli_fname, selfReal)) {
    snprintf(self, sizeof(self), "%s", dirname(selfReal));
    if (n <= 0 || strcmp(self, exe) != 0)
      scanDir(self, set);
  }
}

const PbcLoadedPlugin *pbcPluginFind(const PbcPluginSet *set, const char *name) {
  for (int i = 0; i < set->numPlugins; ++i)
    if (set->plugins[i].table && strcmp(set->plugins[i].table->name, name) == 0)
      return &set->plugins[i];
  return NULL;
}

void pbcPluginNames(const PbcPluginSet *set, char *buf, size_t len) {
  buf[0] = 0;
  size_t used = 0;
  for (int i = 0; i < set->numPlugins; ++i) {
    if (!set->plugins[i].table)
      continue;
    int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                     set->plugins[i].table->name);
    if (w < 0 || (size_t)w >= len - used)
      break;
    used += (size_t)w;
  }
  if (!used)
    snprintf(buf, len, "none found");
}
