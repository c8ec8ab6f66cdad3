/* pbc-gpu-device-buffers: the buffers an entry point's kernels touch live in
 * device memory, while its callers keep MLIR's C interface on host memory
 * (the same AOT library API and --run harness on every target).
 *  - memref arguments: a device copy is allocated and filled on entry; it is
 *    copied back before returning unless the argument is only ever read;
 *  - memref.get_global (constants): a device copy per call;
 *  - memref.alloc/dealloc at the function's top level: gpu.alloc/dealloc.
 * Runs on host code before parallel loops become kernels (S4). */
#include <stdlib.h>
#include <string.h>

#include "gpu_build.h"
#include "gpu_passes.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"

#define MAX_USES 4096

static bool isReadOnlyUse(MlirOperation op, intptr_t operandNo) {
  static const char *const reads[] = {"memref.load", "affine.load", "affine.vector_load",
                                      "vector.load", "vector.transfer_read", "memref.dim",
                                      NULL};
  for (int i = 0; reads[i]; ++i)
    if (pbcOpIsA(op, reads[i]))
      return true;
  return pbcOpIsA(op, "memref.copy") && operandNo == 0;
}

/* True if the buffer (or a view of it) may be written. */
static bool mayBeWritten(MlirValue buffer, int depth) {
  if (depth > 16)
    return true;
  for (MlirOpOperand u = mlirValueGetFirstUse(buffer); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation owner = mlirOpOperandGetOwner(u);
    if (pbcOpIsMemrefView(owner)) {
      if (mayBeWritten(mlirOperationGetResult(owner, 0), depth + 1))
        return true;
    } else if (!isReadOnlyUse(owner, (intptr_t)mlirOpOperandGetOperandNumber(u))) {
      return true;
    }
  }
  return false;
}

/* Points every current use of `of` at `with` (uses made later are kept). */
typedef struct {
  MlirOperation owner[MAX_USES];
  unsigned number[MAX_USES];
  int n;
} Uses;

static bool collectUses(MlirValue v, Uses *u) {
  u->n = 0;
  for (MlirOpOperand o = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(o);
       o = mlirOpOperandGetNextUse(o)) {
    if (u->n == MAX_USES)
      return false;
    u->owner[u->n] = mlirOpOperandGetOwner(o);
    u->number[u->n++] = mlirOpOperandGetOperandNumber(o);
  }
  return true;
}

static void redirectUses(const Uses *u, MlirValue with) {
  for (int i = 0; i < u->n; ++i)
    mlirOperationSetOperand(u->owner[i], u->number[i], with);
}

typedef struct {
  MlirValue device[256];
  MlirValue host[256]; /* null: nothing to copy back */
  int n;
} Mirrors;

/* Device copy of a host buffer at `at`; uses that existed before move to it. */
static bool mirror(MlirOperation at, MlirValue host, bool copyBack, Mirrors *m, Uses *uses) {
  if (m->n == 256 || !collectUses(host, uses))
    return false;
  MlirValue dev = pbcGpuAlloc(at, mlirValueGetType(host), host);
  pbcGpuMemcpy(at, dev, host);
  redirectUses(uses, dev);
  m->device[m->n] = dev;
  m->host[m->n++] = copyBack ? host : (MlirValue){NULL};
  return true;
}

static bool mirrorFunction(MlirOperation func, Uses *uses) {
  MlirRegion body = mlirOperationGetRegion(func, 0);
  MlirBlock entry = mlirRegionGetFirstBlock(body);
  if (mlirBlockIsNull(entry))
    return true; /* a declaration */
  Mirrors m = {.n = 0};
  MlirOperation first = mlirBlockGetFirstOperation(entry);
  for (intptr_t i = 0; i < mlirBlockGetNumArguments(entry); ++i) {
    MlirValue arg = mlirBlockGetArgument(entry, i);
    MlirType t = mlirValueGetType(arg);
    if (!mlirTypeIsAMemRef(t) || mlirOpOperandIsNull(mlirValueGetFirstUse(arg)))
      continue;
    if (!pbcMemrefHasIdentityLayout(t)) {
      pbcEmitOpError(func, "argument %ld: only buffers with the identity layout can be "
                           "copied to the device", (long)i);
      return false;
    }
    if (!mirror(first, arg, mayBeWritten(arg, 0), &m, uses)) {
      pbcEmitOpError(func, "too many buffers or uses for the device copies");
      return false;
    }
  }
  /* Top-level allocations and constants. Collected first: the walk must not
   * see the ops it inserts. */
  MlirOperation ops[1024];
  int n = 0;
  for (MlirOperation op = first; !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    if (pbcOpIsA(op, "memref.alloc") || pbcOpIsA(op, "memref.dealloc") ||
        pbcOpIsA(op, "memref.get_global")) {
      if (n == 1024) {
        pbcEmitOpError(op, "more than 1024 buffers in one function for the device");
        return false;
      }
      ops[n++] = op;
    }
  for (int i = 0; i < n; ++i) {
    MlirOperation op = ops[i];
    if (pbcOpIsA(op, "memref.get_global")) {
      MlirOperation next = mlirOperationGetNextInBlock(op);
      if (!mirror(next, mlirOperationGetResult(op, 0), false, &m, uses)) {
        pbcEmitOpError(op, "too many buffers or uses for the device copies");
        return false;
      }
    } else if (pbcOpIsA(op, "memref.alloc")) {
      MlirValue old = mlirOperationGetResult(op, 0);
      if (mlirOperationGetNumOperands(op) > 0) {
        pbcEmitOpError(op, "dynamically sized buffer: not yet supported on GPU targets");
        return false;
      }
      MlirValue dev = pbcGpuAlloc(op, mlirValueGetType(old), old);
      mlirValueReplaceAllUsesOfWith(old, dev);
      mlirOperationDestroy(op);
    } else {
      pbcGpuDealloc(op, mlirOperationGetOperand(op, 0));
      mlirOperationDestroy(op);
    }
  }
  /* Copy results back and free the mirrors before every return. */
  MlirOperation ret = mlirBlockGetTerminator(entry);
  for (int i = 0; i < m.n; ++i) {
    if (!mlirValueIsNull(m.host[i]))
      pbcGpuMemcpy(ret, m.host[i], m.device[i]);
    pbcGpuDealloc(ret, m.device[i]);
  }
  return true;
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  /* Large, and per run: S4 runs this on several functions at once. */
  Uses *uses = malloc(sizeof(Uses));
  bool ok = mirrorFunction(func, uses);
  free(uses);
  return ok;
}

PBC_C_PASS_WITHOUT_OPTIONS(
    pbcGpuDeviceBuffersPass, "pbc-gpu-device-buffers", "func.func",
    "Entry-point buffers mirrored in device memory; allocations become gpu.alloc", run);
