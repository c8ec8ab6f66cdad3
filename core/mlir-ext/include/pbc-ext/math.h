/*===- pbc-ext/math.h - MLIR's math approximations, callable from C -------===*\
|* Thin wrapper of the math dialect's rewrite patterns (which the pass        *|
|* registry does not expose). The caller decides where and which ops.        *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_EXT_MATH_H
#define PBC_EXT_MATH_H

#include <stdbool.h>

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Applies mlir::populateMathF32ExpansionPatterns and
 * populateMathPolynomialApproximationPatterns greedily under `op`, for the
 * math ops named in ops[0..n) ("tanh", "exp", ...), or for MLIR's default
 * set when n == 0. Returns false if the rewrite did not converge. */
bool pbcExtMathApproximate(MlirOperation op, const char *const *ops, int n);

#ifdef __cplusplus
}
#endif

#endif
