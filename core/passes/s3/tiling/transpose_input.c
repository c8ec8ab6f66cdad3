/* Transposed copies of inputs that a key nest reads across its vector loop
 * (the layout side of PolyBlocks' fast buffers, §4.4): attention's Q·Kᵀ reads
 * K[h][j][k] along the output column j, a linear layer reads W[n][k] along
 * n. Without a copy the tiler cannot vectorize such a nest, and it ran as one
 * dot product with a horizontal sum per output element. The input is copied
 * once, before the nest, into a buffer whose last dimension is the one the
 * vector loop walks (O(size of the input) against the nest's O(M*N*K)
 * work); the access is redirected to it, and the nest is then tiled and
 * packed like any matmul. */
#include "passes/s3/tiling/transpose_input.h"

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/marks.h"


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

/* copy[q...] = in[perm^-1] over the whole copy (of `shape`), one element at
 * a time, before `before`. The loops walk the copy's dimensions in order but
 * for the last two, swapped: the input's rows outer, each read along the
 * inner loop; pbc-transpose-copies makes blocks of that pair. */
static void buildCopy(MlirOperation before, MlirValue in, MlirValue copy, const int *perm, int rank,
                      const int64_t *shape, MlirLocation loc) {
  int order[PBC_MAX_RANK]; /* order[l]: the copy dimension loop l walks */
  int64_t extent[PBC_MAX_RANK];
  for (int l = 0; l < rank; ++l)
    order[l] = l;
  order[rank - 2] = rank - 1;
  order[rank - 1] = rank - 2;
  for (int l = 0; l < rank; ++l)
    extent[l] = shape[order[l]];
  MlirValue loopIvs[PBC_MAX_RANK], ivs[PBC_MAX_RANK], src[PBC_MAX_RANK];
  MlirOperation at;
  MlirOperation nest = pbcBuildAffineNest(before, extent, rank, loc, loopIvs, &at);
  for (int l = 0; l < rank; ++l)
    ivs[order[l]] = loopIvs[l];
  for (int q = 0; q < rank; ++q)
    src[perm[q]] = ivs[q];
  MlirOperation load = pbcBuildAffineLoad(at, in, src, rank, loc);
  pbcBuildAffineStore(at, mlirOperationGetResult(load, 0), copy, ivs, rank, loc);
  mlirOperationSetAttributeByName(nest, pbcStr(PBC_MARK_COPY),
                                  mlirUnitAttrGet(mlirLocationGetContext(loc)));
  pbcNestSetKind(nest, "pointwise");
}

void pbcDimLastPermutation(int rank, int dim, int *perm) {
  int p = 0;
  for (int d = 0; d < rank; ++d)
    if (d != dim)
      perm[p++] = d;
  perm[p] = dim;
}

void pbcTransposeInput(const PbcAccess *acc, int dim, MlirOperation root) {
  MlirType t = mlirValueGetType(acc->memref);
  MlirContext ctx = mlirTypeGetContext(t);
  MlirLocation loc = mlirOperationGetLocation(root);
  int rank = acc->rank;
  int perm[PBC_MAX_RANK];
  pbcDimLastPermutation(rank, dim, perm);
  int64_t shape[PBC_MAX_RANK];
  for (int q = 0; q < rank; ++q)
    shape[q] = mlirShapedTypeGetDimSize(t, perm[q]);
  MlirType elem = mlirShapedTypeGetElementType(t);
  MlirType ct = mlirMemRefTypeContiguousGet(elem, rank, shape, mlirAttributeGetNull());
  MlirValue copy = mlirOperationGetResult(pbcBuildAlloc(root, ct, loc), 0);
  buildCopy(root, acc->memref, copy, perm, rank, shape, loc);
  pbcBuildDealloc(mlirOperationGetNextInBlock(root), copy, loc);
  /* The access reads the copy with its subscripts permuted alike. */
  MlirAffineMap map =
      mlirAffineMapAttrGetValue(mlirOperationGetAttributeByName(acc->op, pbcStr("map")));
  bool dims = mlirAffineMapGetNumDims(map) == rank && mlirAffineMapGetNumSymbols(map) == 0;
  for (int q = 0; q < rank; ++q)
    dims &= mlirAffineExprIsADim(mlirAffineMapGetResult(map, perm[q]));
  if (dims) {
    /* Plain subscripts (the usual case): reorder the operands and keep an
     * identity map, which later rewrites of the access (packing) compose
     * without leaving affine.apply ops behind. */
    MlirValue operands[PBC_MAX_RANK];
    for (int q = 0; q < rank; ++q)
      operands[q] = mlirOperationGetOperand(
          acc->op, 1 + mlirAffineDimExprGetPosition(mlirAffineMapGetResult(map, perm[q])));
    for (int q = 0; q < rank; ++q)
      mlirOperationSetOperand(acc->op, 1 + q, operands[q]);
    mlirOperationSetAttributeByName(
        acc->op, pbcStr("map"), mlirAffineMapAttrGet(mlirAffineMapMultiDimIdentityGet(ctx, rank)));
  } else {
    pbcAccessPermuteSubscripts(acc->op, perm);
  }
  mlirOperationSetOperand(acc->op, 0, copy);
}
