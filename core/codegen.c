/* LLVM dialect -> LLVM IR -> optimized machine code, and AOT libraries. */
#include "pbc/codegen.h"

#include <ctype.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "llvm-c/Core.h"
#include "llvm-c/Target.h"
#include "llvm-c/TargetMachine.h"
#include "llvm-c/Transforms/PassBuilder.h"
#include "mlir-c/Target/LLVMIR.h"
#include "pbc/isolate.h"

#ifndef PBC_CLANG
#define PBC_CLANG "/usr/lib/llvm-22/bin/clang"
#endif

static LLVMTargetMachineRef createTargetMachine(const PbcTargetPlugin *plugin,
                                                const PbcChip *chip, int optLevel,
                                                char **tripleOut) {
  LLVMInitializeAllTargetInfos();
  LLVMInitializeAllTargets();
  LLVMInitializeAllTargetMCs();
  LLVMInitializeAllAsmPrinters();
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

bool pbcCodegen(MlirModule m, const PbcTargetPlugin *plugin, const PbcChip *chip,
                int optLevel, PbcCodegenKind kind, PbcStrBuf *out) {
  pbcCrashContextSetPhase("translation to LLVM IR");
  LLVMContextRef llctx = LLVMContextCreate();
  LLVMModuleRef llmod = mlirTranslateModuleToLLVMIR(mlirModuleGetOperation(m), llctx);
  if (!llmod) {
    fprintf(stderr, "pbc: error: translation to LLVM IR failed\n");
    LLVMContextDispose(llctx);
    return false;
  }
  char *triple = NULL;
  LLVMTargetMachineRef tm = createTargetMachine(plugin, chip, optLevel, &triple);
  bool ok = tm != NULL;
  if (ok) {
    LLVMSetTarget(llmod, triple);
    LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
    char *dls = LLVMCopyStringRepOfTargetData(dl);
    LLVMSetDataLayout(llmod, dls);
    LLVMDisposeMessage(dls);
    LLVMDisposeTargetData(dl);
    char pipeline[32];
    snprintf(pipeline, sizeof(pipeline), "default<O%d>", optLevel < 0 ? 0 : optLevel > 3 ? 3 : optLevel);
    pbcCrashContextSetPhase("LLVM optimization (%s)", pipeline);
    LLVMPassBuilderOptionsRef pbo = LLVMCreatePassBuilderOptions();
    LLVMErrorRef e = LLVMRunPasses(llmod, pipeline, tm, pbo);
    LLVMDisposePassBuilderOptions(pbo);
    if (e) {
      char *msg = LLVMGetErrorMessage(e);
      fprintf(stderr, "pbc: error: LLVM optimization failed: %s\n", msg);
      LLVMDisposeErrorMessage(msg);
      ok = false;
    }
  }
  if (ok && kind == PBC_CODEGEN_LLVM_IR) {
    char *s = LLVMPrintModuleToString(llmod);
    pbcStrBufPuts(out, s);
    LLVMDisposeMessage(s);
  } else if (ok) {
    pbcCrashContextSetPhase("LLVM code generation");
    char *err = NULL;
    LLVMMemoryBufferRef buf = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(
            tm, llmod, kind == PBC_CODEGEN_ASM ? LLVMAssemblyFile : LLVMObjectFile,
            &err, &buf)) {
      fprintf(stderr, "pbc: error: code generation failed: %s\n", err);
      LLVMDisposeMessage(err);
      ok = false;
    } else {
      pbcStrBufAppend(out, LLVMGetBufferStart(buf), LLVMGetBufferSize(buf));
      LLVMDisposeMemoryBuffer(buf);
    }
  }
  if (tm)
    LLVMDisposeTargetMachine(tm);
  LLVMDisposeMessage(triple);
  LLVMDisposeModule(llmod);
  LLVMContextDispose(llctx);
  return ok;
}

bool pbcLinkSharedLibrary(const char *objPath, const char *outPath,
                          const PbcTargetPlugin *plugin) {
  pbcCrashContextSetPhase("linking %s", outPath);
  const char *argv[64];
  char rpaths[16][4200];
  int n = 0, nr = 0;
  argv[n++] = PBC_CLANG;
  argv[n++] = "-shared";
  argv[n++] = "-fuse-ld=lld";
  argv[n++] = "-o";
  argv[n++] = outPath;
  argv[n++] = objPath;
  /* Runtime libraries by absolute path, found again at load time by rpath. */
  for (const char *const *lib = plugin ? plugin->runtime_libraries : NULL;
       lib && *lib && n < 56 && nr < 16; ++lib) {
    argv[n++] = *lib;
    char copy[4096];
    snprintf(copy, sizeof(copy), "%s", *lib);
    snprintf(rpaths[nr], sizeof(rpaths[nr]), "-Wl,-rpath,%s", dirname(copy));
    argv[n++] = rpaths[nr++];
  }
  argv[n++] = "-lm";
  argv[n] = NULL;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    execv(argv[0], (char *const *)argv);
    fprintf(stderr, "pbc: error: cannot run the linker '%s'\n", argv[0]);
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    fprintf(stderr, "pbc: error: linking '%s' failed\n", outPath);
    return false;
  }
  return true;
}

static void guardName(const char *libName, char *out, size_t len) {
  size_t j = 0;
  for (const char *c = libName; *c && j + 1 < len; ++c)
    out[j++] = isalnum((unsigned char)*c) ? (char)toupper((unsigned char)*c) : '_';
  out[j] = 0;
}

bool pbcWriteHeader(const char *path, const char *libName,
                    const PbcEntrySig *sigs, int numSigs) {
  FILE *f = fopen(path, "w");
  if (!f)
    return false;
  char guard[256];
  guardName(libName, guard, sizeof(guard));
  fprintf(f,
          "/* Generated by pbc: entry points of %s.\n"
          " * Each function takes pointers to MLIR memref descriptors: the "
          "inputs,\n"
          " * then one caller-allocated output per result. Strides and sizes "
          "are in\n"
          " * elements; f16 and bf16 elements are passed as uint16_t bit "
          "patterns. */\n"
          "#ifndef %s_H\n#define %s_H\n\n#include <stdbool.h>\n#include "
          "<stdint.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
          libName, guard, guard);
  /* One descriptor struct per (element type, rank) used. */
  bool seen[16][PBC_MAX_RANK + 1] = {{false}};
  for (int s = 0; s < numSigs; ++s)
    for (int i = 0; i < sigs[s].numInputs + sigs[s].numOutputs; ++i) {
      const PbcTensorType *t = i < sigs[s].numInputs
                                   ? &sigs[s].inputs[i]
                                   : &sigs[s].outputs[i - sigs[s].numInputs];
      if (seen[t->elem][t->rank])
        continue;
      seen[t->elem][t->rank] = true;
      const char *ct = pbcElemCType(t->elem);
      fprintf(f, "#ifndef PBC_MEMREF_%s_%d\n#define PBC_MEMREF_%s_%d\n",
              pbcElemName(t->elem), t->rank, pbcElemName(t->elem), t->rank);
      fprintf(f, "typedef struct {\n  %s *allocated;\n  %s *aligned;\n  int64_t offset;\n", ct, ct);
      if (t->rank > 0)
        fprintf(f, "  int64_t sizes[%d];\n  int64_t strides[%d];\n", t->rank, t->rank);
      fprintf(f, "} PbcMemRef_%s_%d;\n#endif\n\n", pbcElemName(t->elem), t->rank);
    }
  for (int s = 0; s < numSigs; ++s) {
    const PbcEntrySig *g = &sigs[s];
    fprintf(f, "/* @%s */\nvoid _mlir_ciface_%s(", g->name, g->name);
    for (int i = 0; i < g->numInputs + g->numOutputs; ++i) {
      bool in = i < g->numInputs;
      const PbcTensorType *t = in ? &g->inputs[i] : &g->outputs[i - g->numInputs];
      fprintf(f, "%s%sPbcMemRef_%s_%d *%s%d /* ", i ? ",\n    " : "",
              in ? "const " : "", pbcElemName(t->elem), t->rank, in ? "in" : "out",
              in ? i : i - g->numInputs);
      for (int d = 0; d < t->rank; ++d)
        fprintf(f, "%lldx", (long long)t->shape[d]);
      fprintf(f, "%s */", pbcElemName(t->elem));
    }
    fprintf(f, ");\n\n");
  }
  fprintf(f, "#ifdef __cplusplus\n}\n#endif\n#endif\n");
  return fclose(f) == 0;
}
