/*===- pbc/specialize_shapes.h - Fixing an entry's dynamic sizes ---------===*\
|* pbc's stages compile static shapes. A program whose entry points take or *|
|* return `tensor<?x...>` (what torch-mlir, JAX and ONNX importers write    *|
|* for a dynamic batch or sequence) is compiled for given sizes: the        *|
|* entry's arguments get the static types, a tensor.cast back to the        *|
|* dynamic type feeds the old uses, and canonicalization carries the sizes  *|
|* through (tensor.dim, tensor.empty, linalg's cast folding, reshapes); the *|
|* results take the static types the program computes. Whatever stays       *|
|* dynamic is a located error: never a plan for other sizes.                *|
|*                                                                          *|
|* Each distinct size is its own compile (libpbc caches the library, the   *|
|* driver the kernels): a per-size specialization, not symbolic code.      *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_SPECIALIZE_SHAPES_H
#define PBC_SPECIALIZE_SHAPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mlir-c/IR.h"
#include "pbc/entry_sig.h"

#define PBC_MAX_SHAPE_SPECS 256

/* --shape=[ENTRY:]ARG=D0xD1x... (ARG: the input's position, from 0; no
 * ENTRY: every entry's input ARG), --dim=N (every `?` no shape fixes). */
typedef struct PbcGivenShape {
  char entry[128]; /* "": every entry */
  int arg, rank;
  int64_t dims[PBC_MAX_RANK];
} PbcGivenShape;

typedef struct PbcShapeSpec {
  PbcGivenShape shapes[PBC_MAX_SHAPE_SPECS];
  int numShapes;
  int64_t dim; /* 0: none */
} PbcShapeSpec;

/* Adds the shapes of `text`: one or more `[ENTRY:]ARG=D0xD1...` separated by
 * ';' (a rank-0 input: `ARG=`). False with a reason on malformed text. */
bool pbcShapeSpecParse(PbcShapeSpec *spec, const char *text, char *why, size_t whyLen);
/* Whether func.func f takes or returns a tensor of dynamic shape. */
bool pbcFuncHasDynamicEntry(MlirOperation f);
/* Whether a public function of m takes or returns a tensor of dynamic shape. */
bool pbcModuleHasDynamicEntries(MlirModule m);
/* Fixes every public function's dynamic sizes from spec (see above) and
 * checks the given shapes against static arguments. False after a located
 * error. A module without dynamic entries and an empty spec is untouched. */
bool pbcSpecializeShapes(MlirModule m, const PbcShapeSpec *spec);

#endif
