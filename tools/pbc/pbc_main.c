/* pbc: the compiler driver. Parses the command line, picks a target plugin
 * and chip, and runs the compilation (isolated in a child process, so an
 * MLIR/LLVM crash is reported with a reproducer instead of killing us). */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/Dialect/GPU.h"
#include "pbc/batch_loop.h"
#include "pbc/c_pass.h"
#include "pbc/codegen.h"
#include "pbc/diag.h"
#include "pbc/entry_sig.h"
#include "pbc/isolate.h"
#include "pbc/plugin_host.h"
#include "pbc/runner.h"
#include "pbc/session.h"
#include "pbc/shared_library.h"
#include "pbc/specialize_shapes.h"
#include "pbc/symbolic_sizes.h"
#include "pbc/target_select.h"

static const char kUsage[] =
    "usage: pbc [options] INPUT.mlir          (INPUT '-' reads stdin)\n"
    "\n"
    "Compiles a tensor program (linalg/tensor/arith/math on tensors, or TOSA)\n"
    "through stages S1-S5 for a target, and emits or runs it.\n"
    "\n"
    "target:\n"
    "  --target=NAME        target plugin (default: cpu); see --list-targets\n"
    "  --chip=NAME|native   chip description (default: the target's, native on cpu)\n"
    "  --chip-set=KEY=VALUE override one key of the chip description (repeatable;\n"
    "                       e.g. --chip-set=l2-bytes=524288 --chip-set=cores=8)\n"
    "  --plugin-dir=DIR     also look for plugins in DIR (repeatable; searched\n"
    "                       before $PBC_PLUGIN_PATH and the driver's directory)\n"
    "  --list-targets       list the plugins found and exit\n"
    "  --target-info        print the target and chip description and exit\n"
    "optimization:\n"
    "  -O0 .. -O3           optimization level (default -O3); -O0 skips every S3\n"
    "                       optimization group\n"
    "  --disable=G[,G...]   skip S3 optimization groups (ablations): cleanup,\n"
    "                       fusion, slice-fusion, epilogue-fusion,\n"
    "                       attention-fusion, tiling,\n"
    "                       fast-buffers, vectorization, fp-contract, unroll,\n"
    "                       scalar-replacement, prefetch, parallelization,\n"
    "                       streaming-stores\n"
    "                       (see pipelines/s3.pipeline)\n"
    "  --jobs=N             threads for LLVM optimization and code generation\n"
    "                       with --emit=lib (default: the CPUs this process may\n"
    "                       use); the module is split in N linked parts, and\n"
    "                       one more for the entry's glue (compiled at -O0).\n"
    "                       Above 1, S4 and S5 also run per function on all\n"
    "                       cores\n"
    "  --kernel-cache-dir=DIR  where --emit=lib keeps compiled kernels and takes\n"
    "                       those compiled before, for this chip and build\n"
    "                       (default: $PBC_KERNEL_CACHE_DIR, else $PBC_CACHE_DIR/\n"
    "                       kernels, else ~/.cache/pbc/kernels; '' or 'off': no\n"
    "                       cache; at most $PBC_KERNEL_CACHE_MAX_MB, default 1024)\n"
    "  --no-kernel-cache    compile every kernel (--kernel-cache-dir=off)\n"
    "  --cache-stats        print the kernel cache's folder and size, and exit\n"
    "output:\n"
    "  --emit=KIND          s1|s2|s3|s4|s5 (IR after that stage), llvm (LLVM IR),\n"
    "                       asm, obj, lib (shared library + C header),\n"
    "                       device (GPU targets: the kernels' PTX or GCN assembly)\n"
    "                       (default: obj, unless --run is given)\n"
    "  -o FILE              output file (default: stdout for IR and asm,\n"
    "                       INPUT.o for obj, libINPUT.so for lib)\n"
    "  --signatures=FILE    with --emit=lib: also write the entry signatures as\n"
    "                       text (what libpbc reads)\n"
    "  --input-name=NAME    name the input NAME in diagnostics\n"
    "dynamic shapes (entry arguments of type tensor<?x...>):\n"
    "  --shape=[ENTRY:]ARG=D0xD1x...  compile for these sizes of input ARG (from 0)\n"
    "                       of ENTRY (default: of every entry); repeatable, or\n"
    "                       several separated by ';'\n"
    "  --dim=N              every dynamic size no --shape fixes is N\n"
    "                       a program with dynamic sizes is compiled for the\n"
    "                       sizes given (results take the sizes the program\n"
    "                       computes; the header and --signatures show them).\n"
    "                       Without them, --emit=lib makes one library for every\n"
    "                       size: with the batch loop when the dynamic sizes are\n"
    "                       the inputs' leading ones and each batch element is\n"
    "                       computed from its own (static code per element; the\n"
    "                       header shows the batch as ?), else with symbolic sizes\n"
    "                       (the header shows s0, s1, ...: any size from 1, the\n"
    "                       same for one symbol in one call, up to a largest the\n"
    "                       program's tables set), else names what is in the\n"
    "                       way; --run draws one size for every open dimension\n"
    "                       (printed, from --seed); other emits need the sizes\n"
    "  --dynamic=ROUTE      auto (default), batch or symbolic: the one route to\n"
    "                       try for a library of every size\n"
    "execution (JIT, on this machine):\n"
    "  --run[=N]            run each entry point on fresh random non-zero inputs;\n"
    "                       report the median time of N runs (default 10)\n"
    "  --check              compare the results with an independent naive\n"
    "                       reference lowering (exit 3 on mismatch)\n"
    "  --entry=NAME         run only this function\n"
    "  --seed=N             random seed for inputs (default: time-based, printed)\n"
    "debugging:\n"
    "  --print-ir-after-all print the IR after every pipeline entry (stderr)\n"
    "  --dump-dir=DIR       write the IR after every pipeline entry into DIR\n"
    "                       (created if missing; its parent must exist)\n"
    "  --timing             per-pass, per-stage and code generation times; each\n"
    "                       pass also with the top-level nests after it and its\n"
    "                       time per nest (a pass that grows faster stands out)\n"
    "  --no-isolate         compile in this process (no crash containment)\n"
    "  --verify-each        verify the IR after every pass (by default once\n"
    "                       after each stage; pbc-opt always verifies each)\n"
    "  --reproducer-dir=DIR where crash reproducers go (default:\n"
    "                       $PBC_REPRODUCER_DIR, else $TMPDIR, else /tmp)\n"
    "  --help, --version\n"
    "\n"
    "exit status: 0 ok, 1 compilation error, 2 usage error, 3 --check mismatch,\n"
    "70 internal compiler crash (a reproducer file is written, its path printed),\n"
    "71 the compiled program crashed.\n";

typedef enum {
  EMIT_NONE, EMIT_S1, EMIT_S2, EMIT_S3, EMIT_S4, EMIT_S5,
  EMIT_LLVM, EMIT_ASM, EMIT_OBJ, EMIT_LIB, EMIT_DEVICE
} EmitKind;

typedef struct Options {
  const char *target, *chip, *input, *output, *entry, *disable, *dumpDir, *reproDir, *signatures,
      *inputName;
  const char *pluginDirs[16];
  int numPluginDirs;
  const char *chipSets[32]; /* --chip-set=KEY=VALUE */
  int numChipSets;
  int optLevel;
  int jobs; /* threads: code generation for --emit=lib, S4/S5 when above 1 */
  EmitKind emit;
  int runs; /* 0: no --run */
  bool check, printIr, timing, isolate, listTargets, targetInfo, verifyEach;
  bool cacheStats;
  const char *kernelCacheDir; /* NULL: the environment's */
  PbcShapeSpec *shapes;       /* --shape, --dim */
  const char *dynamicRoute;   /* --dynamic: "auto", "batch", "symbolic" */
  uint64_t seed;
  bool seedGiven;
} Options;

typedef struct Job {
  Options *o;
  const PbcLoadedPlugin *plugin;
  const PbcLoadedPlugin *refPlugin; /* cpu, for --check */
  PbcChip chip, refChip;
  PbcStrBuf input;
} Job;

static int usageError(const char *fmt, const char *arg) {
  fprintf(stderr, "pbc: error: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(see pbc --help)\n");
  return PBC_EXIT_USAGE;
}

static bool startsWith(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static int parseEmit(const char *v, EmitKind *out) {
  static const char *const names[] = {"", "s1", "s2", "s3", "s4", "s5",
                                      "llvm", "asm", "obj", "lib", "device"};
  for (int i = 1; i < 11; ++i)
    if (strcmp(v, names[i]) == 0) {
      *out = (EmitKind)i;
      return 0;
    }
  return -1;
}

static int parseArgs(int argc, char **argv, Options *o) {
  o->target = "cpu";
  o->optLevel = 3;
  o->isolate = true;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(kUsage, stdout);
      exit(0);
    } else if (strcmp(a, "--version") == 0) {
      printf("pbc 0.1.0 (plugin API v%u, MLIR/LLVM 22)\n", PBC_PLUGIN_API_VERSION);
      exit(0);
    } else if (startsWith(a, "--target=")) {
      o->target = a + 9;
    } else if (startsWith(a, "--chip=")) {
      o->chip = a + 7;
    } else if (startsWith(a, "--chip-set=")) {
      if (o->numChipSets == 32)
        return usageError("%s", "more than 32 --chip-set options");
      o->chipSets[o->numChipSets++] = a + 11;
    } else if (startsWith(a, "--plugin-dir=")) {
      if (o->numPluginDirs < 16)
        o->pluginDirs[o->numPluginDirs++] = a + 13;
    } else if (strcmp(a, "--list-targets") == 0) {
      o->listTargets = true;
    } else if (strcmp(a, "--no-kernel-cache") == 0) {
      o->kernelCacheDir = "";
    } else if (startsWith(a, "--kernel-cache-dir=")) {
      o->kernelCacheDir = a + strlen("--kernel-cache-dir=");
    } else if (strcmp(a, "--cache-stats") == 0) {
      o->cacheStats = true;
    } else if (strcmp(a, "--target-info") == 0) {
      o->targetInfo = true;
    } else if (a[0] == '-' && a[1] == 'O' && a[2] >= '0' && a[2] <= '3' && !a[3]) {
      o->optLevel = a[2] - '0';
    } else if (startsWith(a, "--disable=")) {
      o->disable = a + 10;
    } else if (startsWith(a, "--emit=")) {
      if (parseEmit(a + 7, &o->emit))
        return usageError("unknown --emit value '%s' (expected s1, s2, s3, s4, s5, "
                          "llvm, asm, obj, lib or device)", a + 7);
    } else if (strcmp(a, "-o") == 0) {
      if (++i == argc)
        return usageError("%s needs a file name", "-o");
      o->output = argv[i];
    } else if (strcmp(a, "--run") == 0) {
      o->runs = 10;
    } else if (startsWith(a, "--run=")) {
      char *end;
      long n = strtol(a + 6, &end, 10);
      if (*end || n < 1 || n > 1000000)
        return usageError("bad --run count '%s' (expected 1 or more)", a + 6);
      o->runs = (int)n;
    } else if (strcmp(a, "--check") == 0) {
      o->check = true;
    } else if (startsWith(a, "--entry=")) {
      o->entry = a + 8;
    } else if (startsWith(a, "--seed=")) {
      o->seed = strtoull(a + 7, NULL, 0);
      o->seedGiven = true;
    } else if (strcmp(a, "--print-ir-after-all") == 0) {
      o->printIr = true;
    } else if (startsWith(a, "--dump-dir=")) {
      o->dumpDir = a + 11;
      if (mkdir(o->dumpDir, 0777) != 0 && errno != EEXIST)
        return usageError("cannot create the --dump-dir directory '%s'", o->dumpDir);
    } else if (startsWith(a, "--jobs=")) {
      char *end;
      long n = strtol(a + 7, &end, 10);
      if (*end || n < 1 || n > 64)
        return usageError("bad --jobs count '%s' (expected 1 to 64)", a + 7);
      o->jobs = (int)n;
    } else if (strcmp(a, "--timing") == 0) {
      o->timing = true;
    } else if (strcmp(a, "--no-isolate") == 0) {
      o->isolate = false;
    } else if (strcmp(a, "--verify-each") == 0) {
      o->verifyEach = true;
    } else if (startsWith(a, "--reproducer-dir=")) {
      o->reproDir = a + 17;
    } else if (startsWith(a, "--signatures=")) {
      o->signatures = a + 13;
    } else if (startsWith(a, "--shape=")) {
      char why[256];
      if (!pbcShapeSpecParse(o->shapes, a + 8, why, sizeof(why))) {
        fprintf(stderr, "pbc: error: --shape: %s\n(see pbc --help)\n", why);
        return PBC_EXIT_USAGE;
      }
    } else if (startsWith(a, "--dim=")) {
      char *end;
      long long n = strtoll(a + 6, &end, 10);
      if (*end || n < 1 || n > ((long long)1 << 40))
        return usageError("bad --dim size '%s' (expected 1 or more)", a + 6);
      o->shapes->dim = n;
    } else if (startsWith(a, "--dynamic=")) {
      o->dynamicRoute = a + 10;
      if (strcmp(o->dynamicRoute, "auto") && strcmp(o->dynamicRoute, "batch") &&
          strcmp(o->dynamicRoute, "symbolic"))
        return usageError("bad --dynamic route '%s' (expected auto, batch or symbolic)",
                          o->dynamicRoute);
    } else if (startsWith(a, "--input-name=")) {
      o->inputName = a + 13;
    } else if (a[0] == '-' && a[1]) {
      return usageError("unknown option '%s'", a);
    } else if (o->input) {
      return usageError("more than one input file ('%s')", a);
    } else {
      o->input = a;
    }
  }
  if (o->check && !o->runs)
    o->runs = 1;
  if (o->emit == EMIT_NONE && !o->runs)
    o->emit = EMIT_OBJ;
  if (!o->jobs)
    o->jobs = pbcCodegenDefaultJobs();
  return 0;
}

static double nowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The input's base name without extension, for default output names. */
static void baseName(const char *input, char *out, size_t len) {
  char copy[4096];
  snprintf(copy, sizeof(copy), "%s", strcmp(input, "-") == 0 ? "out" : input);
  snprintf(out, len, "%s", basename(copy));
  char *dot = strrchr(out, '.');
  if (dot && dot != out)
    *dot = 0;
}

static bool writeOutput(const char *path, const char *data, size_t len) {
  if (!pbcWriteFile(path ? path : "-", data, len)) {
    fprintf(stderr, "pbc: error: cannot write '%s': %s\n", path ? path : "stdout",
            strerror(errno));
    return false;
  }
  return true;
}

static void printModule(MlirModule m, PbcStrBuf *out) {
  mlirOperationPrint(mlirModuleGetOperation(m), pbcStrBufCallback, out);
  pbcStrBufPuts(out, "\n");
}

/* One compile for every size of a program with dynamic sizes: the batch
 * loop where the program separates over its batch (static code per batch
 * element, pbc/batch_loop.h), else symbolic sizes (pbc/symbolic_sizes.h).
 * Every dynamic entry of the module takes the same route. What the route
 * not taken said is dropped; if neither holds, both say why. --dynamic=batch
 * or =symbolic: that route alone. */
static bool prepareDynamic(MlirModule *m, const char *route, PbcEntrySig *sigs, int *numSigs) {
  if (route && strcmp(route, "batch") == 0)
    return pbcBatchLoopPrepare(*m, sigs, 64, numSigs);
  if (route && strcmp(route, "symbolic") == 0)
    return pbcSymbolicSizesPrepare(*m, sigs, 64, numSigs);
  MlirModule copy = mlirModuleFromOperation(mlirOperationClone(mlirModuleGetOperation(*m)));
  PbcDiagCapture batchSaid = {0}, symbolicSaid = {0};
  PbcDiagCapture *before = pbcDiagCaptureInto(&batchSaid);
  bool ok = pbcBatchLoopPrepare(copy, sigs, 64, numSigs);
  pbcDiagCaptureInto(before);
  if (ok) {
    mlirModuleDestroy(*m);
    *m = copy;
    pbcDiagCaptureDestroy(&batchSaid);
    return true;
  }
  mlirModuleDestroy(copy);
  before = pbcDiagCaptureInto(&symbolicSaid);
  ok = pbcSymbolicSizesPrepare(*m, sigs, 64, numSigs);
  pbcDiagCaptureInto(before);
  if (ok) {
    pbcDiagCaptureDestroy(&batchSaid);
    pbcDiagCaptureDestroy(&symbolicSaid);
    return true;
  }
  pbcDiagCaptureReplay(&batchSaid);
  pbcDiagCaptureReplay(&symbolicSaid);
  return false;
}

/* Parses and checks the input and runs stages 1..lastStage in a session. */
static PbcSession *compileModule(Job *j, bool reference, int lastStage, MlirModule *out,
                                 PbcEntrySig *sigs, int *numSigs) {
  Options *o = j->o;
  PbcSessionOptions so = {
      .plugin = reference ? j->refPlugin->table : j->plugin->table,
      .chip = reference ? &j->refChip : &j->chip,
      .optLevel = reference ? 0 : o->optLevel,
      .disabledGroups = o->disable,
      .printIrAfterAll = reference ? false : o->printIr,
      .dumpDir = reference ? NULL : o->dumpDir,
      .reference = reference,
      .verifyEach = o->verifyEach,
      .threadedLateStages = o->jobs > 1,
  };
  PbcSession *s = pbcSessionCreate(&so);
  if (!s)
    return NULL;
  const char *fname = strcmp(o->input, "-") == 0 ? "<stdin>" : o->input;
  MlirModule m = o->inputName ? pbcSessionParseText(s, pbcStrBufGet(&j->input), o->inputName)
                              : pbcSessionParse(s, pbcStrBufGet(&j->input), fname);
  if (!mlirModuleIsNull(m) && o->runs && !reference && o->shapes->dim == 0 &&
      o->shapes->numShapes == 0 &&
      pbcModuleHasDynamicEntries(m)) {
    /* One size for every open dimension (a batch shared by all inputs),
     * drawn from the seed: small, odd and vector-edge sizes. */
    static const int64_t kSizes[] = {1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 33};
    o->shapes->dim = kSizes[(o->seed * 0x9E3779B97F4A7C15ull >> 33) % 11];
    fprintf(stderr, "pbc: dynamic sizes drawn as %lld (seed %llu; --dim or --shape fixes them)\n",
            (long long)o->shapes->dim, (unsigned long long)o->seed);
  }
  /* A library for a program with dynamic sizes and none given: one
   * compile for every batch size (pbc/batch_loop.h); --emit=s1..s5 show
   * the batch-of-one function it loops over. */
  bool batchLoop = !mlirModuleIsNull(m) && !reference && sigs &&
                   (o->emit == EMIT_LIB || (o->emit >= EMIT_S1 && o->emit <= EMIT_S5)) &&
                   !o->runs && o->shapes->dim == 0 && o->shapes->numShapes == 0 &&
                   pbcModuleHasDynamicEntries(m);
  bool prepared = !mlirModuleIsNull(m) &&
                  (batchLoop ? prepareDynamic(&m, o->dynamicRoute, sigs, numSigs)
                             : pbcSpecializeShapes(m, o->shapes));
  if (!prepared || !pbcSessionCheckInput(s, m)) {
    if (!mlirModuleIsNull(m))
      mlirModuleDestroy(m);
    pbcSessionDestroy(s);
    return NULL;
  }
  if (sigs && !batchLoop)
    *numSigs = pbcEntrySigsCollect(m, sigs, 64);
  if (!pbcSessionRunStages(s, m, 1, lastStage)) {
    mlirModuleDestroy(m);
    pbcSessionDestroy(s);
    return NULL;
  }
  *out = m;
  return s;
}

static int emitLibrary(Job *j, MlirModule m, const PbcEntrySig *sigs, int numSigs) {
  Options *o = j->o;
  char base[1024], outPath[4096], header[4096];
  baseName(o->input, base, sizeof(base));
  if (o->output)
    snprintf(outPath, sizeof(outPath), "%s", o->output);
  else
    snprintf(outPath, sizeof(outPath), "lib%s.so", base);
  snprintf(header, sizeof(header), "%s", outPath);
  char *dot = strrchr(header, '.');
  char *slash = strrchr(header, '/');
  if (dot && (!slash || dot > slash))
    strcpy(dot, ".h");
  else
    strcat(header, ".h");
  if (!pbcEmitSharedLibrary(m, j->plugin->table, &j->chip, o->optLevel, o->jobs,
                            o->kernelCacheDir, sigs, numSigs, outPath, header))
    return PBC_EXIT_ERROR;
  if (o->signatures) {
    FILE *f = fopen(o->signatures, "w");
    if (!f || !pbcEntrySigsWrite(f, sigs, numSigs) || fclose(f) != 0) {
      fprintf(stderr, "pbc: error: cannot write '%s': %s\n", o->signatures, strerror(errno));
      return PBC_EXIT_ERROR;
    }
  }
  return PBC_EXIT_OK;
}

static int cmpDouble(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Runs (and checks) one entry point. */
static int runEntry(Job *j, MlirExecutionEngine jit, MlirExecutionEngine ref,
                    const PbcEntrySig *sig) {
  Options *o = j->o;
  PbcBuffers b;
  if (!pbcBuffersCreate(sig, o->seed, &b))
    return PBC_EXIT_ERROR;
  pbcCrashContextSetPhase("running @%s", sig->name);
  if (!pbcInvoke(jit, sig, &b)) {
    pbcBuffersDestroy(&b, true);
    return PBC_EXIT_ERROR;
  }
  int rc = PBC_EXIT_OK;
  int64_t unwritten = pbcCountUnwritten(sig, &b);
  if (unwritten) {
    fprintf(stderr, "pbc: error: @%s left %lld output elements unwritten\n", sig->name,
            (long long)unwritten);
    rc = PBC_EXIT_CHECK_FAILED;
  }
  double *times = calloc((size_t)o->runs, sizeof(double));
  for (int r = 0; r < o->runs; ++r) {
    double t0 = nowMs();
    pbcInvoke(jit, sig, &b);
    times[r] = nowMs() - t0;
  }
  qsort(times, (size_t)o->runs, sizeof(double), cmpDouble);
  printf("@%s: median %.4f ms, min %.4f ms over %d runs (%s, chip %s, -O%d)\n",
         sig->name, times[o->runs / 2], times[0], o->runs, j->plugin->table->name,
         pbcChipName(&j->chip), o->optLevel);
  free(times);
  if (ref.ptr) {
    PbcBuffers want;
    bool allocated = pbcBuffersCloneInputs(sig, &b, &want);
    pbcCrashContextSetPhase("running the reference of @%s", sig->name);
    if (!allocated || !pbcInvoke(ref, sig, &want)) {
      rc = PBC_EXIT_ERROR;
    } else {
      PbcCompare c;
      pbcCompareOutputs(sig, &b, &want, &c);
      bool pass = c.mismatches == 0 && !unwritten;
      printf("@%s: check %s: max abs err %.3g, max rel err %.3g vs the naive reference "
             "(seed %llu)\n",
             sig->name, pass ? "PASS" : "FAIL", c.maxAbsErr, c.maxRelErr,
             (unsigned long long)o->seed);
      if (c.mismatches) {
        printf("@%s: %lld elements differ; first: output %d element %lld = %.6g, "
               "reference %.6g\n",
               sig->name, (long long)c.mismatches, c.firstBadOutput,
               (long long)c.firstBadIndex, c.firstBadGot, c.firstBadWant);
        rc = PBC_EXIT_CHECK_FAILED;
      }
    }
    pbcBuffersDestroy(&want, false);
  }
  pbcBuffersDestroy(&b, true);
  return rc;
}

static int runAll(Job *j, MlirModule m, const PbcEntrySig *sigs, int numSigs) {
  Options *o = j->o;
  double t0 = nowMs();
  MlirExecutionEngine jit;
  if (!pbcJitCreate(m, o->optLevel, j->plugin->table, &jit))
    return PBC_EXIT_ERROR;
  double jitMs = nowMs() - t0;
  MlirExecutionEngine ref = {NULL};
  PbcSession *rs = NULL;
  MlirModule rm = {NULL};
  if (o->check) {
    rs = compileModule(j, true, PBC_NUM_STAGES, &rm, NULL, NULL);
    if (!rs || !pbcJitCreate(rm, 0, j->refPlugin->table, &ref)) {
      fprintf(stderr, "pbc: error: the reference lowering failed\n");
      return PBC_EXIT_ERROR;
    }
  }
  if (o->timing)
    fprintf(stderr, "%10.3f  jit    (JIT compilation at -O%d)\n", jitMs, o->optLevel);
  int rc = PBC_EXIT_OK, ran = 0;
  for (int i = 0; i < numSigs; ++i) {
    if (o->entry && strcmp(o->entry, sigs[i].name) != 0)
      continue;
    int r = runEntry(j, jit, ref, &sigs[i]);
    if (r != PBC_EXIT_OK && rc == PBC_EXIT_OK)
      rc = r;
    ++ran;
  }
  if (!ran) {
    fprintf(stderr, "pbc: error: no entry point named '%s'\n", o->entry);
    rc = PBC_EXIT_USAGE;
  }
  mlirExecutionEngineDestroy(jit);
  if (ref.ptr)
    mlirExecutionEngineDestroy(ref);
  if (rs) {
    mlirModuleDestroy(rm);
    pbcSessionDestroy(rs);
  }
  return rc;
}

/* --emit=device: the device code (PTX, GCN assembly) of every gpu.binary. */
static MlirWalkResult collectDeviceCode(MlirOperation op, void *data) {
  PbcStrBuf *b = data;
  if (!pbcOpIsA(op, "gpu.binary"))
    return MlirWalkResultAdvance;
  MlirAttribute objects =
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("objects"));
  MlirAttribute sym =
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("sym_name"));
  MlirStringRef symName = mlirStringAttrGetValue(sym);
  for (intptr_t i = 0; i < mlirArrayAttrGetNumElements(objects); ++i) {
    MlirAttribute obj = mlirArrayAttrGetElement(objects, i);
    if (!mlirAttributeIsAGPUObjectAttr(obj))
      continue;
    MlirStringRef code = mlirGPUObjectAttrGetObject(obj);
    /* One module per binary; the marker line lets tools split them. */
    char marker[300];
    snprintf(marker, sizeof(marker), "// pbc: gpu.binary @%.*s\n", (int)symName.length,
             symName.data);
    pbcStrBufPuts(b, marker);
    pbcStrBufAppend(b, code.data, code.length);
    if (code.length && code.data[code.length - 1] != '\n')
      pbcStrBufPuts(b, "\n");
  }
  return MlirWalkResultSkip;
}

/* Everything that touches MLIR/LLVM: runs in the isolated child. */
static int compileJob(void *arg) {
  Job *j = arg;
  Options *o = j->o;
  int lastStage = o->emit >= EMIT_S1 && o->emit <= EMIT_S5 ? (int)o->emit : PBC_NUM_STAGES;
  PbcEntrySig *sigs = calloc(64, sizeof(PbcEntrySig)); /* large: heap */
  int numSigs = 0;
  MlirModule m;
  PbcSession *s = compileModule(j, false, lastStage, &m, sigs, &numSigs);
  if (!s) {
    free(sigs);
    return PBC_EXIT_ERROR;
  }
  int rc = PBC_EXIT_OK;
  double t0 = nowMs();
  if (o->emit >= EMIT_S1 && o->emit <= EMIT_S5) {
    PbcStrBuf b = {0};
    printModule(m, &b);
    if (!writeOutput(o->output, b.data, b.len))
      rc = PBC_EXIT_ERROR;
    pbcStrBufDestroy(&b);
  } else if (o->emit == EMIT_LLVM || o->emit == EMIT_ASM || o->emit == EMIT_OBJ) {
    PbcStrBuf b = {0};
    PbcCodegenKind k = o->emit == EMIT_LLVM  ? PBC_CODEGEN_LLVM_IR
                       : o->emit == EMIT_ASM ? PBC_CODEGEN_ASM
                                             : PBC_CODEGEN_OBJ;
    char path[4096];
    const char *out = o->output;
    if (!out && o->emit == EMIT_OBJ) {
      char base[1024];
      baseName(o->input, base, sizeof(base));
      snprintf(path, sizeof(path), "%s.o", base);
      out = path;
    }
    if (!pbcCodegen(m, j->plugin->table, &j->chip, o->optLevel, k, &b) ||
        !writeOutput(out, b.data, b.len))
      rc = PBC_EXIT_ERROR;
    pbcStrBufDestroy(&b);
  } else if (o->emit == EMIT_LIB) {
    rc = emitLibrary(j, m, sigs, numSigs);
  } else if (o->emit == EMIT_DEVICE) {
    PbcStrBuf b = {0};
    mlirOperationWalk(mlirModuleGetOperation(m), collectDeviceCode, &b, MlirWalkPreOrder);
    if (!writeOutput(o->output, b.data, b.len))
      rc = PBC_EXIT_ERROR;
    pbcStrBufDestroy(&b);
  }
  double codegenMs = nowMs() - t0;
  if (o->timing) {
    pbcSessionPrintTimings(s);
    if (o->emit > EMIT_S5)
      fprintf(stderr, "%10.3f  codegen (translation, LLVM -O%d, emission)\n", codegenMs,
              o->optLevel);
    int hits = 0, compiled = 0;
    pbcCodegenKernelCacheCounts(&hits, &compiled);
    if (o->emit == EMIT_LIB)
      fprintf(stderr, "%10d  kernels from the kernel cache, %d compiled\n", hits, compiled);
  }
  if (rc == PBC_EXIT_OK && o->runs)
    rc = runAll(j, m, sigs, numSigs);
  mlirModuleDestroy(m);
  pbcSessionDestroy(s);
  free(sigs);
  return rc;
}

static void commandLine(int argc, char **argv, char *buf, size_t len) {
  size_t used = 0;
  for (int i = 0; i < argc && used < len; ++i)
    used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " " : "", argv[i]);
}

int main(int argc, char **argv) {
  /* Internal, not in --help: libpbc, in a threaded host, probes plugin
   * files by running `pbc --probe-plugins PATH...` (pbc/plugin_host.h). */
  if (argc > 1 && strcmp(argv[1], "--probe-plugins") == 0)
    pbcPluginProbeFiles((const char *const *)argv + 2, argc - 2, 1);
  Options o = {0};
  o.shapes = calloc(1, sizeof(PbcShapeSpec)); /* large: heap */
  int rc = parseArgs(argc, argv, &o);
  if (rc)
    return rc;
  PbcPluginSet plugins;
  pbcPluginDiscover(o.pluginDirs, o.numPluginDirs, &plugins);
  if (o.listTargets) {
    pbcPrintTargets(&plugins, stdout);
    return PBC_EXIT_OK;
  }
  if (o.cacheStats) {
    pbcCodegenPrintKernelCache(stdout, o.kernelCacheDir);
    return PBC_EXIT_OK;
  }
  Job j = {.o = &o};
  if (!pbcSelectTarget(&plugins, o.target, o.chip, &j.plugin, &j.chip, stderr) ||
      !pbcApplyChipOverrides(&j.chip, o.chipSets, o.numChipSets))
    return PBC_EXIT_USAGE;
  if (o.targetInfo) {
    pbcPrintTargetInfo(j.plugin, &j.chip, stdout);
    return PBC_EXIT_OK;
  }
  if (o.emit == EMIT_DEVICE) {
    /* Device code as text: the chip's binary format becomes its assembly. */
    if (!pbcChipGet(&j.chip, "device-binary-format"))
      return usageError("target '%s' generates no device code (--emit=device is for GPU "
                        "targets)", j.plugin->table->name);
    pbcChipSet(&j.chip, "device-binary-format", "isa");
  }
  if (!o.input)
    return usageError("%s", "no input file (use '-' for stdin)");
  if (o.check) {
    /* The reference runs on this machine: the cpu target, native chip. */
    if (!pbcSelectTarget(&plugins, "cpu", "native", &j.refPlugin, &j.refChip, stderr))
      return PBC_EXIT_USAGE;
  }
  if (o.runs && !j.plugin->table->detect_native_chip) {
    fprintf(stderr, "pbc: error: target '%s' cannot run code on this machine (--run)\n",
            o.target);
    return PBC_EXIT_USAGE;
  }
  if (!pbcReadFile(o.input, &j.input)) {
    fprintf(stderr, "pbc: error: cannot read '%s': %s\n", o.input, strerror(errno));
    return PBC_EXIT_ERROR;
  }
  if (!o.seedGiven)
    o.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
  char cmd[8192];
  commandLine(argc, argv, cmd, sizeof(cmd));
  PbcIsolateOptions iso = {o.isolate, pbcStrBufGet(&j.input), cmd,
                           o.reproDir ? o.reproDir : o.dumpDir, "pbc"};
  rc = pbcRunIsolated(compileJob, &j, &iso);
  pbcStrBufDestroy(&j.input);
  return rc;
}
