/*===- interleave.h - Vectors across a small innermost dimension ------===*\
|* pbc-interleave's test, shared with pbc-tile: a nest it vectorizes across  *|
|* (w, c) pairs must not first be register-tiled along c alone, whose few   *|
|* channels give vectors of 2, 4 or 8 lanes.                                 *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_INTERLEAVE_H
#define PBC_INTERLEAVE_H

#include <stdbool.h>

#include "mlir-c/IR.h"

/* Whether pbc-interleave would vectorize loop `w` together with the loop
 * directly inside it (see core/passes/interleave.c for the conditions). */
bool pbcInterleaveApplies(MlirOperation w, int vectorBits);

#endif
