/*===- pbc/entry_sig.h - Entry points and their tensor types -------------===*\
|* Every public func.func of the input is an entry point. After S1 its       *|
|* tensor arguments are memrefs and its results caller-allocated out-params  *|
|* appended after the inputs: `_mlir_ciface_F(in0*, ..., out0*, ...)`, each  *|
|* a pointer to MLIR's standard memref descriptor.                           *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_ENTRY_SIG_H
#define PBC_ENTRY_SIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mlir-c/IR.h"

#define PBC_MAX_RANK 8
#define PBC_MAX_ARGS 1024 /* inputs, and outputs, each (framework graphs pass every weight) */

typedef enum PbcElemKind {
  PBC_ELEM_F32, PBC_ELEM_F16, PBC_ELEM_BF16, PBC_ELEM_F64,
  PBC_ELEM_I1, PBC_ELEM_I8, PBC_ELEM_I16, PBC_ELEM_I32, PBC_ELEM_I64,
} PbcElemKind;

/* A size the caller gives at each call: the batch of an entry compiled once
 * for every batch size (pbc/batch_loop.h). */
#define PBC_DYNAMIC_SIZE (-1)
/* A size the caller gives at each call, by symbol: every size of one call
 * with the same symbol s is the same (an entry compiled with symbolic sizes,
 * pbc/symbolic_sizes.h); PBC_SIZE_SYMBOL(0) is -2, (1) is -3, ... */
#define PBC_MAX_SIZE_SYMBOLS 32
#define PBC_SIZE_SYMBOL(s) (-2 - (int64_t)(s))
#define PBC_SIZE_IS_SYMBOL(v) ((v) <= -2 && (v) >= PBC_SIZE_SYMBOL(PBC_MAX_SIZE_SYMBOLS - 1))
#define PBC_SYMBOL_OF_SIZE(v) ((int)(-2 - (v)))

typedef struct PbcTensorType {
  PbcElemKind elem;
  int rank;
  /* PBC_DYNAMIC_SIZE: the call's batch; PBC_SIZE_SYMBOL(s): symbol s's */
  int64_t shape[PBC_MAX_RANK];
} PbcTensorType;

typedef struct PbcEntrySig {
  char name[1024];
  int numInputs, numOutputs;
  /* The narrowest float type any value of the function has (F32 if none
   * narrower): an f32 result computed through bf16 is only as exact as
   * bf16, which --check's tolerance must allow. */
  PbcElemKind narrowestFloat;
  PbcTensorType inputs[PBC_MAX_ARGS], outputs[PBC_MAX_ARGS];
  /* The largest size each size symbol may take (0: any): the program
   * slices a static dimension by it (pbc/symbolic_sizes.h). */
  int64_t symbolMax[PBC_MAX_SIZE_SYMBOLS];
} PbcEntrySig;

/* Argument i of an entry: its inputs, then its outputs. */
const PbcTensorType *pbcEntrySigArg(const PbcEntrySig *sig, int i);
/* Converts a ranked, statically shaped tensor type; false (with a reason) for
 * anything pbc cannot pass across its C interface. */
bool pbcTensorTypeFrom(MlirType t, PbcTensorType *out, char *why, size_t whyLen);
/* Whether op is a func.func with no visibility or `public` (an entry). */
bool pbcFuncIsPublic(MlirOperation op);
/* The function attribute giving an entry's sizes where its types have `?`
 * (an array, per input then result, of i64 arrays: the signature's sizes,
 * symbols among them). */
#define PBC_SIGNATURE_SIZES_ATTR "pbc.signature_sizes"
/* The function attribute giving symbolMax (an i64 array, per symbol). */
#define PBC_SIZE_BOUNDS_ATTR "pbc.size_bounds"
/* Whether sig has a symbolic size (PBC_SIZE_SYMBOL). */
bool pbcEntrySigIsSymbolic(const PbcEntrySig *sig);
/* Collects the public functions of m. Returns the count, or -1 after
 * emitting a located error for an unsupported signature. */
int pbcEntrySigsCollect(MlirModule m, PbcEntrySig *out, int max);

/* The text form of signatures (entry_sig_text.c): what `pbc --emit=lib
 * --signatures=FILE` writes and libpbc reads. Read returns NULL (and frees
 * everything) on malformed text; the caller frees the array. */
bool pbcEntrySigsWrite(FILE *f, const PbcEntrySig *sigs, int n);
PbcEntrySig *pbcEntrySigsRead(FILE *f, int *n);

size_t pbcElemSize(PbcElemKind k);
const char *pbcElemName(PbcElemKind k);  /* MLIR spelling: f32, bf16, i8 */
const char *pbcElemCType(PbcElemKind k); /* C type in generated headers */
/* The element count; for a tensor with the batch or symbolic sizes, each
 * of those counted as 1. */
int64_t pbcTensorNumElements(const PbcTensorType *t);

#endif
