/*===- analysis/nest_work.h - How much work a loop nest does ------------------===*\
|* The measure behind "is this nest worth a fork and join" (pbc-parallelize)  *|
|* and "does fusing these nests make one worth it" (pbc-fuse-rows): ops       *|
|* executed, each weighted by what it costs next to an add.                   *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_NEST_WORK_H
#define PBC_NEST_WORK_H

#include "mlir-c/IR.h"

/* What one op costs in simple ops: a transcendental math op (exp, log,
 * tanh, erf...: a polynomial of about 16 ops once pbc-approximate-math
 * expands it on CPUs) 16, a division or square root (a slow, unpipelined
 * unit) 4, any other op 1. */
long long pbcOpWork(MlirOperation op);
/* Work of the nest `loop`: each op's, once per iteration of the loops
 * around it, summed; LLONG_MAX if a trip count is unknown or it overflows.
 * With vectorBits > 0 (an estimate before vectorization), an innermost loop
 * counts one iteration per vector of 32-bit lanes: the full lanes if its
 * trip is at least that (pbc-vectorize splits off the tail), else the lanes
 * dividing it (pbcVectorLanes). */
long long pbcNestWork(MlirOperation loop, int vectorBits);
/* Bytes the nest `loop` stores (each store's element or vector bytes, once
 * per iteration of the affine loops around it); LLONG_MAX if a trip count
 * is unknown. What a fill or a copy costs is its traffic, not its ops: one
 * vector store of 64 bytes counts as one op in pbcNestWork. */
long long pbcNestStoredBytes(MlirOperation loop);
/* The share of the cores' time spent working when `items` equal
 * iterations are dealt out statically (OpenMP's static schedule): 7 on 2
 * cores keep them busy 7/8 of the time; 1.0 for none or one core. */
double pbcStaticSplitBusyShare(long long items, long long cores);

#endif
