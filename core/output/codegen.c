/* LLVM dialect -> LLVM IR -> optimized machine code. */
#include "pbc/codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llvm-c/Core.h"
#include "llvm-c/Target.h"
#include "llvm-c/TargetMachine.h"
#include "llvm-c/Transforms/PassBuilder.h"
#include "mlir-c/Target/LLVMIR.h"
#include "pbc/isolate.h"

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
  internalizeEntryBodies(llmod);
  useInitArray(llmod, "llvm.global_ctors", ".init_array");
  useInitArray(llmod, "llvm.global_dtors", ".fini_array");
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
