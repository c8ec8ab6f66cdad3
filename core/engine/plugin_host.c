/* Discovers, probes, loads and version-checks target plugins. See
 * pbc/plugin_host.h. */
#include "pbc/plugin_host.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <spawn.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define PREFIX "libpbc_target_"
#define SUFFIX ".so"
#define MAX_CANDIDATES 4096

/* The smallest table a v1 host can read: everything up to runtime_libraries. */
static const size_t kMinTableSize =
    offsetof(PbcTargetPlugin, runtime_libraries) + sizeof(void *);

static bool fail(PbcLoadedPlugin *out, void *handle, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool fail(PbcLoadedPlugin *out, void *handle, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out->error, sizeof(out->error), fmt, ap);
  va_end(ap);
  if (handle)
    dlclose(handle);
  return false;
}

bool pbcPluginLoad(const char *path, PbcLoadedPlugin *out) {
  memset(out, 0, sizeof(*out));
  snprintf(out->path, sizeof(out->path), "%s", path);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return fail(out, NULL, "cannot load: %s", dlerror());
  PbcTargetPluginQueryFn query =
      (PbcTargetPluginQueryFn)dlsym(h, PBC_PLUGIN_QUERY_SYMBOL);
  if (!query)
    return fail(out, h, "not a pbc target plugin: no symbol '%s'", PBC_PLUGIN_QUERY_SYMBOL);
  const PbcTargetPlugin *t = query(PBC_PLUGIN_API_VERSION);
  if (!t)
    return fail(out, h, "the plugin declined host plugin API version %u",
                PBC_PLUGIN_API_VERSION);
  if (t->api_version < PBC_PLUGIN_API_VERSION_MIN || t->api_version > PBC_PLUGIN_API_VERSION)
    return fail(out, h,
                "incompatible plugin API version: the plugin has version %u, this "
                "pbc serves versions %u to %u",
                t->api_version, PBC_PLUGIN_API_VERSION_MIN, PBC_PLUGIN_API_VERSION);
  if (t->struct_size < kMinTableSize)
    return fail(out, h,
                "plugin table too small: %zu bytes, plugin API version %u needs at "
                "least %zu",
                t->struct_size, t->api_version, kMinTableSize);
  if (!t->name || !*t->name || !t->chips || !t->chips[0])
    return fail(out, h, "plugin table has no name or no chip description");
  out->table = t;
  out->handle = h;
  return true;
}

static void addBroken(PbcPluginSet *set, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void addBroken(PbcPluginSet *set, const char *path, const char *fmt, ...) {
  if (set->numBroken >= PBC_MAX_BROKEN_PLUGINS) {
    set->numBrokenOmitted++;
    return;
  }
  PbcLoadedPlugin *b = &set->broken[set->numBroken++];
  memset(b, 0, sizeof(*b));
  snprintf(b->path, sizeof(b->path), "%s", path);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b->error, sizeof(b->error), fmt, ap);
  va_end(ap);
}

/* --- candidates ------------------------------------------------------------ */

typedef struct Candidates {
  int n;
  char **paths; /* resolved */
} Candidates;

static int compareNames(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static const char *fileKind(mode_t m) {
  return S_ISFIFO(m) ? "a FIFO" : S_ISDIR(m) ? "a directory" : S_ISCHR(m) ? "a device"
         : S_ISBLK(m) ? "a device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

/* Adds the plugin-named regular files of dir, sorted by name; reports the
 * rest. Nothing here opens a file: a FIFO cannot block discovery. */
static void scanDir(const char *dir, Candidates *c, PbcPluginSet *set) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  char **names = NULL;
  int n = 0, cap = 0;
  for (struct dirent *ent; (ent = readdir(d));) {
    size_t len = strlen(ent->d_name);
    if (strncmp(ent->d_name, PREFIX, strlen(PREFIX)) != 0 || len <= strlen(SUFFIX) ||
        strcmp(ent->d_name + len - strlen(SUFFIX), SUFFIX) != 0)
      continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      names = realloc(names, (size_t)cap * sizeof(*names));
    }
    names[n++] = strdup(ent->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof(*names), compareNames); /* deterministic order */
  for (int i = 0; i < n; ++i) {
    char path[4096], resolved[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
    free(names[i]);
    struct stat st;
    if (stat(path, &st) != 0) {
      addBroken(set, path, "cannot be read: %s", strerror(errno));
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      addBroken(set, path, "not a plugin: %s, not a regular file", fileKind(st.st_mode));
      continue;
    }
    if (!realpath(path, resolved))
      snprintf(resolved, sizeof(resolved), "%s", path);
    bool seen = false;
    for (int j = 0; j < c->n && !seen; ++j)
      seen = strcmp(c->paths[j], resolved) == 0;
    if (seen)
      continue;
    if (c->n >= MAX_CANDIDATES) {
      addBroken(set, path, "skipped: more than %d plugin files", MAX_CANDIDATES);
      continue;
    }
    if (c->n % 64 == 0)
      c->paths = realloc(c->paths, (size_t)(c->n + 64) * sizeof(*c->paths));
    c->paths[c->n++] = strdup(resolved);
  }
  free(names);
}

/* --- the probe ----------------------------------------------------------------- */

typedef enum { PROBE_UNKNOWN, PROBE_OK, PROBE_BROKEN } ProbeResult;

void pbcPluginProbeFiles(const char *const *paths, int n, int fd) {
  for (int i = 0; i < n; ++i) {
    PbcLoadedPlugin p;
    bool ok = pbcPluginLoad(paths[i], &p);
    for (char *e = p.error; *e; ++e)
      if (*e == '\n')
        *e = ' ';
    dprintf(fd, "%d %c %s\n", i, ok ? 'o' : 'e', ok ? "" : p.error);
  }
  _exit(0); /* no destructors of the host or of plugins */
}

static const char *probeHelper; /* set once, before any discovery */

void pbcPluginSetProbeHelper(const char *executable) { probeHelper = executable; }

enum { PROBE_BATCH = 256 }; /* paths per helper command line */

/* Starts a process that probes paths[first, first + *count) and reports
 * on the returned fd; -1 if none could start. */
static int startProbe(const Candidates *c, int first, int *count, pid_t *pid) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return -1;
  *count = c->n - first;
  if (probeHelper) {
    /* A threaded host (libpbc): a fresh process, never fork-and-continue. */
    if (*count > PROBE_BATCH)
      *count = PROBE_BATCH;
    const char **argv = calloc((size_t)*count + 3, sizeof(char *));
    argv[0] = probeHelper;
    argv[1] = "--probe-plugins";
    for (int i = 0; i < *count; ++i)
      argv[2 + i] = c->paths[first + i];
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    int err = posix_spawn(pid, probeHelper, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    free(argv);
    close(fds[1]);
    if (err) {
      close(fds[0]);
      return -1;
    }
    return fds[0];
  }
  *pid = fork();
  if (*pid == 0) {
    close(fds[0]);
    pbcPluginProbeFiles((const char *const *)c->paths + first, *count, fds[1]);
  }
  close(fds[1]);
  if (*pid < 0) {
    close(fds[0]);
    return -1;
  }
  return fds[0];
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Parses the child's lines; returns the index after the last reported. */
static int takeLines(char *buf, size_t *len, int first, int end, int next, ProbeResult *res,
                     char (*why)[512]) {
  char *line = buf, *nl;
  while ((nl = memchr(line, '\n', (size_t)(buf + *len - line)))) {
    *nl = 0;
    int i = -1, used = 0;
    char kind = 0;
    if (sscanf(line, "%d %c %n", &i, &kind, &used) >= 2 && i >= 0 &&
        first + i >= next && first + i < end) {
      i += first;
      res[i] = kind == 'o' ? PROBE_OK : PROBE_BROKEN;
      snprintf(why[i], sizeof(why[i]), "%s", line + used);
      next = i + 1;
    }
    line = nl + 1;
  }
  *len = (size_t)(buf + *len - line);
  memmove(buf, line, *len);
  return next;
}

/* Runs children until every candidate has a result; a candidate that takes
 * its child down is the broken one, and the next child starts after it.
 * If a child cannot start, candidates without a result stay
 * PROBE_UNKNOWN (loaded unprobed, as trusted code); results found before
 * stand. */
static void probe(const Candidates *c, ProbeResult *res, char (*why)[512]) {
  int next = 0;
  while (next < c->n) {
    int first = next, count;
    pid_t pid;
    int fd = startProbe(c, first, &count, &pid);
    if (fd < 0)
      return;
    char buf[8192];
    size_t len = 0;
    double deadline = now() + PBC_PLUGIN_PROBE_SECONDS;
    bool timedOut = false;
    for (;;) {
      struct pollfd p = {fd, POLLIN, 0};
      int wait = (int)((deadline - now()) * 1000);
      int r = wait > 0 ? poll(&p, 1, wait) : 0;
      if (r < 0 && errno == EINTR)
        continue;
      if (r == 0) {
        timedOut = true;
        kill(pid, SIGKILL);
        break;
      }
      ssize_t got = read(fd, buf + len, sizeof(buf) - 1 - len);
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0)
        break;
      len += (size_t)got;
      int before = next;
      next = takeLines(buf, &len, first, first + count, next, res, why);
      if (next > before)
        deadline = now() + PBC_PLUGIN_PROBE_SECONDS;
      if (len == sizeof(buf) - 1)
        len = 0; /* a line longer than the buffer: not ours */
    }
    close(fd);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
      ;
    if (next < first + count) {
      res[next] = PROBE_BROKEN;
      if (timedOut)
        snprintf(why[next], sizeof(why[next]), "did not finish loading within %d s",
                 PBC_PLUGIN_PROBE_SECONDS);
      else if (WIFSIGNALED(status))
        snprintf(why[next], sizeof(why[next]), "crashed while loading: signal %d (%s)",
                 WTERMSIG(status), strsignal(WTERMSIG(status)));
      else
        snprintf(why[next], sizeof(why[next]),
                 "ended the process while loading (exit status %d)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
      ++next;
    }
  }
}

/* --- discovery ------------------------------------------------------------------ */

static bool nameTaken(const PbcPluginSet *set, const char *name) {
  for (int i = 0; i < set->numPlugins; ++i)
    if (strcmp(set->plugins[i].table->name, name) == 0)
      return true;
  return false;
}

static void loadProbed(const Candidates *c, const ProbeResult *res, char (*why)[512],
                       PbcPluginSet *set) {
  for (int i = 0; i < c->n; ++i) {
    if (res[i] == PROBE_BROKEN) {
      addBroken(set, c->paths[i], "%s", why[i]);
      continue;
    }
    PbcLoadedPlugin p;
    if (!pbcPluginLoad(c->paths[i], &p)) {
      addBroken(set, c->paths[i], "%s", p.error);
      continue;
    }
    if (nameTaken(set, p.table->name)) {
      dlclose(p.handle); /* an earlier directory already provides it */
      continue;
    }
    if (set->numPlugins >= PBC_MAX_PLUGINS) {
      dlclose(p.handle);
      addBroken(set, c->paths[i], "skipped: more than %d usable plugins", PBC_MAX_PLUGINS);
      continue;
    }
    set->plugins[set->numPlugins++] = p;
  }
}

void pbcPluginDiscover(const char *const *extraDirs, int numExtraDirs,
                       PbcPluginSet *set) {
  memset(set, 0, sizeof(*set));
  Candidates c = {0};
  for (int i = 0; i < numExtraDirs; ++i)
    scanDir(extraDirs[i], &c, set);
  const char *env = getenv("PBC_PLUGIN_PATH");
  if (env) {
    char *copy = strdup(env), *save = NULL;
    for (char *tok = strtok_r(copy, ":", &save); tok; tok = strtok_r(NULL, ":", &save))
      if (*tok)
        scanDir(tok, &c, set);
    free(copy);
  }
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    exe[n] = 0;
    scanDir(dirname(exe), &c, set);
  }
  /* Embedded (libpbc): also the directory of the library holding this code. */
  Dl_info info;
  char self[4096], selfReal[PATH_MAX];
  if (dladdr((void *)&pbcPluginDiscover, &info) && info.dli_fname &&
      realpath(info.dli_fname, selfReal)) {
    snprintf(self, sizeof(self), "%s", dirname(selfReal));
    if (n <= 0 || strcmp(self, exe) != 0)
      scanDir(self, &c, set);
  }
  ProbeResult *res = calloc((size_t)(c.n ? c.n : 1), sizeof(*res));
  char(*why)[512] = calloc((size_t)(c.n ? c.n : 1), sizeof(*why));
  probe(&c, res, why);
  loadProbed(&c, res, why, set);
  for (int i = 0; i < c.n; ++i)
    free(c.paths[i]);
  free(c.paths);
  free(res);
  free(why);
}

const char *pbcPluginReplacedGroups(const PbcTargetPlugin *t) {
  size_t need = offsetof(PbcTargetPlugin, s3_replaced_groups) + sizeof(t->s3_replaced_groups);
  return t && t->struct_size >= need ? t->s3_replaced_groups : NULL;
}

const PbcLoadedPlugin *pbcPluginFind(const PbcPluginSet *set, const char *name) {
  for (int i = 0; i < set->numPlugins; ++i)
    if (strcmp(set->plugins[i].table->name, name) == 0)
      return &set->plugins[i];
  return NULL;
}

void pbcPluginNames(const PbcPluginSet *set, char *buf, size_t len) {
  buf[0] = 0;
  size_t used = 0;
  for (int i = 0; i < set->numPlugins; ++i) {
    int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                     set->plugins[i].table->name);
    if (w < 0 || (size_t)w >= len - used)
      break;
    used += (size_t)w;
  }
  if (!used)
    snprintf(buf, len, "none found");
}
