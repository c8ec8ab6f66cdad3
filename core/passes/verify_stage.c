/*===- verify_stage.c - pbc-verify-stage{stage=sN}: stage contracts -------===*\
|* Anchor builtin.module. Checks the contract that holds after stage sN       *|
|* (DESIGN.md §2) and reports the first offending op in pre-order, so the     *|
|* error points at the outermost culprit:                                     *|
|*   s1  no value of tensor type (op results, block arguments incl. function  *|
|*       arguments, func signatures) except results of arith.constant.        *|
|*   s2  s1 + no linalg.* op + every root affine.for has pbc.kind + every    *|
|*       affine load/store whose subscripts range over constant-bounded      *|
|*       loops stays inside its memref (else the input's shapes disagree     *|
|*       with its ops, e.g. a convolution's output larger than its input    *|
|*       allows, a case MLIR's verifiers let through).                       *|
|*   s3  s1 + no linalg.* op + every root affine.for/affine.parallel has      *|
|*       pbc.kind (S3 passes must keep or propagate it).                      *|
|*   s4  no affine.* op.                                                      *|
|*   s5  only builtin.module, llvm.* and omp.* ops, gpu.binary and the       *|
|*       gpu.launch_func ops that call into it.                               *|
|* A root loop is an affine.for/affine.parallel not nested in another one     *|
|* (the same definition pbc-classify-nests tags).                             *|
\*===----------------------------------------------------------------------===*/
#include "passes/passes.h"

#include <stdio.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/IR.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/marks.h"

typedef struct VerifyState {
  int stage; /* 1..5 */
} VerifyState;

typedef struct Checker {
  int stage;
  bool failed;
} Checker;

static bool dialectIs(MlirOperation op, const char *dialect) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  size_t l = strlen(dialect);
  return s.length > l && strncmp(s.data, dialect, l) == 0 && s.data[l] == '.';
}

static bool isAffineLoop(MlirOperation op) {
  return pbcOpIsA(op, "affine.for") || pbcOpIsA(op, "affine.parallel");
}

static void appendCb(MlirStringRef s, void *userData) {
  char **cursor = userData;
  char *end = cursor[1];
  size_t room = (size_t)(end - cursor[0]);
  size_t n = s.length < room ? s.length : room;
  memcpy(cursor[0], s.data, n);
  cursor[0] += n;
}

static void typeStr(MlirType t, char *buf, size_t len) {
  char *cursor[2] = {buf, buf + len - 1};
  mlirTypePrint(t, appendCb, cursor);
  *cursor[0] = 0;
}

/* Reports a tensor-typed value; `what` says where it is. */
static void failTensor(Checker *c, MlirOperation op, const char *what,
                       intptr_t idx, MlirType t) {
  char name[128], type[256];
  typeStr(t, type, sizeof(type));
  pbcEmitOpError(op,
                 "stage s%d contract violated: %s #%ld of '%s' has tensor "
                 "type '%s' (expected no tensor values after S1)",
                 c->stage, what, (long)idx, pbcOpName(op, name, sizeof(name)),
                 type);
  c->failed = true;
}

/* s1: results (except arith.constant's), block arguments of op's regions,
 * and the inputs/results of a function type (declarations have no body). */
static bool checkNoTensors(Checker *c, MlirOperation op) {
  if (!pbcOpIsA(op, "arith.constant"))
    for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i) {
      MlirType t = mlirValueGetType(mlirOperationGetResult(op, i));
      if (mlirTypeIsATensor(t)) {
        failTensor(c, op, "result", i, t);
        return false;
      }
    }
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); ++r)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
         !mlirBlockIsNull(b); b = mlirBlockGetNextInRegion(b))
      for (intptr_t i = 0; i < mlirBlockGetNumArguments(b); ++i) {
        MlirType t = mlirValueGetType(mlirBlockGetArgument(b, i));
        if (mlirTypeIsATensor(t)) {
          failTensor(c, op, "block argument", i, t);
          return false;
        }
      }
  MlirAttribute ft = mlirOperationGetInherentAttributeByName(
      op, mlirStringRefCreateFromCString("function_type"));
  if (!mlirAttributeIsNull(ft) && mlirAttributeIsAType(ft)) {
    MlirType f = mlirTypeAttrGetValue(ft);
    if (mlirTypeIsAFunction(f)) {
      for (intptr_t i = 0; i < mlirFunctionTypeGetNumInputs(f); ++i)
        if (mlirTypeIsATensor(mlirFunctionTypeGetInput(f, i))) {
          failTensor(c, op, "function input", i,
                     mlirFunctionTypeGetInput(f, i));
          return false;
        }
      for (intptr_t i = 0; i < mlirFunctionTypeGetNumResults(f); ++i)
        if (mlirTypeIsATensor(mlirFunctionTypeGetResult(f, i))) {
          failTensor(c, op, "function result", i,
                     mlirFunctionTypeGetResult(f, i));
          return false;
        }
    }
  }
  return true;
}

static bool fail(Checker *c, MlirOperation op, const char *why) {
  char name[128];
  pbcEmitOpError(op, "stage s%d contract violated: '%s' %s", c->stage,
                 pbcOpName(op, name, sizeof(name)), why);
  c->failed = true;
  return false;
}

static bool hasKind(MlirOperation op) {
  MlirAttribute a = mlirOperationGetDiscardableAttributeByName(
      op, mlirStringRefCreateFromCString(PBC_MARK_KIND));
  return !mlirAttributeIsNull(a) && mlirAttributeIsAString(a);
}

/* Checks op itself; false (after reporting) on a violation. */
static bool checkOp(Checker *c, MlirOperation op) {
  switch (c->stage) {
  case 1:
    return checkNoTensors(c, op);
  case 2:
  case 3:
    if (dialectIs(op, "linalg"))
      return fail(c, op,
                  c->stage == 2
                      ? "remains after S2 (expected affine loop nests)"
                      : "remains after S3 (expected affine loop nests)");
    return checkNoTensors(c, op);
  case 4:
    if (dialectIs(op, "affine"))
      return fail(c, op,
                  "remains after S4 (expected scf and target "
                  "parallelism, no affine ops)");
    return true;
  default:
    /* omp ops on LLVM types translate directly to LLVM IR (OpenMP runtime
     * calls), like llvm ops; so do gpu.launch_func ops of a gpu.binary
     * (runtime calls with the embedded device code). */
    if (pbcOpIsA(op, "builtin.module") || pbcOpIsA(op, "gpu.binary") ||
        pbcOpIsA(op, "gpu.launch_func") ||
        dialectIs(op, "llvm") || dialectIs(op, "omp"))
      return true;
    return fail(c, op,
                "remains after S5 (expected only llvm and omp dialect ops, "
                "gpu.binary and gpu.launch_func)");
  }
}

static bool isRootLoop(MlirOperation op) {
  if (!isAffineLoop(op))
    return false;
  for (MlirOperation p = mlirOperationGetParentOperation(op);
       !mlirOperationIsNull(p); p = mlirOperationGetParentOperation(p))
    if (isAffineLoop(p))
      return false;
  return true;
}

/* s2 tags root affine.for; by s3 root bands may have become affine.parallel. */
static bool checkRootLoop(Checker *c, MlirOperation op) {
  bool checked = c->stage == 3 || pbcOpIsA(op, "affine.for");
  if (checked && isRootLoop(op) && !hasKind(op))
    return fail(c, op,
                "root loop has no pbc.kind attribute (every root "
                "nest must be classified)");
  return true;
}

/* s2: the access's subscripts stay within the memref's static shape. */
static bool checkInBounds(Checker *c, MlirOperation op) {
  PbcAccess acc;
  if (!pbcAccessGet(op, &acc))
    return true;
  MlirType t = mlirValueGetType(acc.memref);
  if (!mlirTypeIsAMemRef(t) || mlirShapedTypeGetRank(t) != acc.rank)
    return true;
  for (int d = 0; d < acc.rank; ++d) {
    int64_t size = mlirShapedTypeGetDimSize(t, d);
    long long lo, hi;
    int known = pbcLinearRange(&acc.subscripts[d], &lo, &hi);
    if (known == 0)
      return true; /* never executed */
    if (known < 0 || mlirShapedTypeIsDynamicSize(size))
      continue;
    if (d == acc.rank - 1 && acc.lanes)
      hi += acc.lanes - 1;
    if (lo < 0 || hi >= size) {
      char name[128], type[256];
      typeStr(t, type, sizeof(type));
      pbcEmitOpError(op,
                     "'%s' %s %s out of bounds: its index %d ranges over [%lld, %lld], the size "
                     "is %lld (the op's operand shapes, strides or offsets disagree)",
                     pbcOpName(op, name, sizeof(name)), acc.isWrite ? "writes" : "reads", type, d,
                     lo, hi, (long long)size);
      c->failed = true;
      return false;
    }
  }
  return true;
}

static MlirWalkResult visit(MlirOperation op, void *userData) {
  Checker *c = userData;
  if (!checkOp(c, op))
    return MlirWalkResultInterrupt;
  if (c->stage == 2 && !checkInBounds(c, op))
    return MlirWalkResultInterrupt;
  if ((c->stage == 2 || c->stage == 3) && !checkRootLoop(c, op))
    return MlirWalkResultInterrupt;
  return MlirWalkResultAdvance;
}

static bool runVerifyStage(MlirOperation module, void *state) {
  Checker c = {((VerifyState *)state)->stage, false};
  mlirOperationWalk(module, visit, &c, MlirWalkPreOrder);
  return !c.failed;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcVerifyStagePass = {
    "pbc-verify-stage",
    "builtin.module",
    "Check the contract that holds after a pipeline stage (stage=s1..s5)",
    runVerifyStage,
    sizeof(VerifyState),
    createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  static const char *const known[] = {"stage", NULL};
  if (!pbcPassOptionsCheck(options, known, err, errLen))
    return (MlirPass){NULL};
  char stage[16];
  if (!pbcPassOptionGet(options, "stage", stage, sizeof(stage))) {
    snprintf(err, errLen, "missing option 'stage' (one of s1..s5)");
    return (MlirPass){NULL};
  }
  if (strlen(stage) != 2 || stage[0] != 's' || stage[1] < '1' ||
      stage[1] > '5') {
    snprintf(err, errLen, "bad stage '%s' (expected one of s1..s5)", stage);
    return (MlirPass){NULL};
  }
  VerifyState st = {stage[1] - '0'};
  return pbcCPassCreate(&pbcVerifyStagePass, &st);
}
