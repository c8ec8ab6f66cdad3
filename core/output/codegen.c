/* LLVM dialect -> LLVM IR -> optimized machine code. */
#include "pbc/codegen.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llvm-c/BitReader.h"
#include "llvm-c/BitWriter.h"
#include "llvm-c/Core.h"
#include "llvm-c/Target.h"
#include "llvm-c/TargetMachine.h"
#include "llvm-c/Transforms/PassBuilder.h"
#include "mlir-c/Target/LLVMIR.h"
#include "output/glue.h"
#include "output/kernel_cache.h"
#include "output/kernel_units.h"
#include "output/module_split.h"
#include "pbc/isolate.h"

static void initializeTargets(void) {
  LLVMInitializeAllTargetInfos();
  LLVMInitializeAllTargets();
  LLVMInitializeAllTargetMCs();
  LLVMInitializeAllAsmPrinters();
}

/* Thread-safe once the targets are initialized: each code generation thread
 * makes its own. */
static LLVMTargetMachineRef createTargetMachine(const PbcTargetPlugin *plugin,
                                                const PbcChip *chip, int optLevel,
                                                char **tripleOut) {
  const char *cpu = chip ? pbcChipGet(chip, "llvm-cpu") : NULL;
  const char *features = chip ? pbcChipGet(chip, "llvm-features") : NULL;
  char *triple = plugin && plugin->host_triple && *plugin->host_triple
                     ? strdup(plugin->host_triple)
                     : LLVMGetDefaultTargetTriple();
  char *hostCpu = NULL, *hostFeatures = NULL;
  if (!cpu || !*cpu || strcmp(cpu, "native") == 0)
    cpu = hostCpu = LLVMGetHostCPUName();
  if (!features || strcmp(features, "native") == 0)
    features = hostFeatures = LLVMGetHostCPUFeatures();
  LLVMTargetRef target;
  char *err = NULL;
  LLVMTargetMachineRef tm = NULL;
  if (LLVMGetTargetFromTriple(triple, &target, &err)) {
    fprintf(stderr, "pbc: error: no LLVM target for '%s': %s\n", triple, err);
    LLVMDisposeMessage(err);
  } else {
    LLVMCodeGenOptLevel lvl = optLevel <= 0   ? LLVMCodeGenLevelNone
                              : optLevel == 1 ? LLVMCodeGenLevelLess
                              : optLevel == 2 ? LLVMCodeGenLevelDefault
                                              : LLVMCodeGenLevelAggressive;
    /* x86-64's medium code model: data objects past LLVM's large-data
     * threshold (packed weights, the planned buffers of big models) go to
     * .lbss/.ldata and are addressed with 64-bit offsets, so a library may
     * hold more than the small model's 2 GiB of them; code and small data
     * keep 32-bit PC-relative addressing. */
    LLVMCodeModel model =
        strncmp(triple, "x86_64", 6) == 0 ? LLVMCodeModelMedium : LLVMCodeModelDefault;
    tm = LLVMCreateTargetMachine(target, triple, cpu, features, lvl, LLVMRelocPIC, model);
  }
  if (hostCpu)
    LLVMDisposeMessage(hostCpu);
  if (hostFeatures)
    LLVMDisposeMessage(hostFeatures);
  *tripleOut = triple;
  return tm;
}

/* LLVM's C API makes target machines that place llvm.global_ctors/dtors in
 * .ctors/.dtors sections, which lld and glibc do not run; GPU host code loads
 * its kernels from a constructor. The functions move to .init_array and
 * .fini_array arrays kept alive through llvm.used (ordering by priority is
 * not needed: pbc's constructors are independent). */
static void useInitArray(LLVMModuleRef mod, const char *listName, const char *section) {
  LLVMValueRef list = LLVMGetNamedGlobal(mod, listName);
  if (!list || !LLVMGetInitializer(list))
    return;
  LLVMValueRef init = LLVMGetInitializer(list);
  int n = LLVMGetNumOperands(init);
  if (n <= 0)
    return;
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0);
  LLVMValueRef *fns = calloc((size_t)n, sizeof(LLVMValueRef));
  for (int i = 0; i < n; ++i)
    fns[i] = LLVMGetOperand(LLVMGetOperand(init, (unsigned)i), 1);
  LLVMValueRef arr = LLVMAddGlobal(mod, LLVMArrayType2(ptr, (uint64_t)n), "");
  LLVMSetInitializer(arr, LLVMConstArray2(ptr, fns, (uint64_t)n));
  LLVMSetLinkage(arr, LLVMPrivateLinkage);
  LLVMSetSection(arr, section);
  LLVMSetAlignment(arr, 8);
  LLVMDeleteGlobal(list);
  /* llvm.used keeps the otherwise unreferenced array. */
  LLVMValueRef used = LLVMGetNamedGlobal(mod, "llvm.used");
  int nUsed = used && LLVMGetInitializer(used) ? LLVMGetNumOperands(LLVMGetInitializer(used)) : 0;
  LLVMValueRef *elems = calloc((size_t)nUsed + 1, sizeof(LLVMValueRef));
  for (int i = 0; i < nUsed; ++i)
    elems[i] = LLVMGetOperand(LLVMGetInitializer(used), (unsigned)i);
  elems[nUsed] = arr;
  if (used)
    LLVMDeleteGlobal(used);
  used = LLVMAddGlobal(mod, LLVMArrayType2(ptr, (uint64_t)nUsed + 1), "llvm.used");
  LLVMSetInitializer(used, LLVMConstArray2(ptr, elems, (uint64_t)nUsed + 1));
  LLVMSetLinkage(used, LLVMAppendingLinkage);
  LLVMSetSection(used, "llvm.metadata");
  free(elems);
  free(fns);
}

/* An entry point F is called through its C interface _mlir_ciface_F; F
 * itself becomes internal, so that its name (`main`, say, or one a host
 * library also defines) is not exported and cannot capture the host's own
 * calls to a function of that name. */
static void internalizeEntryBodies(LLVMModuleRef mod) {
  static const char kPrefix[] = "_mlir_ciface_";
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    size_t len = 0;
    const char *name = LLVMGetValueName2(f, &len);
    if (LLVMIsDeclaration(f) || len == 0 || strncmp(name, kPrefix, sizeof(kPrefix) - 1) == 0)
      continue;
    char *iface = malloc(len + sizeof(kPrefix));
    memcpy(iface, kPrefix, sizeof(kPrefix) - 1);
    memcpy(iface + sizeof(kPrefix) - 1, name, len);
    iface[len + sizeof(kPrefix) - 1] = 0;
    if (LLVMGetNamedFunction(mod, iface))
      LLVMSetLinkage(f, LLVMInternalLinkage);
    free(iface);
  }
}

/* Translation and the module-level fix-ups; NULL (reported) on failure. */
static LLVMModuleRef translate(MlirModule m, LLVMContextRef llctx) {
  pbcCrashContextSetPhase("translation to LLVM IR");
  LLVMModuleRef llmod = mlirTranslateModuleToLLVMIR(mlirModuleGetOperation(m), llctx);
  if (!llmod) {
    fprintf(stderr, "pbc: error: translation to LLVM IR failed\n");
    return NULL;
  }
  internalizeEntryBodies(llmod);
  useInitArray(llmod, "llvm.global_ctors", ".init_array");
  useInitArray(llmod, "llvm.global_dtors", ".fini_array");
  return llmod;
}

static void setTargetOf(LLVMModuleRef llmod, LLVMTargetMachineRef tm, const char *triple) {
  LLVMSetTarget(llmod, triple);
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
  char *dls = LLVMCopyStringRepOfTargetData(dl);
  LLVMSetDataLayout(llmod, dls);
  LLVMDisposeMessage(dls);
  LLVMDisposeTargetData(dl);
}

static bool runPipeline(LLVMModuleRef llmod, LLVMTargetMachineRef tm, const char *pipeline) {
  LLVMPassBuilderOptionsRef pbo = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(llmod, pipeline, tm, pbo);
  LLVMDisposePassBuilderOptions(pbo);
  if (!e)
    return true;
  char *msg = LLVMGetErrorMessage(e);
  fprintf(stderr, "pbc: error: LLVM optimization (%s) failed: %s\n", pipeline, msg);
  LLVMDisposeErrorMessage(msg);
  return false;
}

/* The -O pipeline, then the requested output appended to `out`. */
static bool optimizeAndEmit(LLVMModuleRef llmod, LLVMTargetMachineRef tm, int optLevel,
                            PbcCodegenKind kind, PbcStrBuf *out) {
  char pipeline[32];
  snprintf(pipeline, sizeof(pipeline), "default<O%d>", optLevel < 0 ? 0 : optLevel > 3 ? 3 : optLevel);
  if (!runPipeline(llmod, tm, pipeline))
    return false;
  if (kind == PBC_CODEGEN_LLVM_IR) {
    char *s = LLVMPrintModuleToString(llmod);
    pbcStrBufPuts(out, s);
    LLVMDisposeMessage(s);
    return true;
  }
  char *err = NULL;
  LLVMMemoryBufferRef buf = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(
          tm, llmod, kind == PBC_CODEGEN_ASM ? LLVMAssemblyFile : LLVMObjectFile, &err, &buf)) {
    fprintf(stderr, "pbc: error: code generation failed: %s\n", err);
    LLVMDisposeMessage(err);
    return false;
  }
  pbcStrBufAppend(out, LLVMGetBufferStart(buf), LLVMGetBufferSize(buf));
  LLVMDisposeMemoryBuffer(buf);
  return true;
}

/* Functions that are identical in LLVM IR (parallel-region bodies that
 * S4's nest sharing did not catch) are compiled once: LLVM's function
 * merging, before the -O pipeline and before a split, so that no part
 * optimizes a copy. */
static bool mergeIdenticalFunctions(LLVMModuleRef llmod, LLVMTargetMachineRef tm, int optLevel) {
  return optLevel < 2 || runPipeline(llmod, tm, "mergefunc");
}

/* A part that holds only optnone functions (module_split.c gives them one)
 * is compiled without optimization: fast instruction selection and
 * register allocation. */
static bool onlyOptNone(LLVMModuleRef mod) {
  bool any = false;
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    if (LLVMIsDeclaration(f))
      continue;
    if (!pbcLlvmFunctionIsOptNone(f))
      return false;
    any = true;
  }
  return any;
}

typedef struct PartJob {
  const PbcTargetPlugin *plugin;
  const PbcChip *chip;
  int optLevel;
  LLVMMemoryBufferRef bitcode; /* owned; consumed by the parse */
  PbcStrBuf *obj;
  bool ok;
} PartJob;

/* One part, in its own LLVM context and target machine. */
static void *runPartJob(void *arg) {
  PartJob *job = arg;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  job->ok = !LLVMParseBitcodeInContext2(ctx, job->bitcode, &mod);
  LLVMDisposeMemoryBuffer(job->bitcode);
  job->bitcode = NULL;
  char *triple = NULL;
  int level = job->ok && onlyOptNone(mod) ? 0 : job->optLevel;
  LLVMTargetMachineRef tm =
      job->ok ? createTargetMachine(job->plugin, job->chip, level, &triple) : NULL;
  job->ok = job->ok && tm && optimizeAndEmit(mod, tm, level, PBC_CODEGEN_OBJ, job->obj);
  if (tm)
    LLVMDisposeTargetMachine(tm);
  if (triple)
    LLVMDisposeMessage(triple);
  if (mod)
    LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  return NULL;
}

typedef struct Pool {
  PartJob *jobs;
  int n;
  atomic_int next;
} Pool;

static void *poolWorker(void *arg) {
  Pool *p = arg;
  for (int i; (i = atomic_fetch_add(&p->next, 1)) < p->n;)
    runPartJob(&p->jobs[i]);
  return NULL;
}

static int largerBitcodeFirst(const void *a, const void *b) {
  size_t x = LLVMGetBufferSize(((const PartJob *)a)->bitcode);
  size_t y = LLVMGetBufferSize(((const PartJob *)b)->bitcode);
  return x > y ? -1 : x < y;
}

/* Optimizes and emits jobs[0..n) (bitcode in, object out) on up to
 * `threads` threads, the largest first. Bitcode carries each module to its
 * thread's own context (an LLVM context is not thread-safe). */
static bool runJobs(PartJob *jobs, int n, int threads) {
  qsort(jobs, (size_t)n, sizeof(PartJob), largerBitcodeFirst);
  Pool pool = {jobs, n, 0};
  if (threads > n)
    threads = n;
  pthread_t *tid = calloc((size_t)(threads > 0 ? threads : 1), sizeof(pthread_t));
  bool *started = calloc((size_t)(threads > 0 ? threads : 1), sizeof(bool));
  pbcCrashContextSetPhase("LLVM optimization and code generation (%d modules, %d threads)", n,
                          threads);
  for (int t = 1; t < threads; ++t)
    started[t] = pthread_create(&tid[t], NULL, poolWorker, &pool) == 0;
  poolWorker(&pool); /* this thread too, and alone if none could start */
  bool ok = true;
  for (int t = 1; t < threads; ++t)
    if (started[t])
      pthread_join(tid[t], NULL);
  for (int i = 0; i < n; ++i)
    ok = ok && jobs[i].ok;
  free(started);
  free(tid);
  return ok;
}

static PartJob moduleJob(LLVMModuleRef mod, const PbcTargetPlugin *plugin, const PbcChip *chip,
                         int optLevel, PbcStrBuf *obj) {
  PartJob j = {plugin, chip, optLevel, LLVMWriteBitcodeToMemoryBuffer(mod), obj, false};
  LLVMDisposeModule(mod);
  return j;
}

/* A module with constructors (GPU host code loading its kernels; small)
 * stays whole: its llvm.used list must not be split. */
static int splitForThreads(LLVMModuleRef llmod, int maxParts, LLVMModuleRef *parts) {
  if (LLVMGetNamedGlobal(llmod, "llvm.used"))
    return 0;
  pbcCrashContextSetPhase("splitting the LLVM module");
  return pbcSplitModule(llmod, maxParts, parts);
}

static _Thread_local int kernelHits, kernelMisses;

void pbcCodegenPrintKernelCache(FILE *out, const char *kernelCacheDir) {
  pbcKernelCachePrintStats(out, kernelCacheDir);
}

void pbcCodegenKernelCacheCounts(int *hits, int *compiled) {
  *hits = kernelHits;
  *compiled = kernelMisses;
}

/* What a kernel's object depends on besides its IR: pbc's and LLVM's build,
 * the target machine, the optimization level. */
static PbcKernelKey kernelKeyBase(LLVMTargetMachineRef tm, int optLevel) {
  PbcKernelKey k = pbcKernelKeyBase();
  char *triple = LLVMGetTargetMachineTriple(tm), *cpu = LLVMGetTargetMachineCPU(tm);
  char *features = LLVMGetTargetMachineFeatureString(tm);
  pbcKernelKeyAdd(&k, triple, strlen(triple) + 1);
  pbcKernelKeyAdd(&k, cpu, strlen(cpu) + 1);
  pbcKernelKeyAdd(&k, features, strlen(features) + 1);
  pbcKernelKeyAdd(&k, &optLevel, sizeof(optLevel));
  LLVMDisposeMessage(triple);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(features);
  return k;
}

bool pbcCodegenParts(MlirModule m, const PbcTargetPlugin *plugin, const PbcChip *chip,
                     int optLevel, PbcCodegenKind kind, int maxParts,
                     const char *kernelCacheDir, PbcStrBuf **outsOut, int *numOuts) {
  *numOuts = 0;
  *outsOut = NULL;
  kernelHits = kernelMisses = 0;
  LLVMContextRef llctx = LLVMContextCreate();
  LLVMModuleRef llmod = translate(m, llctx);
  if (!llmod) {
    LLVMContextDispose(llctx);
    return false;
  }
  initializeTargets();
  char *triple = NULL;
  LLVMTargetMachineRef tm = createTargetMachine(plugin, chip, optLevel, &triple);
  bool ok = tm != NULL;
  if (ok) {
    setTargetOf(llmod, tm, triple);
    pbcCrashContextSetPhase("LLVM function merging");
    ok = mergeIdenticalFunctions(llmod, tm, optLevel);
    pbcSimplifyGlue(llmod);
  }
  /* Kernels found in the cache are not compiled; the others are compiled
   * one module each, beside the parts of what is left (the glue). */
  char dir[4096];
  PbcKernelUnit *units = NULL;
  int numUnits = 0;
  if (ok && kind == PBC_CODEGEN_OBJ && !LLVMGetNamedGlobal(llmod, "llvm.used") &&
      pbcKernelCacheFolder(kernelCacheDir, dir, sizeof(dir))) {
    pbcCrashContextSetPhase("looking up kernels in %s", dir);
    numUnits = pbcKernelUnitsExtract(llmod, kernelKeyBase(tm, optLevel), dir, &units);
  }
  LLVMModuleRef parts[PBC_MAX_CODEGEN_PARTS];
  int numParts = ok && kind == PBC_CODEGEN_OBJ ? splitForThreads(llmod, maxParts, parts) : 0;
  int cap = (numParts > 0 ? numParts : 1) + numUnits;
  PbcStrBuf *outs = calloc((size_t)cap, sizeof(PbcStrBuf));
  PartJob *jobs = calloc((size_t)cap, sizeof(PartJob));
  int numJobs = 0, n = 0;
  if (ok && (numParts > 0 || numUnits > 0)) {
    for (int i = 0; i < numParts; ++i, ++n)
      jobs[numJobs++] = moduleJob(parts[i], plugin, chip, optLevel, &outs[n]);
    if (numParts == 0) { /* the rest did not split: one module */
      jobs[numJobs++] = moduleJob(llmod, plugin, chip, optLevel, &outs[n++]);
      llmod = NULL;
    }
    int firstUnit = n;
    for (int u = 0; u < numUnits; ++u, ++n) {
      if (units[u].hit) {
        outs[n] = units[u].obj;
        ++kernelHits;
      } else {
        jobs[numJobs++] = (PartJob){plugin, chip, optLevel, units[u].bitcode, &outs[n], false};
        ++kernelMisses;
      }
    }
    ok = runJobs(jobs, numJobs, maxParts);
    for (int u = 0; ok && u < numUnits; ++u)
      if (!units[u].hit)
        pbcKernelCachePut(dir, &units[u].key, outs[firstUnit + u].data, outs[firstUnit + u].len);
    if (ok && kernelMisses > 0)
      pbcKernelCacheEvict(dir);
  } else if (ok) {
    pbcCrashContextSetPhase("LLVM optimization and code generation");
    ok = optimizeAndEmit(llmod, tm, optLevel, kind, &outs[n++]);
  }
  *outsOut = outs;
  *numOuts = n;
  free(jobs);
  free(units);
  if (tm)
    LLVMDisposeTargetMachine(tm);
  LLVMDisposeMessage(triple);
  if (llmod)
    LLVMDisposeModule(llmod);
  LLVMContextDispose(llctx);
  return ok;
}

bool pbcCodegen(MlirModule m, const PbcTargetPlugin *plugin, const PbcChip *chip,
                int optLevel, PbcCodegenKind kind, PbcStrBuf *out) {
  PbcStrBuf *outs = NULL;
  int n = 0;
  bool ok = pbcCodegenParts(m, plugin, chip, optLevel, kind, 1, "", &outs, &n);
  if (ok && n == 1)
    pbcStrBufAppend(out, outs[0].data, outs[0].len);
  for (int i = 0; i < n; ++i)
    pbcStrBufDestroy(&outs[i]);
  free(outs);
  return ok && n == 1;
}

int pbcCodegenDefaultJobs(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}
