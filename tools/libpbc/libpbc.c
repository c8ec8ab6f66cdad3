/* libpbc: compile a program with the pbc driver, run as a new process, into
 * a cached shared library, load it, and hand out its entry points. See
 * pbc/libpbc.h; the cache is cache.c, checked calls invoke.c. */
#include "pbc/libpbc.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache.h"
#include "llvm-c/Core.h"
#include "llvm-c/TargetMachine.h"
#include "pbc/entry_sig.h"
#include "pbc/plugin_host.h"
#include "pbc/strbuf.h"
#include "pbc/target_select.h"
#include "program.h"

extern char **environ;

enum { MESSAGE_LIMIT = 65536 };

/* --- messages ------------------------------------------------------------ */

char *pbcLibMessage(const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  size_t len = (size_t)(n > 0 ? n : 0) + 1;
  if (len > MESSAGE_LIMIT)
    len = MESSAGE_LIMIT;
  char *m = malloc(len);
  vsnprintf(m, len, fmt, ap2);
  va_end(ap2);
  va_end(ap);
  return m;
}

void pbcLibSetError(char **error, char *msg) {
  if (error)
    *error = msg;
  else
    free(msg);
}

void pbcMessageDestroy(char *m) { free(m); }

const char *pbcVersion(void) { return "pbc 0.1.0 (libpbc, MLIR/LLVM 22)"; }

static const char *driver(void);

/* --- plugins: discovered once per folder, never changed after --------------- */

typedef struct PluginFolder {
  char *dir; /* NULL: the default search path only */
  PbcPluginSet *set;
  struct PluginFolder *next;
} PluginFolder;

static pthread_mutex_t pluginsMutex = PTHREAD_MUTEX_INITIALIZER;
static PluginFolder *pluginFolders; /* kept for the life of the process: plugins'
                                       code runs in us */

static const PbcPluginSet *pluginsFor(const char *dir) {
  pthread_mutex_lock(&pluginsMutex);
  PluginFolder *f = pluginFolders;
  while (f && !(dir ? f->dir && strcmp(f->dir, dir) == 0 : !f->dir))
    f = f->next;
  if (!f) {
    f = calloc(1, sizeof(*f));
    f->dir = dir ? strdup(dir) : NULL;
    f->set = malloc(sizeof(PbcPluginSet));
    const char *dirs[1] = {dir};
    pbcPluginSetProbeHelper(driver());
    pbcPluginDiscover(dirs, dir ? 1 : 0, f->set);
    f->next = pluginFolders;
    pluginFolders = f;
  }
  pthread_mutex_unlock(&pluginsMutex);
  return f->set;
}

/* --- compilation: the pbc driver in a new process ---------------------------- */

/* The pbc driver beside this library (build/bin/), or in Bazel's layout
 * (bin/tools/pbc/pbc from bin/tools/libpbc/); $PBC_DRIVER overrides. Found
 * once. A new process, never fork-and-continue: in a threaded host a
 * forked child can wait forever on a lock another thread held (glibc's
 * atexit lock did in the stress test). */
static char driverPath[4200];
static void findDriver(void) {
  const char *env = getenv("PBC_DRIVER");
  if (env && *env) {
    snprintf(driverPath, sizeof(driverPath), "%s", env);
    return;
  }
  Dl_info info;
  char self[PATH_MAX];
  if (!dladdr((void *)&pbcProgramCompile, &info) || !info.dli_fname ||
      !realpath(info.dli_fname, self))
    return;
  char *slash = strrchr(self, '/');
  if (slash)
    *slash = 0;
  const char *candidates[] = {"pbc", "../pbc/pbc"};
  for (int i = 0; i < 2; ++i) {
    snprintf(driverPath, sizeof(driverPath), "%s/%s", self, candidates[i]);
    if (access(driverPath, X_OK) == 0)
      return;
  }
  driverPath[0] = 0;
}

static const char *driver(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, findDriver);
  return driverPath[0] ? driverPath : NULL;
}

/* Reads fd to its end, keeping the first `limit` bytes. */
static void drain(int fd, PbcStrBuf *out, size_t limit) {
  size_t kept = 0, dropped = 0;
  char chunk[16384];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    size_t take = kept >= limit ? 0 : (size_t)n < limit - kept ? (size_t)n : limit - kept;
    pbcStrBufAppend(out, chunk, take);
    kept += take;
    dropped += (size_t)n - take;
  }
  if (dropped)
    pbcStrBufPrintf(out, "\n... (%zu more bytes of diagnostics omitted)\n", dropped);
}

/* --- loading ---------------------------------------------------------------- */

/* A private copy of the library at `path` (named in *copy), loaded: a
 * program whose arguments are marked pbc.invariant keeps their packed tiles
 * in the library's globals (S3's pbc-pack-once), which must not be shared
 * with another program compiled from the same text (other weights) that
 * dlopen would otherwise hand the same loaded library. The copy stays on
 * disk while loaded (profilers read its symbols) and is removed by
 * pbcProgramDestroy; its `.tmp` name lets the cache's cleanup remove one a
 * crashed process left. */
static void *openPrivateCopy(const char *path, char *copy, size_t copyLen) {
  static const char kSuffix[] = ".tmp";
  snprintf(copy, copyLen, "%s.XXXXXX%s", path, kSuffix);
  int out = mkstemps(copy, (int)strlen(kSuffix));
  if (out < 0)
    return NULL;
  int in = open(path, O_RDONLY);
  bool ok = in >= 0;
  char buf[1 << 16];
  for (ssize_t got; ok && (got = read(in, buf, sizeof(buf))) != 0;)
    ok = got > 0 && write(out, buf, (size_t)got) == got;
  if (in >= 0)
    close(in);
  ok &= close(out) == 0;
  void *h = ok ? dlopen(copy, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!h) {
    unlink(copy);
    copy[0] = 0;
  }
  return h;
}

static PbcProgram *load(const char *libPath, bool privateCopy, PbcEntrySig *sigs, int n,
                        char **error) {
  char copy[sizeof(((PbcProgram *)0)->privateCopy)] = "";
  void *h = privateCopy ? openPrivateCopy(libPath, copy, sizeof(copy))
                        : dlopen(libPath, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    free(sigs);
    pbcLibSetError(error, pbcLibMessage("libpbc: cannot load the compiled program: %s",
                                        why ? why : strerror(errno)));
    return NULL;
  }
  PbcProgram *p = calloc(1, sizeof(*p));
  p->handle = h;
  p->numEntries = n;
  p->sigs = sigs;
  p->ciface = calloc((size_t)(n ? n : 1), sizeof(void *));
  p->packed = calloc((size_t)(n ? n : 1), sizeof(*p->packed));
  snprintf(p->libPath, sizeof(p->libPath), "%s", libPath);
  snprintf(p->privateCopy, sizeof(p->privateCopy), "%s", copy);
  for (int i = 0; i < n; ++i) {
    char sym[sizeof(sigs[0].name) + 16];
    snprintf(sym, sizeof(sym), "_mlir_ciface_%s", sigs[i].name);
    p->ciface[i] = dlsym(h, sym);
    snprintf(sym, sizeof(sym), "_pbc_packed_%s", sigs[i].name);
    *(void **)&p->packed[i] = dlsym(h, sym);
    if (!p->ciface[i] || !p->packed[i]) {
      pbcLibSetError(error, pbcLibMessage("libpbc: the compiled program lacks entry '%s'",
                                          sigs[i].name));
      pbcProgramDestroy(p);
      return NULL;
    }
  }
  return p;
}

/* The file holding `symbol` (libpbc.so itself, libpbc_core.so). */
static const char *fileOf(void *symbol) {
  Dl_info info;
  return dladdr(symbol, &info) ? info.dli_fname : NULL;
}

static char hostText[4096];
static void describeHost(void) {
  char *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
  snprintf(hostText, sizeof(hostText), "%s %s", cpu, features);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(features);
}

/* The key: everything the library depends on. */
static uint64_t programKey(const char *text, const char *shapes, const PbcLoadedPlugin *plugin,
                           const PbcChip *chip, const char *disable, int opt) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, describeHost);
  PbcStrBuf chipText = {0};
  pbcChipPrint(chip, &chipText);
  uint64_t key = pbcHashString(1469598103934665603ull, pbcVersion());
  key = pbcHashString(key, text);
  key = pbcHashString(key, shapes);
  key = pbcHashString(key, plugin->table->name);
  key = pbcHashString(key, chipText.data);
  key = pbcHashString(key, hostText);
  key = pbcHashString(key, disable);
  key = pbcHashBytes(key, &opt, sizeof(opt));
  /* The compiler: the plugin, the driver that runs the stages, the core it
   * links and libpbc (a rebuilt compiler must not find the old libraries). */
  key = pbcHashFileIdentity(key, plugin->path);
  key = pbcHashFileIdentity(key, driver());
  key = pbcHashFileIdentity(key, fileOf((void *)&pbcSelectTarget));
  key = pbcHashFileIdentity(key, fileOf((void *)&pbcProgramCompile));
  pbcStrBufDestroy(&chipText);
  return key;
}

/* --- one compile of a key at a time in this process -------------------------- */

static pthread_mutex_t inflightMutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t inflightDone = PTHREAD_COND_INITIALIZER;
static uint64_t inflight[256];
static int numInflight;

static void claimKey(uint64_t key) {
  pthread_mutex_lock(&inflightMutex);
  for (;;) {
    bool busy = false;
    for (int i = 0; i < numInflight && !busy; ++i)
      busy = inflight[i] == key;
    if (!busy && numInflight < 256)
      break;
    pthread_cond_wait(&inflightDone, &inflightMutex);
  }
  inflight[numInflight++] = key;
  pthread_mutex_unlock(&inflightMutex);
}

static void releaseKey(uint64_t key) {
  pthread_mutex_lock(&inflightMutex);
  for (int i = 0; i < numInflight; ++i)
    if (inflight[i] == key) {
      inflight[i] = inflight[--numInflight];
      break;
    }
  pthread_cond_broadcast(&inflightDone);
  pthread_mutex_unlock(&inflightMutex);
}

/* --- pbcProgramCompile ------------------------------------------------------ */

typedef struct Request {
  const char *text, *name;
  const char *shapes; /* NULL: none */
  PbcCompileOptions o;
  const PbcLoadedPlugin *plugin;
  PbcChip chip;
  int opt;
  uint64_t key;
  const char *cacheFolder; /* "": no cache */
  bool hasState;           /* pbc.invariant arguments: see openPrivateCopy */
} Request;

/* Runs `pbc --emit=lib` on the text (its stdin, a memory file) into
 * `libPath`, the signatures into `sigsPath`; diagnostics into diag. */
static bool runDriver(const Request *r, const char *libPath, const char *sigsPath,
                      PbcStrBuf *diag) {
  const char *exe = driver();
  int in = memfd_create("pbc-input", MFD_CLOEXEC), errPipe[2] = {-1, -1};
  size_t len = strlen(r->text);
  bool ok = in >= 0 && pipe2(errPipe, O_CLOEXEC) == 0;
  for (size_t done = 0; ok && done < len;) {
    ssize_t w = write(in, r->text + done, len - done);
    if (w < 0 && errno == EINTR)
      continue;
    ok = w > 0;
    done += w > 0 ? (size_t)w : 0;
  }
  ok = ok && lseek(in, 0, SEEK_SET) == 0;
  char args[10][4400];
  int na = 0;
  const char *argv[24];
  int n = 0;
  argv[n++] = exe;
  argv[n++] = "--emit=lib";
#define ARG(...) (snprintf(args[na], sizeof(args[na]), __VA_ARGS__), argv[n++] = args[na++])
  ARG("-O%d", r->opt);
  ARG("--target=%s", r->plugin->table->name);
  if (r->o.chip)
    ARG("--chip=%s", r->o.chip);
  if (r->o.disable && *r->o.disable)
    ARG("--disable=%s", r->o.disable);
  if (r->o.pluginDir)
    ARG("--plugin-dir=%s", r->o.pluginDir);
  ARG("--input-name=%s", r->name);
  if (r->shapes)
    ARG("--shape=%s", r->shapes);
  /* Kernels go with the caller's cache (none without one), unless the
   * environment names their folder (the driver reads it). */
  if (!getenv("PBC_KERNEL_CACHE_DIR"))
    ARG("--kernel-cache-dir=%s%s", r->cacheFolder, r->cacheFolder[0] ? "/kernels" : "");
  ARG("--signatures=%s", sigsPath);
#undef ARG
  argv[n++] = "-o";
  argv[n++] = libPath;
  argv[n++] = "-";
  argv[n] = NULL;
  pid_t pid = -1;
  if (ok) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, errPipe[1], 2);
    int err = posix_spawn(&pid, exe, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (err) {
      pbcStrBufPrintf(diag, "libpbc: error: cannot run '%s': %s", exe, strerror(err));
      ok = false;
    }
  } else {
    pbcStrBufPrintf(diag, "libpbc: error: cannot pass the program to the driver: %s",
                    strerror(errno));
  }
  if (in >= 0)
    close(in);
  if (errPipe[1] >= 0)
    close(errPipe[1]);
  if (ok)
    drain(errPipe[0], diag, MESSAGE_LIMIT - 256);
  if (errPipe[0] >= 0)
    close(errPipe[0]);
  if (!ok)
    return false;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) { /* SIGCHLD ignored by the host: judge by the files */
      status = access(sigsPath, R_OK) == 0 ? 0 : 1 << 8;
      break;
    }
  }
  if (WIFSIGNALED(status))
    pbcStrBufPrintf(diag, "%slibpbc: error: the pbc driver was killed by signal %d (%s)",
                    diag->len ? "\n" : "", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && !diag->len)
    pbcStrBufPrintf(diag, "libpbc: error: compilation failed (exit status %d)",
                    WEXITSTATUS(status));
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static PbcEntrySig *readSigsFile(const char *path, int *n) {
  FILE *f = fopen(path, "r");
  PbcEntrySig *sigs = f ? pbcEntrySigsRead(f, n) : NULL;
  if (f)
    fclose(f);
  return sigs;
}

/* Builds the program and loads it: from the cache entry it commits, or,
 * without a cache or when the commit fails, from the temporary library. */
static PbcProgram *build(const Request *r, PbcCacheEntry *e, bool cached, char **error) {
  char base[4300], tmpLib[4400], tmpSigs[4400], tmpHeader[4400];
  pbcCacheTempBase(e, base, sizeof(base));
  snprintf(tmpLib, sizeof(tmpLib), "%s.so", base);
  snprintf(tmpSigs, sizeof(tmpSigs), "%s.entries", base);
  snprintf(tmpHeader, sizeof(tmpHeader), "%s.h", base); /* the driver's C header */
  PbcStrBuf diag = {0};
  bool ok = runDriver(r, tmpLib, tmpSigs, &diag);
  int n = 0;
  PbcEntrySig *sigs = ok ? readSigsFile(tmpSigs, &n) : NULL;
  if (ok && !sigs)
    pbcStrBufPrintf(&diag, "libpbc: error: the driver's signatures '%s' are unreadable",
                    tmpSigs);
  unlink(tmpSigs);
  unlink(tmpHeader);
  PbcProgram *p = NULL;
  char why[4600];
  if (!sigs) {
    while (diag.len && diag.data[diag.len - 1] == '\n')
      diag.data[--diag.len] = 0;
    pbcLibSetError(error, pbcLibMessage("%s", diag.len ? diag.data : "libpbc: compilation failed"));
  } else if (cached && pbcCacheCommit(e, tmpLib, sigs, n, why, sizeof(why))) {
    pbcCacheEvict(e->dir, e);
    p = load(e->lib, r->hasState, sigs, n, error);
  } else {
    /* No cache, or the record could not be written (the library may have
     * moved into place already): load what exists; it stays loaded once
     * unlinked. */
    bool fresh = access(tmpLib, R_OK) == 0 || !e->lib[0]; /* this compile's own file */
    p = load(fresh ? tmpLib : e->lib, r->hasState && !fresh, sigs, n, error);
  }
  unlink(tmpLib);
  pbcStrBufDestroy(&diag);
  return p;
}

/* Loads the valid cache entry, or builds it (again, when it was bad). */
static PbcProgram *loadOrBuild(const Request *r, PbcCacheEntry *e, bool cached, char **error) {
  char why[512];
  bool missing;
  int n = 0;
  PbcEntrySig *sigs = cached ? pbcCacheRead(e, &n, &missing, why, sizeof(why)) : NULL;
  if (sigs) {
    pbcCacheTouch(e);
    return load(e->lib, r->hasState, sigs, n, error);
  }
  if (cached && !missing)
    pbcCacheRemove(e); /* corrupt or stale: rebuilt below */
  return build(r, e, cached, error);
}

PbcProgram *pbcProgramCompile(const char *text, const char *name,
                              const PbcCompileOptions *options, char **error) {
  return pbcProgramCompileShaped(text, name, options, NULL, error);
}

PbcProgram *pbcProgramCompileShaped(const char *text, const char *name,
                                    const PbcCompileOptions *options, const char *shapes,
                                    char **error) {
  if (error)
    *error = NULL;
  if (!text) {
    pbcLibSetError(error, pbcLibMessage("libpbc: no program text (NULL)"));
    return NULL;
  }
  if (!driver()) {
    /* Both compiling and probing plugins run the driver: without it there
     * is nothing safe to do in a threaded host. */
    pbcLibSetError(error, pbcLibMessage("libpbc: cannot find the pbc driver beside libpbc "
                                        "(set PBC_DRIVER to its path)"));
    return NULL;
  }
  if (shapes && strlen(shapes) > 4000) {
    pbcLibSetError(error, pbcLibMessage("libpbc: shapes of more than 4000 characters"));
    return NULL;
  }
  Request r = {.text = text, .name = name ? name : "<program>",
               .shapes = shapes && *shapes ? shapes : NULL};
  r.hasState = strstr(text, "pbc.invariant") != NULL;
  r.o = options ? *options : (PbcCompileOptions){.optLevel = -1};
  if (r.o.optLevel < -1 || r.o.optLevel > 3) {
    pbcLibSetError(error, pbcLibMessage("libpbc: optLevel %d: the levels are 0 to 3 (-1: 3)",
                                        r.o.optLevel));
    return NULL;
  }
  r.opt = r.o.optLevel < 0 ? 3 : r.o.optLevel;

  const PbcPluginSet *plugins = pluginsFor(r.o.pluginDir);
  char *selectDiag = NULL;
  size_t selectLen = 0;
  FILE *diag = open_memstream(&selectDiag, &selectLen);
  bool selected = diag && pbcSelectTarget(plugins, r.o.target ? r.o.target : "cpu", r.o.chip,
                                          &r.plugin, &r.chip, diag);
  if (diag)
    fclose(diag);
  if (!selected) {
    while (selectLen && selectDiag[selectLen - 1] == '\n')
      selectDiag[--selectLen] = 0;
    pbcLibSetError(error, pbcLibMessage("%s", selectDiag ? selectDiag : "libpbc: out of memory"));
    free(selectDiag);
    return NULL;
  }
  free(selectDiag);
  r.key = programKey(text, r.shapes, r.plugin, &r.chip, r.o.disable, r.opt);

  char dir[4096], why[4400];
  if (!pbcCacheFolder(r.o.cacheDir, dir, sizeof(dir), why, sizeof(why))) {
    pbcChipDestroy(&r.chip);
    pbcLibSetError(error, pbcLibMessage("%s", why));
    return NULL;
  }
  bool cached = dir[0] != 0;
  r.cacheFolder = dir;
  char tmpDir[] = "/tmp/pbc-lib-XXXXXX";
  if (!cached && !mkdtemp(tmpDir)) {
    pbcChipDestroy(&r.chip);
    pbcLibSetError(error, pbcLibMessage("libpbc: cannot create a temporary directory: %s",
                                        strerror(errno)));
    return NULL;
  }
  PbcCacheEntry e;
  pbcCacheEntryInit(&e, cached ? dir : tmpDir, r.key);
  if (cached)
    claimKey(r.key);
  PbcProgram *p = loadOrBuild(&r, &e, cached, error);
  if (cached)
    releaseKey(r.key);
  else
    rmdir(tmpDir);
  pbcChipDestroy(&r.chip);
  return p;
}

void pbcProgramDestroy(PbcProgram *p) {
  if (!p)
    return;
  if (p->handle)
    dlclose(p->handle);
  if (p->privateCopy[0])
    unlink(p->privateCopy);
  free(p->sigs);
  free(p->ciface);
  free(p->packed);
  free(p);
}

/* --- queries ------------------------------------------------------------------ */

static bool hasEntry(const PbcProgram *p, int e) { return p && e >= 0 && e < p->numEntries; }

int pbcProgramNumEntries(const PbcProgram *p) { return p ? p->numEntries : -1; }

const char *pbcProgramEntryName(const PbcProgram *p, int e) {
  return hasEntry(p, e) ? p->sigs[e].name : NULL;
}

int pbcProgramFindEntry(const PbcProgram *p, const char *name) {
  for (int e = 0; p && name && e < p->numEntries; ++e)
    if (strcmp(p->sigs[e].name, name) == 0)
      return e;
  return -1;
}

int pbcProgramEntryNumInputs(const PbcProgram *p, int e) {
  return hasEntry(p, e) ? p->sigs[e].numInputs : -1;
}

int pbcProgramEntryNumOutputs(const PbcProgram *p, int e) {
  return hasEntry(p, e) ? p->sigs[e].numOutputs : -1;
}

bool pbcProgramEntryArg(const PbcProgram *p, int e, int arg, PbcArgInfo *out) {
  if (!hasEntry(p, e) || !out || arg < 0)
    return false;
  const PbcEntrySig *g = &p->sigs[e];
  if (arg >= g->numInputs + g->numOutputs)
    return false;
  const PbcTensorType *t = arg < g->numInputs ? &g->inputs[arg]
                                              : &g->outputs[arg - g->numInputs];
  out->elem = pbcElemName(t->elem);
  out->rank = t->rank;
  out->shape = t->shape;
  return true;
}

int64_t pbcProgramEntrySymbolMax(const PbcProgram *p, int e, int symbol) {
  if (!hasEntry(p, e) || symbol < 0 || symbol >= PBC_MAX_SIZE_SYMBOLS)
    return -1;
  return p->sigs[e].symbolMax[symbol];
}

void *pbcProgramEntryFunction(const PbcProgram *p, int e) {
  return hasEntry(p, e) ? p->ciface[e] : NULL;
}

void *pbcProgramEntryPackedFunction(const PbcProgram *p, int e) {
  return hasEntry(p, e) ? *(void **)&p->packed[e] : NULL;
}

const char *pbcProgramLibraryPath(const PbcProgram *p) { return p ? p->libPath : NULL; }
