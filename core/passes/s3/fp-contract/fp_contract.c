/* pbc-fp-contract: allows a*b+c to become one fused multiply-add
 * (fastmath<contract> on arith.mulf/addf/subf), as clang's -ffp-contract=fast
 * and every vendor GEMM do: one rounding instead of two, and half the
 * floating-point instructions in every matmul and convolution. */
#include "mlir-c/IR.h"
#include "pbc/c_pass.h"
#include "passes/passes.h"

static MlirWalkResult contract(MlirOperation op, void *data) {
  MlirAttribute *attr = data;
  if (pbcOpIsA(op, "arith.mulf") || pbcOpIsA(op, "arith.addf") || pbcOpIsA(op, "arith.subf"))
    mlirOperationSetInherentAttributeByName(
        op, mlirStringRefCreateFromCString("fastmath"), *attr);
  return MlirWalkResultAdvance;
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  MlirAttribute attr = mlirAttributeParseGet(
      mlirOperationGetContext(func), mlirStringRefCreateFromCString("#arith.fastmath<contract>"));
  mlirOperationWalk(func, contract, &attr, MlirWalkPreOrder);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcFpContractPass, "pbc-fp-contract", "func.func",
                           "Allow fused multiply-add contraction", run);
