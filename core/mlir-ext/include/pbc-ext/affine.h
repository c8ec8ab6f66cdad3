/*===- pbc-ext/affine.h - MLIR affine utilities, callable from C ---------===*\
|* Thin wrappers of MLIR C++ utilities the C API lacks. No policy here: the  *|
|* decisions (which loop, when) are made by the C passes that call these.    *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_EXT_AFFINE_H
#define PBC_EXT_AFFINE_H

#include <stdbool.h>

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/* mlir::isLoopParallel on an affine.for (no reductions). */
bool pbcExtAffineIsLoopParallel(MlirOperation forOp);
/* mlir::affineParallelize: replaces a parallel affine.for by an
 * affine.parallel, which it returns (null on failure). */
MlirOperation pbcExtAffineParallelize(MlirOperation forOp);
/* Constant trip count of an affine.for, or -1 if not constant. */
long long pbcExtAffineConstantTripCount(MlirOperation forOp);

#ifdef __cplusplus
}
#endif
#endif
