/* libpbc: compile a program in an isolated child into a cached shared
 * library, load it, and hand out its entry points. See pbc/libpbc.h. */
#include "pbc/libpbc.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llvm-c/Core.h"
#include "llvm-c/TargetMachine.h"
#include "pbc/entry_sig.h"
#include "pbc/isolate.h"
#include "pbc/plugin_host.h"
#include "pbc/session.h"
#include "pbc/shared_library.h"
#include "pbc/strbuf.h"
#include "pbc/target_select.h"

struct PbcProgram {
  void *handle;
  int numEntries;
  PbcEntrySig *sigs;
  void **ciface;
  void (**packed)(void **);
  char libPath[4096];
};

/* --- messages ------------------------------------------------------------ */

static char *message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *message(const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  char *m = malloc((size_t)(n > 0 ? n : 0) + 1);
  vsnprintf(m, (size_t)(n > 0 ? n : 0) + 1, fmt, ap2);
  va_end(ap2);
  va_end(ap);
  return m;
}

static void setError(char **error, char *msg) {
  if (error)
    *error = msg;
  else
    free(msg);
}

void pbcMessageDestroy(char *m) { free(m); }

const char *pbcVersion(void) { return "pbc 0.1.0 (libpbc, MLIR/LLVM 22)"; }

/* While alive, fd 2 goes to a temporary file: the compiler reports through
 * stderr, the caller gets the text as an error value. */
typedef struct StderrCapture {
  int saved, fd;
} StderrCapture;

static void captureBegin(StderrCapture *c) {
  char path[] = "/tmp/pbc-diag-XXXXXX";
  fflush(stderr);
  c->fd = mkstemp(path);
  c->saved = c->fd >= 0 ? dup(2) : -1;
  if (c->fd >= 0) {
    unlink(path);
    dup2(c->fd, 2);
  }
}

/* Restores stderr; returns what was written (never NULL). */
static char *captureEnd(StderrCapture *c) {
  fflush(stderr);
  PbcStrBuf b = {0};
  pbcStrBufPuts(&b, "");
  if (c->fd < 0)
    return b.data;
  dup2(c->saved, 2);
  close(c->saved);
  char chunk[4096];
  lseek(c->fd, 0, SEEK_SET);
  for (ssize_t n; (n = read(c->fd, chunk, sizeof(chunk))) > 0;)
    pbcStrBufAppend(&b, chunk, (size_t)n);
  close(c->fd);
  while (b.len && b.data[b.len - 1] == '\n')
    b.data[--b.len] = 0;
  return b.data;
}

/* --- the cache ----------------------------------------------------------- */

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; ++i)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

static uint64_t hashStr(uint64_t h, const char *s) {
  return fnv1a(h, s ? s : "", strlen(s ? s : "") + 1);
}

/* Identity of a file: path, size and modification time. */
static uint64_t hashFile(uint64_t h, const char *path) {
  struct stat st;
  h = hashStr(h, path);
  if (path && stat(path, &st) == 0) {
    h = fnv1a(h, &st.st_size, sizeof(st.st_size));
    h = fnv1a(h, &st.st_mtim, sizeof(st.st_mtim));
  }
  return h;
}

static bool makeDirs(const char *path) {
  char buf[4096];
  snprintf(buf, sizeof(buf), "%s", path);
  for (char *p = buf + 1; *p; ++p)
    if (*p == '/') {
      *p = 0;
      mkdir(buf, 0755);
      *p = '/';
    }
  return mkdir(buf, 0755) == 0 || errno == EEXIST;
}

static void cacheDirectory(const PbcCompileOptions *o, char *out, size_t len) {
  const char *env = getenv("PBC_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"),
             *home = getenv("HOME");
  if (o->cacheDir)
    snprintf(out, len, "%s", o->cacheDir);
  else if (env)
    snprintf(out, len, "%s", env);
  else if (xdg && *xdg)
    snprintf(out, len, "%s/pbc", xdg);
  else if (home && *home)
    snprintf(out, len, "%s/.cache/pbc", home);
  else
    out[0] = 0;
}

/* --- signatures next to the library --------------------------------------- */

static bool writeSigs(const char *path, const PbcEntrySig *sigs, int n) {
  FILE *f = fopen(path, "w");
  if (!f)
    return false;
  fprintf(f, "%d\n", n);
  for (int s = 0; s < n; ++s) {
    fprintf(f, "%s %d %d\n", sigs[s].name, sigs[s].numInputs, sigs[s].numOutputs);
    for (int i = 0; i < sigs[s].numInputs + sigs[s].numOutputs; ++i) {
      const PbcTensorType *t = i < sigs[s].numInputs
                                   ? &sigs[s].inputs[i]
                                   : &sigs[s].outputs[i - sigs[s].numInputs];
      fprintf(f, "%d %d", (int)t->elem, t->rank);
      for (int d = 0; d < t->rank; ++d)
        fprintf(f, " %lld", (long long)t->shape[d]);
      fprintf(f, "\n");
    }
  }
  return fclose(f) == 0;
}

static PbcEntrySig *readSigs(const char *path, int *n) {
  FILE *f = fopen(path, "r");
  if (!f || fscanf(f, "%d", n) != 1 || *n < 0 || *n > 4096) {
    if (f)
      fclose(f);
    return NULL;
  }
  PbcEntrySig *sigs = calloc((size_t)(*n ? *n : 1), sizeof(PbcEntrySig));
  bool ok = true;
  for (int s = 0; ok && s < *n; ++s) {
    PbcEntrySig *g = &sigs[s];
    ok = fscanf(f, "%255s %d %d", g->name, &g->numInputs, &g->numOutputs) == 3 &&
         g->numInputs >= 0 && g->numOutputs >= 0 && g->numInputs <= PBC_MAX_ARGS &&
         g->numOutputs <= PBC_MAX_ARGS;
    for (int i = 0; ok && i < g->numInputs + g->numOutputs; ++i) {
      PbcTensorType *t = i < g->numInputs ? &g->inputs[i] : &g->outputs[i - g->numInputs];
      int elem;
      ok = fscanf(f, "%d %d", &elem, &t->rank) == 2 && t->rank >= 0 &&
           t->rank <= PBC_MAX_RANK && elem >= 0 && elem <= PBC_ELEM_I64;
      t->elem = (PbcElemKind)elem;
      for (int d = 0; ok && d < t->rank; ++d) {
        long long v;
        ok = fscanf(f, "%lld", &v) == 1;
        t->shape[d] = v;
      }
    }
  }
  fclose(f);
  if (!ok) {
    free(sigs);
    return NULL;
  }
  return sigs;
}

/* --- compilation (in the isolated child) ---------------------------------- */

typedef struct CompileJob {
  const char *text, *name, *disable, *libPath, *sigPath;
  const PbcTargetPlugin *plugin;
  const PbcChip *chip;
  int optLevel;
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
                             NULL) &&
        writeSigs(j->sigPath, sigs, n))
      rc = PBC_EXIT_OK;
    mlirModuleDestroy(m);
  }
  pbcSessionDestroy(s);
  free(sigs);
  return rc;
}

/* --- loading ---------------------------------------------------------------- */

static PbcProgram *load(const char *libPath, const char *sigPath, char **error) {
  int n = 0;
  PbcEntrySig *sigs = readSigs(sigPath, &n);
  if (!sigs) {
    setError(error, message("libpbc: cannot read the entry signatures '%s'", sigPath));
    return NULL;
  }
  void *h = dlopen(libPath, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    free(sigs);
    setError(error, message("libpbc: cannot load the compiled program: %s", dlerror()));
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
      setError(error, message("libpbc: the compiled program lacks entry '%s'", sigs[i].name));
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

static char *host(void) {
  char *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
  PbcStrBuf b = {0};
  pbcStrBufPrintf(&b, "%s %s", cpu, features);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(features);
  return b.data;
}

PbcProgram *pbcProgramCompile(const char *text, const char *name,
                              const PbcCompileOptions *options, char **error) {
  PbcCompileOptions o = options ? *options : (PbcCompileOptions){.optLevel = -1};
  if (!text) {
    setError(error, message("libpbc: no program text"));
    return NULL;
  }
  StderrCapture cap;
  captureBegin(&cap);
  const char *dirs[1] = {o.pluginDir};
  static PbcPluginSet plugins; /* plugins stay loaded: their code runs in us */
  static bool discovered;
  if (!discovered || o.pluginDir) {
    pbcPluginDiscover(dirs, o.pluginDir ? 1 : 0, &plugins);
    discovered = true;
  }
  const PbcLoadedPlugin *plugin;
  PbcChip chip;
  if (!pbcSelectTarget(&plugins, o.target ? o.target : "cpu", o.chip, &plugin, &chip)) {
    setError(error, captureEnd(&cap));
    return NULL;
  }
  int opt = o.optLevel < 0 || o.optLevel > 3 ? 3 : o.optLevel;

  /* The key: everything the library depends on. */
  PbcStrBuf chipText = {0};
  pbcChipPrint(&chip, &chipText);
  char *hostText = host();
  uint64_t key = hashStr(1469598103934665603ull, pbcVersion());
  key = hashStr(key, text);
  key = hashStr(key, plugin->table->name);
  key = hashStr(key, chipText.data);
  key = hashStr(key, hostText);
  key = hashStr(key, o.disable);
  key = fnv1a(key, &opt, sizeof(opt));
  key = hashFile(key, plugin->path);
  key = hashFile(key, selfPath());
  pbcStrBufDestroy(&chipText);
  free(hostText);

  char dir[4096], libPath[4200], sigPath[4200];
  cacheDirectory(&o, dir, sizeof(dir));
  bool cached = dir[0] && makeDirs(dir) && access(dir, W_OK) == 0;
  char tmpDir[] = "/tmp/pbc-lib-XXXXXX";
  if (!cached && !mkdtemp(tmpDir)) {
    pbcChipDestroy(&chip);
    captureEnd(&cap);
    setError(error, message("libpbc: cannot create a temporary directory: %s",
                            strerror(errno)));
    return NULL;
  }
  snprintf(libPath, sizeof(libPath), "%s/pbc-%016llx.so", cached ? dir : tmpDir,
           (unsigned long long)key);
  snprintf(sigPath, sizeof(sigPath), "%s/pbc-%016llx.sig", cached ? dir : tmpDir,
           (unsigned long long)key);

  int rc = PBC_EXIT_OK;
  if (!cached || access(libPath, R_OK) != 0 || access(sigPath, R_OK) != 0) {
    /* Build under temporary names, then rename: concurrent compilers of the
     * same program never see half-written files. */
    char tmpLib[4300], tmpSig[4300];
    snprintf(tmpLib, sizeof(tmpLib), "%s.%d.tmp", libPath, (int)getpid());
    snprintf(tmpSig, sizeof(tmpSig), "%s.%d.tmp", sigPath, (int)getpid());
    CompileJob job = {text, name ? name : "<program>", o.disable, tmpLib, tmpSig,
                      plugin->table, &chip, opt};
    PbcIsolateOptions iso = {true, text, "libpbc pbcProgramCompile",
                             cached ? dir : tmpDir, "pbc"};
    rc = pbcRunIsolated(compileJob, &job, &iso);
    if (rc == PBC_EXIT_OK && (rename(tmpSig, sigPath) || rename(tmpLib, libPath)))
      rc = PBC_EXIT_ERROR;
    unlink(tmpLib);
    unlink(tmpSig);
  }
  pbcChipDestroy(&chip);
  char *diag = captureEnd(&cap);
  PbcProgram *p = NULL;
  if (rc != PBC_EXIT_OK) {
    if (!diag[0]) {
      free(diag);
      diag = message("libpbc: compilation failed (exit status %d)", rc);
    }
    setError(error, diag);
  } else {
    free(diag);
    p = load(libPath, sigPath, error);
  }
  if (!cached) {
    unlink(libPath);
    unlink(sigPath);
    rmdir(tmpDir);
  }
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

int pbcProgramNumEntries(const PbcProgram *p) { return p->numEntries; }

const char *pbcProgramEntryName(const PbcProgram *p, int e) {
  return e >= 0 && e < p->numEntries ? p->sigs[e].name : NULL;
}

int pbcProgramFindEntry(const PbcProgram *p, const char *name) {
  for (int e = 0; e < p->numEntries; ++e)
    if (strcmp(p->sigs[e].name, name) == 0)
      return e;
  return -1;
}

int pbcProgramEntryNumInputs(const PbcProgram *p, int e) {
  return e >= 0 && e < p->numEntries ? p->sigs[e].numInputs : -1;
}

int pbcProgramEntryNumOutputs(const PbcProgram *p, int e) {
  return e >= 0 && e < p->numEntries ? p->sigs[e].numOutputs : -1;
}

bool pbcProgramEntryArg(const PbcProgram *p, int e, int arg, PbcArgInfo *out) {
  if (e < 0 || e >= p->numEntries || arg < 0)
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
  return e >= 0 && e < p->numEntries ? p->ciface[e] : NULL;
}

bool pbcProgramInvoke(const PbcProgram *p, int e, void **descriptors, char **error) {
  if (e < 0 || e >= p->numEntries) {
    setError(error, message("libpbc: no entry point %d (the program has %d)", e, p->numEntries));
    return false;
  }
  p->packed[e](descriptors);
  return true;
}

const char *pbcProgramLibraryPath(const PbcProgram *p) { return p->libPath; }
