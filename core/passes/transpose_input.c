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

/* Adds `delta` to subscript r of the access `op`. */
static void offsetSubscript(MlirOperation op, int r, int64_t delta) {
  if (delta)
    pbcAccessSetSubscriptExpr(
        op, r,
        mlirAffineAddExprGet(pbcAccessSubscriptExpr(op, r),
                             mlirAffineConstantExprGet(mlirOperationGetContext(op), delta)));
}

static void markCopy(MlirOperation nest) {
  mlirOperationSetAttributeByName(nest, str("pbc.copy"),
                                  mlirUnitAttrGet(mlirOperationGetContext(nest)));
  pbcNestSetKind(nest, "pointwise");
}

/* copy[q...] = in[perm^-1] over the box [lo[q], hi[q]) of the copy, one
 * element at a time, before `before`; the loops walk the copy in order, so
 * its stores are contiguous. */
static void buildScalarCopy(MlirOperation before, MlirValue in, MlirValue copy, const int *perm,
                            int rank, const int64_t *lo, const int64_t *hi, MlirLocation loc) {
  int64_t extent[PBC_MAX_RANK];
  for (int q = 0; q < rank; ++q)
    if ((extent[q] = hi[q] - lo[q]) <= 0)
      return;
  MlirValue ivs[PBC_MAX_RANK], src[PBC_MAX_RANK];
  MlirOperation at;
  MlirOperation nest = pbcBuildAffineNest(before, extent, rank, loc, ivs, &at);
  for (int q = 0; q < rank; ++q)
    src[perm[q]] = ivs[q];
  MlirOperation load = pbcBuildAffineLoad(at, in, src, rank, loc);
  MlirOperation store =
      pbcBuildAffineStore(at, mlirOperationGetResult(load, 0), copy, ivs, rank, loc);
  for (int q = 0; q < rank; ++q) {
    offsetSubscript(load, perm[q], lo[q]);
    offsetSubscript(store, q, lo[q]);
  }
  markCopy(nest);
}

/* The copy's last two dimensions over [0, hi) in blocks of lanes x lanes,
 * before `before`: per block, `lanes` vector loads along the input's rows,
 * a transpose in registers (log2(lanes) rounds of vector.shuffle, each
 * swapping the off-diagonal halves of 2b x 2b blocks: bits b of row and
 * lane exchanged), `lanes` vector stores along the copy's rows. Every line
 * is read and written whole, once. The loops walk the input's row blocks
 * outermost (the copy's last dimension), so a block's input rows stream
 * from a few pages while the copy's rows are revisited across blocks. */
static void buildVectorTransposeCopy(MlirOperation before, MlirValue in, MlirValue copy,
                                     const int *perm, int rank, const int64_t *hi, int lanes,
                                     MlirLocation loc) {
  MlirContext ctx = mlirLocationGetContext(loc);
  int P = rank - 2, Q = rank - 1; /* the input's last dimension; the moved one */
  /* Loop order: the copy's dimensions with Q before P. */
  int order[PBC_MAX_RANK];
  int64_t extent[PBC_MAX_RANK];
  for (int q = 0; q < P; ++q)
    order[q] = q;
  order[P] = Q;
  order[Q] = P;
  for (int l = 0; l < rank; ++l)
    extent[l] = hi[order[l]];
  MlirValue loopIvs[PBC_MAX_RANK], ivs[PBC_MAX_RANK], src[PBC_MAX_RANK];
  MlirOperation at;
  MlirOperation nest = pbcBuildAffineNest(before, extent, rank, loc, loopIvs, &at);
  for (int l = 0; l < rank; ++l)
    ivs[order[l]] = loopIvs[l];
  for (int l = P; l < rank; ++l)
    pbcLoopSetStep(mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(loopIvs[l])), lanes);
  for (int q = 0; q < rank; ++q)
    src[perm[q]] = ivs[q];
  MlirType vt =
      mlirVectorTypeGet(1, (int64_t[]){lanes}, mlirShapedTypeGetElementType(mlirValueGetType(in)));
  MlirValue v[64];
  for (int r = 0; r < lanes; ++r) {
    MlirOperation load = pbcBuildAffineVectorLoad(at, in, src, rank, vt, loc);
    offsetSubscript(load, perm[Q], r);
    v[r] = mlirOperationGetResult(load, 0);
  }
  for (int b = lanes / 2; b >= 1; b /= 2) {
    int64_t lowMask[64], highMask[64];
    for (int c = 0; c < lanes; ++c) {
      lowMask[c] = c & b ? lanes + c - b : c;
      highMask[c] = c & b ? lanes + c : c + b;
    }
    MlirNamedAttribute masks[2] = {
        mlirNamedAttributeGet(mlirIdentifierGet(ctx, str("mask")),
                              mlirDenseI64ArrayGet(ctx, lanes, lowMask)),
        mlirNamedAttributeGet(mlirIdentifierGet(ctx, str("mask")),
                              mlirDenseI64ArrayGet(ctx, lanes, highMask))};
    for (int r = 0; r < lanes; ++r) {
      if (r & b)
        continue;
      MlirValue pair[2] = {v[r], v[r + b]};
      v[r] = mlirOperationGetResult(pbcBuildOp(at, "vector.shuffle", 2, pair, vt, 1, &masks[0]), 0);
      v[r + b] =
          mlirOperationGetResult(pbcBuildOp(at, "vector.shuffle", 2, pair, vt, 1, &masks[1]), 0);
    }
  }
  for (int c = 0; c < lanes; ++c)
    offsetSubscript(pbcBuildAffineVectorStore(at, v[c], copy, ivs, rank, loc), P, c);
  markCopy(nest);
}

/* The vector lanes of the transposing copy: a power of two, at most 16
 * (16 vectors plus the shuffles' temporaries fit 32 registers; 8 fit 16);
 * 0 for elements narrower than a byte (vectors of i1 are bit-packed, the
 * buffer is not), or not ints or floats. */
static int transposeLanes(int vectorBits, MlirType elem) {
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
  /* Whole lanes x lanes blocks transposed in registers; the strips of
   * partial blocks (right, then bottom) element by element. A scalar copy of
   * the whole input read rows 4 KiB apart at every step: 64x4096x1024 with
   * B as N x K took 16 ms against 2.5 with B as K x N. */
  int lanes = transposeLanes(vectorBits, elem), P = rank - 2, Q = rank - 1;
  int64_t whole[2] = {lanes ? shape[P] - shape[P] % lanes : 0,
                      lanes ? shape[Q] - shape[Q] % lanes : 0};
  int64_t lo[PBC_MAX_RANK] = {0}, hi[PBC_MAX_RANK];
  memcpy(hi, shape, sizeof(hi));
  if (whole[0] > 0 && whole[1] > 0) {
    hi[P] = whole[0];
    hi[Q] = whole[1];
    buildVectorTransposeCopy(root, acc->memref, copy, perm, rank, hi, lanes, loc);
    hi[P] = shape[P]; /* the right strip: all of P, Q's partial block */
    lo[Q] = whole[1];
    hi[Q] = shape[Q];
    buildScalarCopy(root, acc->memref, copy, perm, rank, lo, hi, loc);
    lo[P] = whole[0]; /* the bottom strip: P's partial block, Q's whole ones */
    lo[Q] = 0;
    hi[Q] = whole[1];
  }
  buildScalarCopy(root, acc->memref, copy, perm, rank, lo, hi, loc);
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
