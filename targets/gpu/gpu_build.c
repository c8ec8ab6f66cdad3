/* Generic construction of arith/scf/gpu ops (see gpu_build.h). */
#include "gpu_build.h"

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/GPU.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"


static MlirOperation insert(MlirOperation before, MlirOperationState *st) {
  MlirOperation op = mlirOperationCreate(st);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(before), before, op);
  return op;
}

MlirValue pbcGpuConstIndex(MlirOperation before, int64_t v) {
  return pbcBuildIndexConstant(before, v);
}

MlirValue pbcGpuConstI32(MlirOperation before, int32_t v) {
  MlirNamedAttribute value = pbcGpuNamedI32(before, "value", v);
  return pbcGpuOp(before, "arith.constant", 0, NULL,
                  mlirIntegerTypeGet(mlirOperationGetContext(before), 32), 1, &value);
}

MlirValue pbcGpuOp(MlirOperation before, const char *name, int n, const MlirValue *operands,
                   MlirType result, int nAttrs, const MlirNamedAttribute *attrs) {
  MlirOperation op = pbcBuildOp(before, name, n, operands, result, nAttrs, attrs);
  return mlirTypeIsNull(result) ? (MlirValue){NULL} : mlirOperationGetResult(op, 0);
}

MlirValue pbcGpuArith(MlirOperation before, const char *name, MlirValue a, MlirValue b) {
  char full[64];
  snprintf(full, sizeof(full), "arith.%s", name);
  MlirValue ops[2] = {a, b};
  return pbcGpuOp(before, full, 2, ops, mlirValueGetType(a), 0, NULL);
}

/* arith.cmpi or arith.cmpf NAME with the predicate's number. */
static MlirValue compare(MlirOperation before, const char *name, int predicate, MlirValue a,
                         MlirValue b) {
  MlirLocation loc = mlirOperationGetLocation(before);
  MlirContext ctx = mlirLocationGetContext(loc);
  MlirType i1 = mlirIntegerTypeGet(ctx, 1);
  MlirNamedAttribute pred =
      pbcNamedAttr(ctx, "predicate", mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), predicate));
  MlirOperationState st = mlirOperationStateGet(pbcStr(name), loc);
  MlirValue ops[2] = {a, b};
  mlirOperationStateAddOperands(&st, 2, ops);
  mlirOperationStateAddAttributes(&st, 1, &pred);
  mlirOperationStateAddResults(&st, 1, &i1);
  return mlirOperationGetResult(insert(before, &st), 0);
}

MlirValue pbcGpuSelect(MlirOperation before, MlirValue cond, MlirValue a, MlirValue b) {
  MlirValue ops[3] = {cond, a, b};
  return pbcGpuOp(before, "arith.select", 3, ops, mlirValueGetType(a), 0, NULL);
}

MlirValue pbcGpuConstF32(MlirOperation before, const char *text) {
  MlirNamedAttribute value = pbcGpuNamed(before, "value", pbcGpuParseAttr(before, text));
  return pbcGpuOp(before, "arith.constant", 0, NULL,
                  mlirF32TypeGet(mlirOperationGetContext(before)), 1, &value);
}

MlirValue pbcGpuLessThan(MlirOperation before, MlirValue a, MlirValue b) {
  return compare(before, "arith.cmpi", 2 /* slt */, a, b);
}

MlirValue pbcGpuCmpF(MlirOperation before, int predicate, MlirValue a, MlirValue b) {
  return compare(before, "arith.cmpf", predicate, a, b);
}

MlirValue pbcGpuShuffleXor(MlirOperation before, MlirValue v, int offset, int width) {
  MlirLocation loc = mlirOperationGetLocation(before);
  MlirContext ctx = mlirLocationGetContext(loc);
  MlirNamedAttribute mode =
      pbcGpuNamed(before, "mode", pbcGpuParseAttr(before, "#gpu<shuffle_mode xor>"));
  MlirValue ops[3] = {v, pbcGpuConstI32(before, offset), pbcGpuConstI32(before, width)};
  MlirType results[2] = {mlirValueGetType(v), mlirIntegerTypeGet(ctx, 1)};
  MlirOperationState st = mlirOperationStateGet(pbcStr("gpu.shuffle"), loc);
  mlirOperationStateAddOperands(&st, 3, ops);
  mlirOperationStateAddResults(&st, 2, results);
  mlirOperationStateAddAttributes(&st, 1, &mode);
  return mlirOperationGetResult(insert(before, &st), 0);
}

int64_t pbcGpuConstantOf(MlirValue v) {
  if (!mlirValueIsAOpResult(v) || !pbcOpIsA(mlirOpResultGetOwner(v), "arith.constant"))
    return -1;
  MlirOperation def = mlirOpResultGetOwner(v);
  MlirAttribute a = mlirOperationGetAttributeByName(def, pbcStr("value"));
  return mlirAttributeIsAInteger(a) ? mlirIntegerAttrGetValueInt(a) : -1;
}

MlirBlock pbcGpuBody(MlirOperation op, int region) {
  return mlirRegionGetFirstBlock(mlirOperationGetRegion(op, region));
}

MlirOperation pbcGpuBuildParallel(MlirOperation before, int n, const MlirValue *lbs,
                                  const MlirValue *ubs, const MlirValue *steps) {
  MlirLocation loc = mlirOperationGetLocation(before);
  MlirContext ctx = mlirLocationGetContext(loc);
  MlirType index = mlirIndexTypeGet(ctx);
  MlirType argTypes[8];
  MlirLocation argLocs[8];
  MlirValue operands[24];
  for (int i = 0; i < n; ++i) {
    argTypes[i] = index;
    argLocs[i] = loc;
    operands[i] = lbs[i];
    operands[n + i] = ubs[i];
    operands[2 * n + i] = steps[i];
  }
  int32_t segments[4] = {n, n, n, 0};
  MlirNamedAttribute seg =
      pbcNamedAttr(ctx, "operandSegmentSizes", mlirDenseI32ArrayGet(ctx, 4, segments));
  MlirRegion region = mlirRegionCreate();
  MlirBlock body = mlirBlockCreate(n, argTypes, argLocs);
  mlirRegionAppendOwnedBlock(region, body);
  MlirOperationState rst = mlirOperationStateGet(pbcStr("scf.reduce"), loc);
  mlirBlockAppendOwnedOperation(body, mlirOperationCreate(&rst));
  MlirOperationState st = mlirOperationStateGet(pbcStr("scf.parallel"), loc);
  mlirOperationStateAddOperands(&st, 3 * n, operands);
  mlirOperationStateAddAttributes(&st, 1, &seg);
  mlirOperationStateAddOwnedRegions(&st, 1, &region);
  return insert(before, &st);
}

MlirOperation pbcGpuBuildIf(MlirOperation before, MlirValue cond) {
  return pbcBuildIf(before, cond, false);
}

MlirValue pbcGpuDynamicSharedMemory(MlirOperation before) {
  return pbcGpuOp(before, "gpu.dynamic_shared_memory", 0, NULL,
                  pbcGpuParseType(before, "memref<?xi8, #gpu.address_space<workgroup>>"), 0, NULL);
}

MlirOperation pbcGpuBuildLaunch(MlirOperation before, const MlirValue grid[3],
                                const MlirValue block[3], MlirValue sharedBytes) {
  MlirLocation loc = mlirOperationGetLocation(before);
  MlirContext ctx = mlirLocationGetContext(loc);
  MlirType index = mlirIndexTypeGet(ctx);
  MlirType types[12];
  MlirLocation locs[12];
  for (int i = 0; i < 12; ++i)
    types[i] = index, locs[i] = loc;
  MlirRegion region = mlirRegionCreate();
  MlirBlock body = mlirBlockCreate(12, types, locs);
  mlirRegionAppendOwnedBlock(region, body);
  MlirOperationState tst = mlirOperationStateGet(pbcStr("gpu.terminator"), loc);
  mlirBlockAppendOwnedOperation(body, mlirOperationCreate(&tst));
  MlirValue ops[7] = {grid[0], grid[1], grid[2], block[0], block[1], block[2], sharedBytes};
  bool dynamicShared = !mlirValueIsNull(sharedBytes);
  int32_t segments[11] = {0, 1, 1, 1, 1, 1, 1, 0, 0, 0, dynamicShared};
  MlirNamedAttribute attrs[2] = {
      pbcNamedAttr(ctx, "operandSegmentSizes", mlirDenseI32ArrayGet(ctx, 11, segments)),
      pbcNamedAttr(ctx, "workgroup_attributions", mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), 0)),
  };
  MlirOperationState st = mlirOperationStateGet(pbcStr("gpu.launch"), loc);
  mlirOperationStateAddOperands(&st, 6 + dynamicShared, ops);
  mlirOperationStateAddAttributes(&st, 2, attrs);
  mlirOperationStateAddOwnedRegions(&st, 1, &region);
  return insert(before, &st);
}

MlirOperation pbcGpuBuildFor(MlirOperation before, MlirValue lb, MlirValue ub, MlirValue step,
                             int n, const MlirValue *inits) {
  enum { kMax = 256 };
  assert(n <= kMax && "pbcGpuBuildFor: at most 256 iter_args");
  MlirLocation loc = mlirOperationGetLocation(before);
  MlirType types[1 + kMax] = {mlirValueGetType(lb)};
  MlirLocation locs[1 + kMax] = {loc};
  MlirValue ops[3 + kMax] = {lb, ub, step};
  for (int i = 0; i < n; ++i) {
    types[1 + i] = mlirValueGetType(inits[i]);
    locs[1 + i] = loc;
    ops[3 + i] = inits[i];
  }
  MlirRegion region = mlirRegionCreate();
  MlirBlock body = mlirBlockCreate(1 + n, types, locs);
  mlirRegionAppendOwnedBlock(region, body);
  MlirValue carried[kMax];
  for (int i = 0; i < n; ++i)
    carried[i] = mlirBlockGetArgument(body, 1 + i);
  MlirOperationState yst = mlirOperationStateGet(pbcStr("scf.yield"), loc);
  mlirOperationStateAddOperands(&yst, n, carried);
  mlirBlockAppendOwnedOperation(body, mlirOperationCreate(&yst));
  MlirOperationState st = mlirOperationStateGet(pbcStr("scf.for"), loc);
  mlirOperationStateAddOperands(&st, 3 + n, ops);
  mlirOperationStateAddResults(&st, n, types + 1);
  mlirOperationStateAddOwnedRegions(&st, 1, &region);
  return insert(before, &st);
}

/* gpu-to-llvm lowers only the async forms of gpu.alloc/dealloc/memcpy: each
 * gets a stream of its own (gpu.wait async) and is waited for (gpu.wait), so
 * host code stays synchronous. */
static MlirValue streamBegin(MlirOperation before) {
  MlirLocation loc = mlirOperationGetLocation(before);
  MlirType token = mlirGPUAsyncTokenTypeGet(mlirLocationGetContext(loc));
  MlirOperationState st = mlirOperationStateGet(pbcStr("gpu.wait"), loc);
  mlirOperationStateAddResults(&st, 1, &token);
  return mlirOperationGetResult(insert(before, &st), 0);
}

static void streamEnd(MlirOperation before, MlirValue done) {
  MlirOperationState st = mlirOperationStateGet(pbcStr("gpu.wait"), mlirOperationGetLocation(before));
  mlirOperationStateAddOperands(&st, 1, &done);
  insert(before, &st);
}

MlirValue pbcGpuAlloc(MlirOperation before, MlirType type, MlirValue like) {
  MlirLocation loc = mlirOperationGetLocation(before);
  MlirContext ctx = mlirLocationGetContext(loc);
  MlirValue operands[9];
  int n = 0;
  for (intptr_t d = 0; d < mlirShapedTypeGetRank(type) && n < 8; ++d) {
    if (!mlirShapedTypeIsDynamicDim(type, d))
      continue;
    MlirValue idx = pbcGpuConstIndex(before, d);
    MlirOperationState dst = mlirOperationStateGet(pbcStr("memref.dim"), loc);
    MlirValue ops[2] = {like, idx};
    MlirType index = mlirIndexTypeGet(ctx);
    mlirOperationStateAddOperands(&dst, 2, ops);
    mlirOperationStateAddResults(&dst, 1, &index);
    operands[1 + n++] = mlirOperationGetResult(insert(before, &dst), 0);
  }
  operands[0] = streamBegin(before);
  int32_t segments[3] = {1, n, 0};
  MlirNamedAttribute seg =
      pbcNamedAttr(ctx, "operandSegmentSizes", mlirDenseI32ArrayGet(ctx, 3, segments));
  MlirType results[2] = {type, mlirGPUAsyncTokenTypeGet(ctx)};
  MlirOperationState st = mlirOperationStateGet(pbcStr("gpu.alloc"), loc);
  mlirOperationStateAddOperands(&st, 1 + n, operands);
  mlirOperationStateAddAttributes(&st, 1, &seg);
  mlirOperationStateAddResults(&st, 2, results);
  MlirOperation alloc = insert(before, &st);
  streamEnd(before, mlirOperationGetResult(alloc, 1));
  return mlirOperationGetResult(alloc, 0);
}

static void asyncOp(MlirOperation before, const char *name, int n, const MlirValue *args) {
  MlirLocation loc = mlirOperationGetLocation(before);
  MlirType token = mlirGPUAsyncTokenTypeGet(mlirLocationGetContext(loc));
  MlirValue ops[3] = {streamBegin(before)};
  for (int i = 0; i < n; ++i)
    ops[1 + i] = args[i];
  MlirOperationState st = mlirOperationStateGet(pbcStr(name), loc);
  mlirOperationStateAddOperands(&st, 1 + n, ops);
  mlirOperationStateAddResults(&st, 1, &token);
  streamEnd(before, mlirOperationGetResult(insert(before, &st), 0));
}

void pbcGpuDealloc(MlirOperation before, MlirValue buffer) {
  asyncOp(before, "gpu.dealloc", 1, &buffer);
}

void pbcGpuMemcpy(MlirOperation before, MlirValue dst, MlirValue src) {
  MlirValue args[2] = {dst, src};
  asyncOp(before, "gpu.memcpy", 2, args);
}

MlirNamedAttribute pbcGpuNamed(MlirOperation at, const char *name, MlirAttribute a) {
  return pbcNamedAttr(mlirOperationGetContext(at), name, a);
}

MlirNamedAttribute pbcGpuNamedI32(MlirOperation at, const char *name, int32_t value) {
  MlirContext ctx = mlirOperationGetContext(at);
  return pbcNamedAttr(ctx, name, mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 32), value));
}

MlirValue pbcGpuVectorExtract(MlirOperation before, MlirValue vec, int n, const int64_t *pos,
                              MlirType result) {
  MlirNamedAttribute at = pbcNamedAttr(mlirOperationGetContext(before), "static_position",
                                mlirDenseI64ArrayGet(mlirOperationGetContext(before), n, pos));
  return pbcGpuOp(before, "vector.extract", 1, &vec, result, 1, &at);
}

MlirValue pbcGpuVectorInsert(MlirOperation before, MlirValue value, MlirValue vec, int n,
                             const int64_t *pos) {
  MlirNamedAttribute at = pbcNamedAttr(mlirOperationGetContext(before), "static_position",
                                mlirDenseI64ArrayGet(mlirOperationGetContext(before), n, pos));
  MlirValue ops[2] = {value, vec};
  return pbcGpuOp(before, "vector.insert", 2, ops, mlirValueGetType(vec), 1, &at);
}

MlirNamedAttribute pbcGpuNamedIndex(MlirOperation at, const char *name, int64_t value) {
  MlirContext ctx = mlirOperationGetContext(at);
  return pbcNamedAttr(ctx, name, mlirIntegerAttrGet(mlirIndexTypeGet(ctx), value));
}

MlirNamedAttribute pbcGpuNamedUnit(MlirOperation at, const char *name) {
  MlirContext ctx = mlirOperationGetContext(at);
  return pbcNamedAttr(ctx, name, mlirUnitAttrGet(ctx));
}

void pbcGpuMoveRange(MlirOperation first, MlirOperation end, MlirOperation before) {
  for (MlirOperation op = first; op.ptr != end.ptr;) {
    MlirOperation next = mlirOperationGetNextInBlock(op);
    mlirOperationMoveBefore(op, before);
    op = next;
  }
}

MlirAttribute pbcGpuParseAttr(MlirOperation op, const char *text) {
  return mlirAttributeParseGet(mlirOperationGetContext(op), pbcStr(text));
}

MlirType pbcGpuParseType(MlirOperation op, const char *text) {
  return mlirTypeParseGet(mlirOperationGetContext(op), pbcStr(text));
}

MlirAttribute pbcGpuLoopMapping(MlirOperation op, const char *const *procs, int n) {
  MlirAttribute elems[8];
  for (int i = 0; i < n && i < 8; ++i) {
    char text[160];
    snprintf(text, sizeof(text),
             "#gpu.loop_dim_map<processor = %s, map = (d0) -> (d0), bound = (d0) -> (d0)>",
             procs[i]);
    elems[i] = pbcGpuParseAttr(op, text);
  }
  return mlirArrayAttrGet(mlirOperationGetContext(op), n < 8 ? n : 8, elems);
}
