/* Transposed copies of inputs that a key nest reads across its vector loop
 * (the layout side of PolyBlocks' fast buffers, §4.4): attention's Q·Kᵀ reads
 * K[h][j][k] along the output column j, a linear layer reads W[n][k] along
 * n. Without a copy the tiler cannot vectorize such a nest, and it ran as one
 * dot product with a horizontal sum per output element. The input is copied
 * once, before the nest, into a buffer whose last dimension is the one the
 * vector loop walks (O(size of the input) against the nest's O(M*N*K)
 * work); the access is redirected to it, and the nest is then tiled and
 * packed like any matmul. */
#include "pbc/transpose_input.h"

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/ir_build.h"

static MlirStringRef str(const char *s) { return mlirStringRefCreateFromCString(s); }

int pbcTransposableDim(const PbcAccess *acc, MlirOperation root, MlirOperation loop) {
  MlirType t = mlirValueGetType(acc->memref);
  if (acc->isWrite || acc->lanes || acc->rank < 2 || !pbcMemrefIsRoot(acc->memref) ||
      !mlirTypeIsAMemRef(t) || !mlirShapedTypeHasStaticShape(t) || !pbcMemrefHasIdentityLayout(t) ||
      pbcValueIsDefinedInside(acc->memref, root))
    return -1;
  MlirValue iv = pbcLoopIv(loop);
  int dim = -1;
  for (int d = 0; d < acc->rank; ++d) {
    long long c = pbcLinearCoeff(&acc->subscripts[d], iv);
    if (c == 0)
      continue;
    if (c != 1 || dim >= 0)
      return -1; /* strided or along two dimensions: a transpose won't help */
    dim = d;
  }
  return dim >= 0 && dim < acc->rank - 1 ? dim : -1;
}

void pbcTransposeInput(const PbcAccess *acc, int dim, MlirOperation root) {
  MlirType t = mlirValueGetType(acc->memref);
  MlirContext ctx = mlirTypeGetContext(t);
  MlirLocation loc = mlirOperationGetLocation(root);
  int rank = acc->rank;
  /* perm[p]: the input dimension at position p of the copy. */
  int perm[PBC_MAX_RANK], p = 0;
  for (int d = 0; d < rank; ++d)
    if (d != dim)
      perm[p++] = d;
  perm[p] = dim;
  int64_t shape[PBC_MAX_RANK];
  for (int q = 0; q < rank; ++q)
    shape[q] = mlirShapedTypeGetDimSize(t, perm[q]);
  MlirType ct = mlirMemRefTypeContiguousGet(mlirShapedTypeGetElementType(t), rank, shape,
                                            mlirAttributeGetNull());
  MlirValue copy = mlirOperationGetResult(pbcBuildAlloc(root, ct, loc), 0);
  /* copy[q...] = input[perm^-1]: the loops walk the copy in order, so its
   * stores are contiguous. */
  MlirValue ivs[PBC_MAX_RANK], src[PBC_MAX_RANK];
  MlirOperation at;
  MlirOperation nest = pbcBuildAffineNest(root, shape, rank, loc, ivs, &at);
  for (int q = 0; q < rank; ++q)
    src[perm[q]] = ivs[q];
  MlirOperation load = pbcBuildAffineLoad(at, acc->memref, src, rank, loc);
  pbcBuildAffineStore(at, mlirOperationGetResult(load, 0), copy, ivs, rank, loc);
  mlirOperationSetAttributeByName(nest, str("pbc.copy"), mlirUnitAttrGet(ctx));
  pbcNestSetKind(nest, "pointwise");
  pbcBuildDealloc(mlirOperationGetNextInBlock(root), copy, loc);
  /* The access reads the copy with its subscripts permuted alike. */
  MlirAffineMap map =
      mlirAffineMapAttrGetValue(mlirOperationGetAttributeByName(acc->op, str("map")));
  MlirAffineExpr results[PBC_MAX_RANK];
  bool dims = mlirAffineMapGetNumDims(map) == rank && mlirAffineMapGetNumSymbols(map) == 0;
  for (int q = 0; q < rank; ++q) {
    results[q] = mlirAffineMapGetResult(map, perm[q]);
    dims &= mlirAffineExprIsADim(results[q]);
  }
  if (dims) {
    /* Plain subscripts (the usual case): reorder the operands and keep an
     * identity map, which later rewrites of the access (packing) compose
     * without leaving affine.apply ops behind. */
    MlirValue operands[PBC_MAX_RANK];
    for (int q = 0; q < rank; ++q)
      operands[q] = mlirOperationGetOperand(acc->op, 1 + mlirAffineDimExprGetPosition(results[q]));
    for (int q = 0; q < rank; ++q)
      mlirOperationSetOperand(acc->op, 1 + q, operands[q]);
    map = mlirAffineMapMultiDimIdentityGet(ctx, rank);
  } else {
    map = mlirAffineMapGet(ctx, mlirAffineMapGetNumDims(map), mlirAffineMapGetNumSymbols(map), rank,
                           results);
  }
  mlirOperationSetAttributeByName(acc->op, str("map"), mlirAffineMapAttrGet(map));
  mlirOperationSetOperand(acc->op, 0, copy);
}
