/*===- pbc/runner.h - Running compiled entry points ----------------------===*\
|* JIT-compiles an S5 module, runs an entry point on fresh random non-zero   *|
|* inputs, times it, checks every output element was written, and compares  *|
|* outputs against a reference run.                                          *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_RUNNER_H
#define PBC_RUNNER_H

#include <stdbool.h>
#include <stdint.h>

#include "mlir-c/ExecutionEngine.h"
#include "pbc/entry_sig.h"
#include "pbc/plugin.h"

typedef struct PbcBuffers {
  int numInputs, numOutputs;
  void *inputs[PBC_MAX_ARGS], *outputs[PBC_MAX_ARGS];
} PbcBuffers;

/* JIT-compiles m (LLVM dialect) with the target's runtime libraries. */
bool pbcJitCreate(MlirModule m, int optLevel, const PbcTargetPlugin *plugin,
                  MlirExecutionEngine *out);
/* Allocates buffers for sig: inputs random non-zero (seeded), outputs filled
 * with a NaN/sentinel pattern so unwritten elements can be found. False
 * (after a message) where memory runs out; nothing is left allocated. */
bool pbcBuffersCreate(const PbcEntrySig *sig, uint64_t seed, PbcBuffers *b);
/* Fresh output buffers (sentinel-filled) sharing `from`'s inputs; false
 * where memory runs out. */
bool pbcBuffersCloneInputs(const PbcEntrySig *sig, const PbcBuffers *from,
                           PbcBuffers *b);
void pbcBuffersDestroy(PbcBuffers *b, bool ownInputs);
/* Calls _mlir_ciface_<name>. */
bool pbcInvoke(MlirExecutionEngine jit, const PbcEntrySig *sig, PbcBuffers *b);
/* Number of output elements still holding the sentinel. */
int64_t pbcCountUnwritten(const PbcEntrySig *sig, const PbcBuffers *b);

typedef struct PbcCompare {
  double maxAbsErr, maxRelErr; /* rel: |a-b| / max(|b|, tiny) */
  int64_t mismatches;          /* beyond the element type's tolerance */
  int64_t firstBadIndex;
  int firstBadOutput;
  double firstBadGot, firstBadWant;
} PbcCompare;

void pbcCompareOutputs(const PbcEntrySig *sig, const PbcBuffers *got,
                       const PbcBuffers *want, PbcCompare *out);
/* Reads element i of a buffer of kind k as a double. */
double pbcElemLoad(const void *buf, PbcElemKind k, int64_t i);

#endif
