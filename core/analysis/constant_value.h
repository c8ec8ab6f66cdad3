/*===- analysis/constant_value.h - Values known at compile time ---------------===*\
|* What a load reads when it is fixed at compile time: an element of a       *|
|* constant global, directly or through a pbc.copy replica of one.           *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_CONSTANT_VALUE_H
#define PBC_CONSTANT_VALUE_H

#include <stdbool.h>

#include "mlir-c/IR.h"
#include "pbc/affine_access.h"

/* Constant values of some loop ivs. */
typedef struct {
  MlirValue iv[PBC_MAX_BAND];
  long long value[PBC_MAX_BAND];
  int n;
} PbcIvValues;

/* The constant an index value has, given the ivs in `ivs` (arith.constant,
 * affine.apply of such, a bound iv). */
bool pbcEvalIndex(MlirValue v, const PbcIvValues *ivs, long long *out);
/* The value an affine.load or affine.vector_load reads (a scalar attribute
 * or a dense vector attribute), given the ivs in `ivs`, if it is fixed at
 * compile time; `globals` is the module's symbol table. */
bool pbcLoadConstantValue(MlirOperation load, const PbcIvValues *ivs, MlirSymbolTable globals,
                          MlirAttribute *value);
/* The one store into `buffer` if it is a fresh buffer written only by a
 * pbc.copy nest's store (its other users read it or free it), else null. */
MlirOperation pbcCopyBufferStore(MlirValue buffer);
/* The symbol table of the module around `func` (null if none), where
 * pbcLoadConstantValue looks up globals; the caller destroys it. */
MlirSymbolTable pbcModuleGlobals(MlirOperation func);

#endif
