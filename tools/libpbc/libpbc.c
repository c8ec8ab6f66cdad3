/* libpbc: compile a program in an isolated child into a cached shared
 * library, load it, and hand out its entry points. See pbc/libpbc.h; the
 * cache is cache.c, checked calls invoke.c. */
#include "pbc/libpbc.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "llvm-c/Core.h"
#include "llvm-c/TargetMachine.h"
#include "pbc/entry_sig.h"
#include "pbc/isolate.h"
#include "pbc/plugin_host.h"
#include "pbc/session.h"
#include "pbc/shared_library.h"
#include "pbc/strbuf.h"
#include "pbc/target_select.h"
#include "program.h"

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
    pbcPluginDiscover(dirs, dir ? 1 : 0, f->set);
    f->next = pluginFolders;
    pluginFolders = f;
  }
  pthread_mutex_unlock(&pluginsMutex);
  return f->set;
}

/* --- compilation (in the isolated child) ---------------------------------- */

typedef struct CompileJob {
  const char *text, *name, *disable, *libPath, *sigPath;
  const PbcTargetPlugin *plugin;
  const PbcChip *chip;
  int optLevel;
  uint64_t key;
} CompileJob;

static int compileJob(void *arg) {
  CompileJob *j = arg;
  PbcSessionOptions so = {.plugin = j->plugin, .chip = j->chip,
                          .optLevel = j->optLevel, .disabledGroups = j->disable};
  PbcSession *s = pbcSessionCreate(&so);
  if (!s)
    return PBC_EXIT_ERROR;
  int rc = PBC_EXIT_ERROR;
  PbcEntrySig *sigs = calloc(64, sizeof(PbcEntrySig)); /* large: heap */
  MlirModule m = pbcSessionParseText(s, j->text, j->name);
  if (!mlirModuleIsNull(m)) {
    int n = pbcSessionCheckInput(s, m) ? pbcEntrySigsCollect(m, sigs, 64) : -1;
    if (n >= 0 && pbcSessionRunStages(s, m, 1, PBC_NUM_STAGES) &&
        pbcEmitSharedLibrary(m, j->plugin, j->chip, j->optLevel, sigs, n, j->libPath,
                             NULL)) {
      if (pbcCacheWriteSig(j->sigPath, j->libPath, j->key, sigs, n))
        rc = PBC_EXIT_OK;
      else
        fprintf(stderr, "libpbc: error: cannot write '%s': %s\n", j->sigPath,
                strerror(errno));
    }
    mlirModuleDestroy(m);
  }
  pbcSessionDestroy(s);
  free(sigs);
  return rc;
}

/* --- loading ---------------------------------------------------------------- */

static PbcProgram *load(const char *libPath, PbcEntrySig *sigs, int n, char **error) {
  void *h = dlopen(libPath, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    free(sigs);
    pbcLibSetError(error, pbcLibMessage("libpbc: cannot load the compiled program: %s",
                                        dlerror()));
    return NULL;
  }
  PbcProgram *p = calloc(1, sizeof(*p));
  p->handle = h;
  p->numEntries = n;
  p->sigs = sigs;
  p->ciface = calloc((size_t)(n ? n : 1), sizeof(void *));
  p->packed = calloc((size_t)(n ? n : 1), sizeof(*p->packed));
  snprintf(p->libPath, sizeof(p->libPath), "%s", libPath);
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

static const char *selfPath(void) {
  Dl_info info;
  return dladdr((void *)&pbcProgramCompile, &info) ? info.dli_fname : NULL;
}

static char hostText[4096];
static void describeHost(void) {
  char *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
  snprintf(hostText, sizeof(hostText), "%s %s", cpu, features);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(features);
}

/* The key: everything the library depends on. */
static uint64_t programKey(const char *text, const PbcLoadedPlugin *plugin,
                           const PbcChip *chip, const char *disable, int opt) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, describeHost);
  PbcStrBuf chipText = {0};
  pbcChipPrint(chip, &chipText);
  uint64_t key = pbcHashString(1469598103934665603ull, pbcVersion());
  key = pbcHashString(key, text);
  key = pbcHashString(key, plugin->table->name);
  key = pbcHashString(key, chipText.data);
  key = pbcHashString(key, hostText);
  key = pbcHashString(key, disable);
  key = pbcHashBytes(key, &opt, sizeof(opt));
  key = pbcHashFileIdentity(key, plugin->path);
  key = pbcHashFileIdentity(key, selfPath());
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
  PbcCompileOptions o;
  const PbcLoadedPlugin *plugin;
  PbcChip chip;
  int opt;
  uint64_t key;
} Request;

/* Builds the entry `e` (under temporary names, committed by rename). */
static bool build(const Request *r, const PbcCacheEntry *e, char **error) {
  PbcCacheEntry tmp;
  pbcCacheTempPaths(e, &tmp);
  CompileJob job = {r->text, r->name, r->o.disable, tmp.lib, tmp.sig,
                    r->plugin->table, &r->chip, r->opt, r->key};
  PbcStrBuf diag = {0};
  PbcIsolateOptions iso = {true, r->text, "libpbc pbcProgramCompile", NULL, "pbc",
                           &diag, MESSAGE_LIMIT - 256};
  int rc = pbcRunIsolated(compileJob, &job, &iso);
  if (rc == PBC_EXIT_OK && !pbcCacheCommit(&tmp, e)) {
    pbcStrBufPrintf(&diag, "libpbc: error: cannot move the library into '%s': %s\n", e->lib,
                    strerror(errno));
    rc = PBC_EXIT_ERROR;
  }
  unlink(tmp.lib);
  unlink(tmp.sig);
  if (rc == PBC_EXIT_OK) {
    pbcStrBufDestroy(&diag);
    return true;
  }
  while (diag.len && diag.data[diag.len - 1] == '\n')
    diag.data[--diag.len] = 0;
  pbcLibSetError(error, diag.len ? pbcLibMessage("%s", diag.data)
                                 : pbcLibMessage("libpbc: compilation failed (exit status %d)",
                                                 rc));
  pbcStrBufDestroy(&diag);
  return false;
}

/* Loads the valid entry `e`, building it first when it is missing or bad. */
static PbcProgram *buildAndLoad(const Request *r, const PbcCacheEntry *e,
                                const char *cacheDir, char **error) {
  bool cached = cacheDir != NULL;
  char why[512];
  bool missing;
  int n = 0;
  PbcEntrySig *sigs = cached ? pbcCacheRead(e, r->key, &n, &missing, why, sizeof(why)) : NULL;
  if (sigs) {
    pbcCacheTouch(e);
    return load(e->lib, sigs, n, error);
  }
  if (cached && !missing)
    pbcCacheRemove(e); /* corrupt or stale: rebuilt below */
  if (!build(r, e, error))
    return NULL;
  sigs = pbcCacheRead(e, r->key, &n, &missing, why, sizeof(why));
  if (!sigs) {
    pbcLibSetError(error, pbcLibMessage("libpbc: the library just built at '%s' is not valid: %s",
                                        e->lib, missing ? "it is gone" : why));
    return NULL;
  }
  if (cached)
    pbcCacheEvict(cacheDir, e);
  return load(e->lib, sigs, n, error);
}

PbcProgram *pbcProgramCompile(const char *text, const char *name,
                              const PbcCompileOptions *options, char **error) {
  if (error)
    *error = NULL;
  if (!text) {
    pbcLibSetError(error, pbcLibMessage("libpbc: no program text (NULL)"));
    return NULL;
  }
  Request r = {.text = text, .name = name ? name : "<program>"};
  r.o = options ? *options : (PbcCompileOptions){.optLevel = -1};
  r.opt = r.o.optLevel < 0 || r.o.optLevel > 3 ? 3 : r.o.optLevel;

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
  r.key = programKey(text, r.plugin, &r.chip, r.o.disable, r.opt);

  char dir[4096], why[4400];
  if (!pbcCacheFolder(r.o.cacheDir, dir, sizeof(dir), why, sizeof(why))) {
    pbcChipDestroy(&r.chip);
    pbcLibSetError(error, pbcLibMessage("%s", why));
    return NULL;
  }
  bool cached = dir[0] != 0;
  char tmpDir[] = "/tmp/pbc-lib-XXXXXX";
  if (!cached && !mkdtemp(tmpDir)) {
    pbcChipDestroy(&r.chip);
    pbcLibSetError(error, pbcLibMessage("libpbc: cannot create a temporary directory: %s",
                                        strerror(errno)));
    return NULL;
  }
  PbcCacheEntry e;
  pbcCacheEntryPaths(cached ? dir : tmpDir, r.key, &e);
  if (cached)
    claimKey(r.key);
  PbcProgram *p = buildAndLoad(&r, &e, cached ? dir : NULL, error);
  if (cached) {
    releaseKey(r.key);
  } else {
    pbcCacheRemove(&e);
    rmdir(tmpDir);
  }
  pbcChipDestroy(&r.chip);
  return p;
}

void pbcProgramDestroy(PbcProgram *p) {
  if (!p)
    return;
  if (p->handle)
    dlclose(p->handle);
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

void *pbcProgramEntryFunction(const PbcProgram *p, int e) {
  return hasEntry(p, e) ? p->ciface[e] : NULL;
}

const char *pbcProgramLibraryPath(const PbcProgram *p) { return p ? p->libPath : NULL; }
