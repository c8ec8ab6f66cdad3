/* LLVM dialect -> LLVM IR -> optimized machine code. */
#include "pbc/codegen.h"

#include <pthread.h>
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
    tm = LLVMCreateTargetMachine(target, triple, cpu, features, lvl,
                                 LLVMRelocPIC, LLVMCodeModelDefault);
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

/* Optimizes and emits the parts of a split module on one thread each, one
 * object each into objs[]. Bitcode carries each part to its thread's own
 * context (an LLVM context is not thread-safe). */
static bool emitInParts(LLVMModuleRef *parts, int numParts, const PbcTargetPlugin *plugin,
                        const PbcChip *chip, int optLevel, PbcStrBuf *objs) {
  PartJob *jobs = calloc((size_t)numParts, sizeof(PartJob));
  pthread_t *threads = calloc((size_t)numParts, sizeof(pthread_t));
  bool *started = calloc((size_t)numParts, sizeof(bool));
  for (int i = 0; i < numParts; ++i) {
    jobs[i] = (PartJob){plugin, chip, optLevel, LLVMWriteBitcodeToMemoryBuffer(parts[i]), &objs[i], false};
    LLVMDisposeModule(parts[i]);
  }
  pbcCrashContextSetPhase("LLVM optimization and code generation (%d parts in parallel)", numParts);
  for (int i = 1; i < numParts; ++i)
    started[i] = pthread_create(&threads[i], NULL, runPartJob, &jobs[i]) == 0;
  /* Part 0, and any part whose thread could not start, run here. */
  for (int i = 0; i < numParts; ++i)
    if (!started[i])
      runPartJob(&jobs[i]);
  bool ok = true;
  for (int i = 0; i < numParts; ++i) {
    if (started[i])
      pthread_join(threads[i], NULL);
    ok = ok && jobs[i].ok;
  }
  free(started);
  free(threads);
  free(jobs);
  return ok;
}

/* A module with constructors (GPU host code loading its kernels; small)
 * stays whole: its llvm.used list must not be split. */
static int splitForThreads(LLVMModuleRef llmod, int maxParts, LLVMModuleRef *parts) {
  if (LLVMGetNamedGlobal(llmod, "llvm.used"))
    return 0;
  pbcCrashContextSetPhase("splitting the LLVM module");
  return pbcSplitModule(llmod, maxParts, parts);
}

bool pbcCodegenParts(MlirModule m, const PbcTargetPlugin *plugin, const PbcChip *chip,
                     int optLevel, PbcCodegenKind kind, int maxParts, PbcStrBuf *outs,
                     int *numOuts) {
  *numOuts = 0;
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
  LLVMModuleRef parts[PBC_MAX_CODEGEN_PARTS];
  int numParts = ok && kind == PBC_CODEGEN_OBJ ? splitForThreads(llmod, maxParts, parts) : 0;
  if (numParts > 0) {
    ok = emitInParts(parts, numParts, plugin, chip, optLevel, outs);
    *numOuts = numParts;
  } else if (ok) {
    pbcCrashContextSetPhase("LLVM optimization and code generation");
    ok = optimizeAndEmit(llmod, tm, optLevel, kind, &outs[0]);
    *numOuts = 1;
  }
  if (tm)
    LLVMDisposeTargetMachine(tm);
  LLVMDisposeMessage(triple);
  LLVMDisposeModule(llmod);
  LLVMContextDispose(llctx);
  return ok;
}

bool pbcCodegen(MlirModule m, const PbcTargetPlugin *plugin, const PbcChip *chip,
                int optLevel, PbcCodegenKind kind, PbcStrBuf *out) {
  int n = 0;
  return pbcCodegenParts(m, plugin, chip, optLevel, kind, 1, out, &n);
}

int pbcCodegenDefaultJobs(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}
