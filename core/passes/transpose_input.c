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

#include <string.h>

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

static void markCopy(MlirOperation nest) {
  mlirOperationSetAttributeByName(nest, str("pbc.copy"),
                                  mlirUnitAttrGet(mlirOperationGetContext(nest)));
  pbcNestSetKind(nest, "pointwise");
}

/* copy[q...] = in[perm^-1] over the box [lo[q], hi[q]) of the copy, one
 * element at a time, before `before`. The loops walk the copy in order (its
 * stores contiguous), or, if `inputRowsOuter`, with its last two dimensions
 * swapped: the input's rows outer, read along the inner loop. */
static void buildScalarCopy(MlirOperation before, MlirValue in, MlirValue copy, const int *perm,
                            int rank, const int64_t *lo, const int64_t *hi, bool inputRowsOuter,
                            MlirLocation loc) {
  int order[PBC_MAX_RANK]; /* order[l]: the copy dimension loop l walks */
  int64_t extent[PBC_MAX_RANK];
  for (int l = 0; l < rank; ++l)
    order[l] = l;
  if (inputRowsOuter) {
    order[rank - 2] = rank - 1;
    order[rank - 1] = rank - 2;
  }
  for (int l = 0; l < rank; ++l)
    if ((extent[l] = hi[order[l]] - lo[order[l]]) <= 0)
      return;
  MlirValue loopIvs[PBC_MAX_RANK], ivs[PBC_MAX_RANK], src[PBC_MAX_RANK];
  MlirOperation at;
  MlirOperation nest = pbcBuildAffineNest(before, extent, rank, loc, loopIvs, &at);
  for (int l = 0; l < rank; ++l)
    ivs[order[l]] = loopIvs[l];
  for (int q = 0; q < rank; ++q)
    src[perm[q]] = ivs[q];
  MlirOperation load = pbcBuildAffineLoad(at, in, src, rank, loc);
  MlirOperation store =
      pbcBuildAffineStore(at, mlirOperationGetResult(load, 0), copy, ivs, rank, loc);
  for (int q = 0; q < rank; ++q) {
    pbcAccessOffsetSubscript(load, perm[q], lo[q]);
    pbcAccessOffsetSubscript(store, q, lo[q]);
  }
  markCopy(nest);
}

int pbcTransposeLanes(int vectorBits, MlirType elem) {
  int bits = mlirTypeIsAFloat(elem)     ? (int)mlirFloatTypeGetWidth(elem)
             : mlirTypeIsAInteger(elem) ? (int)mlirIntegerTypeGetWidth(elem)
                                        : 0;
  int lanes = bits >= 8 ? vectorBits / bits : 0;
  lanes = lanes > 16 ? 16 : lanes;
  return lanes >= 2 && (lanes & (lanes - 1)) == 0 ? lanes : 0;
}

void pbcTransposeInput(const PbcAccess *acc, int dim, MlirOperation root, int vectorBits) {
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
  MlirType elem = mlirShapedTypeGetElementType(t);
  MlirType ct = mlirMemRefTypeContiguousGet(elem, rank, shape, mlirAttributeGetNull());
  MlirValue copy = mlirOperationGetResult(pbcBuildAlloc(root, ct, loc), 0);
  /* Whole lanes x lanes blocks, input rows outermost, for
   * pbc-transpose-copies to transpose in registers; the strips of partial
   * blocks (right, then bottom) element by element, along the copy. */
  int lanes = pbcTransposeLanes(vectorBits, elem), P = rank - 2, Q = rank - 1;
  int64_t whole[2] = {lanes ? shape[P] - shape[P] % lanes : 0,
                      lanes ? shape[Q] - shape[Q] % lanes : 0};
  int64_t lo[PBC_MAX_RANK] = {0}, hi[PBC_MAX_RANK];
  memcpy(hi, shape, sizeof(hi));
  if (whole[0] > 0 && whole[1] > 0) {
    hi[P] = whole[0];
    hi[Q] = whole[1];
    buildScalarCopy(root, acc->memref, copy, perm, rank, lo, hi, true, loc);
    hi[P] = shape[P]; /* the right strip: all of P, Q's partial block */
    lo[Q] = whole[1];
    hi[Q] = shape[Q];
    buildScalarCopy(root, acc->memref, copy, perm, rank, lo, hi, false, loc);
    lo[P] = whole[0]; /* the bottom strip: P's partial block, Q's whole ones */
    lo[Q] = 0;
    hi[Q] = whole[1];
  }
  buildScalarCopy(root, acc->memref, copy, perm, rank, lo, hi, false, loc);
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
