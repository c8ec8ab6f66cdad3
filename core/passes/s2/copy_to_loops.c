/* pbc-copy-to-loops: memref.copy between statically shaped buffers becomes
 * an affine loop nest (S2), classified and then vectorized and parallelized
 * by S3 like any pointwise nest. Upstream lowers memref.copy of a strided
 * view (e.g. the interior of a padded convolution input) to a call of
 * memrefCopy in the runtime library, element by element on one thread. */
#include "mlir-c/BuiltinTypes.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/op_list.h"
#include "passes/passes.h"

static void lower(MlirOperation copy) {
  MlirValue src = mlirOperationGetOperand(copy, 0), dst = mlirOperationGetOperand(copy, 1);
  MlirType st = mlirValueGetType(src), dt = mlirValueGetType(dst);
  if (!mlirTypeIsAMemRef(st) || !mlirShapedTypeHasStaticShape(st) ||
      !mlirShapedTypeHasStaticShape(dt) || mlirShapedTypeGetRank(st) > PBC_MAX_RANK)
    return;
  int rank = (int)mlirShapedTypeGetRank(st);
  MlirLocation loc = mlirOperationGetLocation(copy);
  int64_t shape[PBC_MAX_RANK];
  for (int d = 0; d < rank; ++d)
    shape[d] = mlirShapedTypeGetDimSize(st, d);
  MlirValue ivs[PBC_MAX_RANK];
  MlirOperation at;
  pbcBuildAffineNest(copy, shape, rank, loc, ivs, &at);
  MlirOperation load = pbcBuildAffineLoad(at, src, ivs, rank, loc);
  pbcBuildAffineStore(at, mlirOperationGetResult(load, 0), dst, ivs, rank, loc);
  mlirOperationDestroy(copy);
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  pbcOpListRewriteEach(func, "memref.copy", lower);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcCopyToLoopsPass, "pbc-copy-to-loops", "func.func",
                           "memref.copy of static shapes -> affine loop nest", run);
