/* Matching chains of nests: see pbc/chain_match.h. */
#include "pbc/chain_match.h"

#include <math.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"

static int rankOf(MlirValue m) { return (int)mlirShapedTypeGetRank(mlirValueGetType(m)); }

static MlirValue result(MlirOperation op) { return mlirOperationGetResult(op, 0); }

static bool isIv(const PbcLinearForm *f, MlirOperation loop) {
  long long k;
  return pbcLinearIsIvPlusConstant(f, pbcLoopIv(loop), &k) && k == 0;
}

bool pbcChainSameShape(MlirValue a, MlirValue b, int rank) {
  MlirType ta = mlirValueGetType(a), tb = mlirValueGetType(b);
  if (!mlirShapedTypeHasStaticShape(ta) || !mlirShapedTypeHasStaticShape(tb) ||
      mlirShapedTypeGetRank(ta) != rank)
    return false;
  for (int d = 0; d < rank; ++d)
    if (mlirShapedTypeGetDimSize(ta, d) != mlirShapedTypeGetDimSize(tb, d))
      return false;
  return true;
}

static MlirType elemOf(MlirValue memref) {
  return mlirShapedTypeGetElementType(mlirValueGetType(memref));
}

bool pbcChainMovable(MlirOperation op) {
  return mlirOperationGetNumOperands(op) == 0 && pbcOpIsConstantOrAlloc(op);
}

MlirOperation pbcChainNeighbour(MlirOperation op, bool after) {
  if (after) {
    MlirOperation next = mlirOperationGetNextInBlock(op);
    while (!mlirOperationIsNull(next) && pbcChainMovable(next))
      next = mlirOperationGetNextInBlock(next);
    return next;
  }
  /* (The C API walks blocks forward only.) */
  MlirOperation last = {NULL};
  for (MlirOperation o = mlirBlockGetFirstOperation(mlirOperationGetBlock(op)); o.ptr != op.ptr;
       o = mlirOperationGetNextInBlock(o))
    if (!pbcChainMovable(o))
      last = o;
  return last;
}

MlirOperation pbcChainNextNest(MlirOperation op, const MlirValue *buffers, int n) {
  for (op = pbcChainNeighbour(op, true); !mlirOperationIsNull(op);
       op = pbcChainNeighbour(op, true)) {
    if (!pbcOpIsA(op, "memref.dealloc"))
      return pbcOpIsA(op, "affine.for") ? op : (MlirOperation){NULL};
    bool own = false;
    for (int i = 0; i < n && !own; ++i)
      own = mlirOperationGetOperand(op, 0).ptr == buffers[i].ptr;
    if (!own && buffers)
      return (MlirOperation){NULL};
  }
  return op;
}

void pbcChainMoveFreesAfter(const MlirOperation *nests, int n, MlirOperation last) {
  MlirOperation first = last;
  for (int i = 0; i < n; ++i)
    if (pbcOpFollowsInBlock(first, nests[i]))
      first = nests[i];
  for (MlirOperation op = first; !mlirOperationEqual(op, last);) {
    MlirOperation next = mlirOperationGetNextInBlock(op);
    if (pbcOpIsA(op, "memref.dealloc"))
      mlirOperationMoveAfter(op, last);
    op = next;
  }
}

bool pbcChainBuffersPrivate(const MlirValue *buffers, int n, const MlirOperation *nests,
                            int nNests, MlirOperation last) {
  for (int i = 0; i < n; ++i)
    for (MlirOpOperand u = mlirValueGetFirstUse(buffers[i]); !mlirOpOperandIsNull(u);
         u = mlirOpOperandGetNextUse(u)) {
      MlirOperation user = mlirOpOperandGetOwner(u);
      bool inside = pbcOpIsA(user, "memref.dealloc") || pbcOpIsInside(user, last);
      for (int k = 0; k < nNests && !inside; ++k)
        inside = pbcOpIsInside(user, nests[k]);
      if (!inside)
        return false;
    }
  return true;
}

bool pbcChainIsAlloc(MlirValue v) {
  return mlirValueIsAOpResult(v) && pbcOpIsA(mlirOpResultGetOwner(v), "memref.alloc");
}

int pbcChainBandBody(MlirOperation nest, int depth, MlirValue over, MlirOperation band[],
                     MlirOperation ops[], int max) {
  MlirOperation all[PBC_MAX_BAND];
  MlirType t = mlirValueGetType(over);
  if (!pbcOpIsA(nest, "affine.for") || depth > mlirShapedTypeGetRank(t) ||
      pbcLoopBand(nest, all, PBC_MAX_BAND) != depth || !mlirShapedTypeHasStaticShape(t))
    return -1;
  for (int l = 0; l < depth; ++l) {
    band[l] = all[l];
    if (pbcLoopZeroBasedTrip(band[l]) != mlirShapedTypeGetDimSize(t, l))
      return -1;
  }
  int n = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(pbcLoopBody(band[depth - 1]));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (pbcOpIsA(op, "affine.yield"))
      continue;
    if (n == max)
      return -1;
    ops[n++] = op;
  }
  return n;
}

bool pbcChainAccessByBand(MlirOperation op, MlirValue memref, bool write,
                          const MlirOperation band[]) {
  PbcAccess acc;
  if (!pbcAccessGet(op, &acc) || acc.isWrite != write || acc.lanes || acc.memref.ptr != memref.ptr)
    return false;
  for (int d = 0; d < acc.rank; ++d)
    if (!isIv(&acc.subscripts[d], band[d]))
      return false;
  return true;
}

bool pbcChainOperandsAre(MlirOperation op, MlirOperation a, MlirOperation b, bool commutes) {
  MlirValue x = mlirOperationGetOperand(op, 0), y = mlirOperationGetOperand(op, 1);
  return (x.ptr == result(a).ptr && y.ptr == result(b).ptr) ||
         (commutes && x.ptr == result(b).ptr && y.ptr == result(a).ptr);
}

double pbcChainFloatConstant(MlirValue v, bool *ok) {
  *ok = false;
  if (!mlirValueIsAOpResult(v) || !pbcOpIsA(mlirOpResultGetOwner(v), "arith.constant"))
    return NAN;
  MlirAttribute a = mlirOperationGetAttributeByName(mlirOpResultGetOwner(v), pbcStr("value"));
  if (!mlirAttributeIsAFloat(a))
    return NAN;
  *ok = true;
  return mlirFloatAttrGetValueDouble(a);
}

bool pbcChainRowReduce(MlirOperation nest, MlirValue x, MlirValue r, bool max,
                       PbcRowCombiner *comb) {
  enum { kMaxBand = 8 };
  MlirOperation band[kMaxBand], op[4];
  int rank = rankOf(x);
  if (mlirValueIsNull(r) || rank > kMaxBand || rankOf(r) != rank - 1 ||
      pbcChainBandBody(nest, rank, x, band, op, 4) != 4)
    return false;
  *comb = pbcOpIsA(op[2], "arith.addf")       ? kPbcCombSum
          : pbcOpIsA(op[2], "arith.maxnumf")  ? kPbcCombMaxNum
          : pbcOpIsA(op[2], "arith.maximumf") ? kPbcCombMaximum
                                              : kPbcCombOther;
  return (max ? *comb == kPbcCombMaxNum || *comb == kPbcCombMaximum : *comb == kPbcCombSum) &&
         pbcChainAccessByBand(op[0], x, false, band) &&
         pbcChainAccessByBand(op[1], r, false, band) &&
         pbcChainOperandsAre(op[2], op[0], op[1], true) &&
         pbcChainAccessByBand(op[3], r, true, band) &&
         mlirOperationGetOperand(op[3], 0).ptr == result(op[2]).ptr;
}

bool pbcChainRowBroadcast(MlirOperation nest, MlirValue x, MlirValue r, const char *binary,
                          const char *unary, MlirValue *y) {
  enum { kMaxBand = 8 };
  MlirOperation band[kMaxBand], op[5];
  int rank = rankOf(x), n = unary ? 5 : 4;
  if (rank > kMaxBand || pbcChainBandBody(nest, rank, x, band, op, 5) != n ||
      !pbcChainAccessByBand(op[0], x, false, band) ||
      !pbcChainAccessByBand(op[1], r, false, band) || !pbcOpIsA(op[2], binary) ||
      !pbcChainOperandsAre(op[2], op[0], op[1], false))
    return false;
  MlirOperation last = op[2];
  if (unary) {
    if (!pbcOpIsA(op[3], unary) || mlirOperationGetOperand(op[3], 0).ptr != result(op[2]).ptr)
      return false;
    last = op[3];
  }
  PbcAccess st;
  if (!pbcAccessGet(op[n - 1], &st) || !st.isWrite ||
      mlirOperationGetOperand(op[n - 1], 0).ptr != result(last).ptr)
    return false;
  *y = st.memref;
  return pbcChainAccessByBand(op[n - 1], *y, true, band) && pbcChainIsAlloc(*y) &&
         mlirTypeEqual(elemOf(*y), elemOf(x)) && pbcChainSameShape(*y, x, rank);
}

MlirValue pbcChainTransposedFrom(MlirOperation nest, MlirValue kt) {
  enum { kMaxBand = 8 };
  MlirOperation band[kMaxBand], op[2];
  int rank = rankOf(kt);
  MlirValue none = {NULL};
  if (rank < 2 || rank > kMaxBand || !pbcChainIsAlloc(kt) ||
      pbcChainBandBody(nest, rank, kt, band, op, 2) != 2 ||
      !pbcChainAccessByBand(op[1], kt, true, band) ||
      mlirOperationGetOperand(op[1], 0).ptr != result(op[0]).ptr)
    return none;
  PbcAccess ld;
  if (!pbcAccessGet(op[0], &ld) || ld.isWrite || ld.lanes || ld.rank != rank ||
      !pbcMemrefHasIdentityLayout(mlirValueGetType(ld.memref)) ||
      !mlirShapedTypeHasStaticShape(mlirValueGetType(ld.memref)))
    return none;
  for (int d = 0; d < rank; ++d) {
    int from = d < rank - 2 ? d : 2 * rank - 3 - d; /* ..., j, d <- ..., d, j */
    if (!isIv(&ld.subscripts[d], band[from]))
      return none;
  }
  return ld.memref;
}
