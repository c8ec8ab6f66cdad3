/*===- gpu_build.h - Generic construction of the ops GPU passes create ----===*\
|* MLIR's C API builds ops generically; these fill in operands, attributes   *|
|* and regions for the few arith/scf/gpu ops the GPU-generic passes insert.  *|
|* Every builder inserts its op before `before`.                             *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_GPU_BUILD_H
#define PBC_GPU_BUILD_H

#include <stdint.h>

#include "mlir-c/IR.h"

MlirValue pbcGpuConstIndex(MlirOperation before, int64_t v);
/* arith.constant v : i32 (shuffle offsets and widths, shared-memory bytes). */
MlirValue pbcGpuConstI32(MlirOperation before, int32_t v);
/* Any op NAME with operands, attributes and at most one result (a null
 * `result` type: none); returns the result or a null value. */
MlirValue pbcGpuOp(MlirOperation before, const char *name, int n, const MlirValue *operands,
                   MlirType result, int nAttrs, const MlirNamedAttribute *attrs);
/* arith.NAME a, b (addi, muli, andi, ...). */
MlirValue pbcGpuArith(MlirOperation before, const char *name, MlirValue a, MlirValue b);
/* arith.select cond, a, b. */
MlirValue pbcGpuSelect(MlirOperation before, MlirValue cond, MlirValue a, MlirValue b);
/* arith.constant of f32 attribute text ("0.0 : f32", "0xFF800000 : f32"). */
MlirValue pbcGpuConstF32(MlirOperation before, const char *text);
/* arith.cmpi slt a, b. */
MlirValue pbcGpuLessThan(MlirOperation before, MlirValue a, MlirValue b);
/* arith.cmpf with the predicate's number (1: oeq, 4: olt, ...). */
MlirValue pbcGpuCmpF(MlirOperation before, int predicate, MlirValue a, MlirValue b);
/* gpu.shuffle xor: each lane gets the value of lane (its own ^ offset) of
 * a group of `width`. */
MlirValue pbcGpuShuffleXor(MlirOperation before, MlirValue v, int offset, int width);
/* The constant an index value holds, or -1 if it is not an arith.constant. */
int64_t pbcGpuConstantOf(MlirValue v);

/* scf.parallel over n dims with an empty body (just scf.reduce); the body
 * block's arguments are the induction variables. */
MlirOperation pbcGpuBuildParallel(MlirOperation before, int n, const MlirValue *lbs,
                                  const MlirValue *ubs, const MlirValue *steps);
/* scf.if cond without results and without else; returns the op. */
MlirOperation pbcGpuBuildIf(MlirOperation before, MlirValue cond);
/* The first block of region i of op. */
MlirBlock pbcGpuBody(MlirOperation op, int region);

/* gpu.launch with grid and block sizes (index values) and, unless null,
 * the bytes of dynamic shared memory (an i32 value); its body block has the
 * 12 index arguments (block ids, thread ids, grid and block sizes, each x,
 * y, z) and ends with gpu.terminator. */
MlirOperation pbcGpuBuildLaunch(MlirOperation before, const MlirValue grid[3],
                                const MlirValue block[3], MlirValue sharedBytes);
/* The launch's dynamic shared memory as bytes (memref<?xi8>, workgroup
 * address space), for memref.view to carve. */
MlirValue pbcGpuDynamicSharedMemory(MlirOperation before);
/* scf.for lb..ub step with n (at most 256) iter_args seeded by inits; the
 * body ends with scf.yield of the iter_args (set its operands to the values
 * to carry). */
MlirOperation pbcGpuBuildFor(MlirOperation before, MlirValue lb, MlirValue ub, MlirValue step,
                             int n, const MlirValue *inits);

/* gpu.alloc of a memref of `type` (dynamic sizes taken from `like` with
 * memref.dim), gpu.dealloc, gpu.memcpy dst <- src. */
MlirValue pbcGpuAlloc(MlirOperation before, MlirType type, MlirValue like);
void pbcGpuDealloc(MlirOperation before, MlirValue buffer);
void pbcGpuMemcpy(MlirOperation before, MlirValue dst, MlirValue src);

/* Named attributes in at's context: any attribute, an index integer, an
 * i32, a unit. */
MlirNamedAttribute pbcGpuNamed(MlirOperation at, const char *name, MlirAttribute a);
MlirNamedAttribute pbcGpuNamedIndex(MlirOperation at, const char *name, int64_t value);
MlirNamedAttribute pbcGpuNamedI32(MlirOperation at, const char *name, int32_t value);
MlirNamedAttribute pbcGpuNamedUnit(MlirOperation at, const char *name);

/* vector.extract of the element (or sub-vector) at pos[0..n) of vec, of
 * type `result`; vector.insert of value there, returning the new vector. */
MlirValue pbcGpuVectorExtract(MlirOperation before, MlirValue vec, int n, const int64_t *pos,
                              MlirType result);
MlirValue pbcGpuVectorInsert(MlirOperation before, MlirValue value, MlirValue vec, int n,
                             const int64_t *pos);

/* Moves the ops from `first` up to (not including) `end`, in order, before
 * `before`. */
void pbcGpuMoveRange(MlirOperation first, MlirOperation end, MlirOperation before);

/* Parses attribute text (e.g. a #gpu.loop_dim_map) or type text (e.g.
 * vector<4x2xf16>) in op's context. */
MlirAttribute pbcGpuParseAttr(MlirOperation op, const char *text);
/* A scf.parallel `mapping` for convert-parallel-loops-to-gpu: dimension i
 * on procs[i] (block_x, thread_y, sequential, ...), at most 8. */
MlirAttribute pbcGpuLoopMapping(MlirOperation op, const char *const *procs, int n);
MlirType pbcGpuParseType(MlirOperation op, const char *text);

#endif
