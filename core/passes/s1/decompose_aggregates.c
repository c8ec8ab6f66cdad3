/* pbc-decompose-aggregates: rewrites ops that have no loop lowering of their
 * own into ones that do, on tensors, before bufferization:
 *  - linalg.softmax -> max/sub/exp/sum/div generics (no upstream pass exists
 *    in MLIR 22; its AggregatedOpInterface decomposition is reachable from C
 *    through the transform dialect);
 *  - linalg.conv_2d_nhwc_fhwc (TOSA's convolutions) -> conv_2d_nhwc_hwcf on
 *    a transposed copy of the filter: S3 tiles the hwcf form, whose filter
 *    rows are contiguous along F, the vector loop (the fhwc form ran
 *    untiled); the copy is F*KH*KW*C elements, once per call;
 * (tensor.pad is left to bufferization: MLIR 22's destination-passing-style
 * rewrite of pad miscomputed padded NCHW convolutions in our e2e tests.)
 * The transform script is data; this pass only applies it. */
#include <stdio.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/Dialect/Transform/Interpreter.h"
#include "pbc/c_pass.h"
#include "passes/passes.h"

static const char kScript[] =
    "module attributes {transform.with_named_sequence} {\n"
    "  transform.named_sequence @__transform_main(%root: !transform.any_op "
    "{transform.readonly}) {\n"
    "    %sm = transform.structured.match ops{[\"linalg.softmax\"]} in %root "
    ": (!transform.any_op) -> !transform.any_op\n"
    "    %d = transform.structured.decompose_interface %sm : "
    "(!transform.any_op) -> !transform.any_op\n"
    "    %cv = transform.structured.match ops{[\"linalg.conv_2d_nhwc_fhwc\"]} in %root "
    ": (!transform.any_op) -> !transform.any_op\n"
    "    %t = transform.structured.transpose_conv2d %cv : "
    "(!transform.any_op) -> !transform.any_op\n"
    "    %pk = transform.structured.match ops{[\"linalg.pack\"]} in %root "
    ": (!transform.any_op) -> !transform.op<\"linalg.pack\">\n"
    "    %lp:3 = transform.structured.lower_pack %pk : (!transform.op<\"linalg.pack\">) -> "
    "(!transform.op<\"tensor.pad\">, !transform.op<\"tensor.expand_shape\">, "
    "!transform.op<\"linalg.transpose\">)\n"
    "    %up = transform.structured.match ops{[\"linalg.unpack\"]} in %root "
    ": (!transform.any_op) -> !transform.op<\"linalg.unpack\">\n"
    "    %lu:4 = transform.structured.lower_unpack %up : (!transform.op<\"linalg.unpack\">) -> "
    "(!transform.op<\"tensor.empty\">, !transform.op<\"linalg.transpose\">, "
    "!transform.op<\"tensor.collapse_shape\">, !transform.op<\"tensor.extract_slice\">)\n"
    "    transform.yield\n"
    "  }\n"
    "}\n";

static MlirOperation findMain(MlirOperation script) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(script, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    MlirAttribute name =
        mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("sym_name"));
    if (pbcOpIsA(op, "transform.named_sequence") && !mlirAttributeIsNull(name) &&
        mlirStringRefEqual(mlirStringAttrGetValue(name),
                           mlirStringRefCreateFromCString("__transform_main")))
      return op;
  }
  return (MlirOperation){NULL};
}

static bool run(MlirOperation module, void *state) {
  (void)state;
  MlirContext ctx = mlirOperationGetContext(module);
  MlirOperation script = mlirOperationCreateParse(
      ctx, mlirStringRefCreateFromCString(kScript),
      mlirStringRefCreateFromCString("pbc-decompose-aggregates.transform"));
  if (mlirOperationIsNull(script))
    return false;
  MlirOperation main = findMain(script);
  MlirTransformOptions opts = mlirTransformOptionsCreate();
  MlirLogicalResult r = mlirTransformApplyNamedSequence(module, main, script, opts);
  mlirTransformOptionsDestroy(opts);
  mlirOperationDestroy(script);
  return mlirLogicalResultIsSuccess(r);
}

PBC_C_PASS_WITHOUT_OPTIONS(
    pbcDecomposeAggregatesPass, "pbc-decompose-aggregates", "builtin.module",
    "Decompose linalg.softmax and pack/unpack into loop-lowerable ops; fhwc convolutions to hwcf", run);
