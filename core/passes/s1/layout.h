/* Builders S1's rewrites share (pbc-channels-last, pbc-sink-transposes,
 * pbc-bias-epilogue, pbc-quantized-matmul, pbc-fold-constant-transposes):
 * linalg ops on tensors and the ops of their bodies,
 * the transposes pbc-sink-transposes moves, and constants transposed at
 * compile time. */
#ifndef PBC_PASSES_S1_LAYOUT_H
#define PBC_PASSES_S1_LAYOUT_H

#include <stdint.h>

#include "mlir-c/IR.h"

/* On a linalg.transpose: pbc-channels-last made it (or pbc-sink-transposes
 * moved it), and pbc-sink-transposes may move it below elementwise ops. */
#define PBC_SINK_MARK "pbc.sink_transpose"

/* A named linalg op `name` (destination style: nIns inputs, then one init,
 * operands[0 .. nIns]) with its body, before `before`. */
MlirOperation pbcBuildNamedLinalg(MlirOperation before, const char *name, int nIns,
                                  const MlirValue *operands, MlirType result, int nAttrs,
                                  const MlirNamedAttribute *attrs);
/* A linalg.generic (operands as above) with `maps` (its indexing_maps),
 * `iterators` (its iterator_types) and the body `body` (taken), before
 * `before`. */
MlirOperation pbcBuildLinalgGeneric(MlirOperation before, int nIns, const MlirValue *operands,
                                    MlirType result, MlirAttribute maps, MlirAttribute iterators,
                                    MlirRegion body);
/* Op `name` with operands and at most one result (a null `result`: none),
 * appended to `block` (a body being built, before its terminator is). */
MlirOperation pbcAppendOp(MlirBlock block, const char *name, int n, const MlirValue *operands,
                          MlirType result, MlirLocation loc);
/* The static tensor type `t` with dim i of the result dim perm[i] of t
 * (linalg.transpose's convention). */
MlirType pbcPermutedTensorType(MlirType t, const int64_t *perm, int rank);
/* linalg.transpose of `v` (a static tensor) by perm, into a new empty
 * tensor, before `before`; marked PBC_SINK_MARK if `mark`. */
MlirValue pbcBuildTranspose(MlirOperation before, MlirValue v, const int64_t *perm, int rank,
                            bool mark);
/* The constant `v` (an arith.constant of a dense elements attribute of
 * whole-byte elements, or of a dense_resource one whose blob is present:
 * torch-mlir's FX importer puts weights in resource blobs) transposed by
 * perm at compile time, as a new arith.constant before `before`; null if
 * `v` is not such a constant. */
MlirValue pbcTransposedConstant(MlirOperation before, MlirValue v, const int64_t *perm, int rank);

#endif
