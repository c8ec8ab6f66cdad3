/* Linear forms of affine subscripts, the accesses built on them, and the
 * analyses that read them: strides, distinctness, loop dependences, loop
 * parallelism (see pbc/affine_access.h). Linear time in the size of the
 * expressions. */
#include "pbc/affine_access.h"
#include "pbc/marks.h"

#include <string.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc-ext/affine.h"
#include "pbc/c_pass.h"


static bool flatten(MlirAffineExpr e, long long scale, const MlirValue *operands, int nDims,
                    PbcLinearForm *f);

/* Adds c * v; looks through single-result affine.apply (as unroll-and-jam
 * leaves them) so subscripts compare by their ivs, and folds index constants
 * (full unrolling leaves them as operands until canonicalization). */
static bool addTerm(PbcLinearForm *f, MlirValue v, long long c) {
  if (mlirValueIsAOpResult(v) && pbcOpIsA(mlirOpResultGetOwner(v), "arith.constant")) {
    MlirAttribute value = mlirOperationGetAttributeByName(mlirOpResultGetOwner(v), pbcStr("value"));
    if (mlirAttributeIsAInteger(value)) {
      f->constant += c * mlirIntegerAttrGetValueInt(value);
      return true;
    }
  }
  if (mlirValueIsAOpResult(v) && pbcOpIsA(mlirOpResultGetOwner(v), "affine.apply")) {
    MlirOperation apply = mlirOpResultGetOwner(v);
    MlirAffineMap map =
        mlirAffineMapAttrGetValue(mlirOperationGetInherentAttributeByName(apply, pbcStr("map")));
    int n = (int)mlirOperationGetNumOperands(apply);
    MlirValue ops[PBC_MAX_TERMS];
    if (mlirAffineMapGetNumResults(map) == 1 && n <= PBC_MAX_TERMS) {
      for (int i = 0; i < n; ++i)
        ops[i] = mlirOperationGetOperand(apply, i);
      return flatten(mlirAffineMapGetResult(map, 0), c, ops, (int)mlirAffineMapGetNumDims(map), f);
    }
  }
  for (int i = 0; i < f->nTerms; ++i)
    if (mlirValueEqual(f->values[i], v)) {
      f->coeffs[i] += c;
      return true;
    }
  if (f->nTerms == PBC_MAX_TERMS)
    return false;
  f->values[f->nTerms] = v;
  f->coeffs[f->nTerms++] = c;
  return true;
}

/* Accumulates scale * expr into f; operands are the map's operands. */
static bool flatten(MlirAffineExpr e, long long scale, const MlirValue *operands, int nDims,
                    PbcLinearForm *f) {
  if (mlirAffineExprIsAConstant(e)) {
    f->constant += scale * mlirAffineConstantExprGetValue(e);
    return true;
  }
  if (mlirAffineExprIsADim(e))
    return addTerm(f, operands[mlirAffineDimExprGetPosition(e)], scale);
  if (mlirAffineExprIsASymbol(e))
    return addTerm(f, operands[nDims + mlirAffineSymbolExprGetPosition(e)], scale);
  if (mlirAffineExprIsAAdd(e))
    return flatten(mlirAffineBinaryOpExprGetLHS(e), scale, operands, nDims, f) &&
           flatten(mlirAffineBinaryOpExprGetRHS(e), scale, operands, nDims, f);
  if (mlirAffineExprIsAMul(e)) {
    MlirAffineExpr l = mlirAffineBinaryOpExprGetLHS(e), r = mlirAffineBinaryOpExprGetRHS(e);
    if (mlirAffineExprIsAConstant(r))
      return flatten(l, scale * mlirAffineConstantExprGetValue(r), operands, nDims, f);
    if (mlirAffineExprIsAConstant(l))
      return flatten(r, scale * mlirAffineConstantExprGetValue(l), operands, nDims, f);
  }
  return false; /* mod, floordiv, ceildiv, or a product of variables */
}

/* The values an induction variable takes are lb + k * step, lb a linear
 * form (of outer values: an affine.for's bound operands; an affine.parallel's
 * lower bounds must be constants). */
static bool ivLowerBoundAndStep(MlirValue v, PbcLinearForm *lb, long long *step) {
  if (!mlirValueIsABlockArgument(v))
    return false;
  MlirOperation loop = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v));
  intptr_t pos = mlirBlockArgumentGetArgNumber(v);
  if (pbcOpIsA(loop, "affine.for") && pos == 0) {
    *step = pbcLoopStep(loop);
    return pbcLoopBoundForm(loop, false, lb);
  }
  if (!pbcOpIsA(loop, "affine.parallel"))
    return false;
  MlirAttribute steps = mlirOperationGetAttributeByName(loop, pbcStr("steps"));
  MlirAttribute lbAttr = mlirOperationGetAttributeByName(loop, pbcStr("lowerBoundsMap"));
  if (mlirAttributeIsNull(steps) || !mlirAttributeIsAArray(steps) ||
      pos >= mlirArrayAttrGetNumElements(steps) || mlirAttributeIsNull(lbAttr) ||
      !mlirAttributeIsAAffineMap(lbAttr))
    return false;
  *step = mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(steps, pos));
  MlirAffineMap map = mlirAffineMapAttrGetValue(lbAttr);
  if (pos >= mlirAffineMapGetNumResults(map) ||
      !mlirAffineExprIsAConstant(mlirAffineMapGetResult(map, pos)))
    return false;
  memset(lb, 0, sizeof(*lb));
  lb->linear = true;
  lb->constant = mlirAffineConstantExprGetValue(mlirAffineMapGetResult(map, pos));
  return true;
}

bool pbcLoopBoundForm(MlirOperation forOp, bool upper, PbcLinearForm *f) {
  memset(f, 0, sizeof(*f));
  f->linear = true;
  MlirAttribute lbAttr = mlirOperationGetAttributeByName(forOp, pbcStr("lowerBoundMap"));
  MlirAttribute attr =
      upper ? mlirOperationGetAttributeByName(forOp, pbcStr("upperBoundMap")) : lbAttr;
  if (mlirAttributeIsNull(attr) || !mlirAttributeIsAAffineMap(attr))
    return false;
  MlirAffineMap map = mlirAffineMapAttrGetValue(attr);
  if (mlirAffineMapGetNumResults(map) != 1)
    return false; /* min/max bounds of partial tiles */
  MlirAffineExpr e = mlirAffineMapGetResult(map, 0);
  if (mlirAffineExprIsAConstant(e)) {
    f->constant = mlirAffineConstantExprGetValue(e);
    return true;
  }
  /* An affine.for's operands: the lower bound's, then the upper bound's. */
  intptr_t first = upper ? mlirAffineMapGetNumInputs(mlirAffineMapAttrGetValue(lbAttr)) : 0;
  int nOperands = (int)mlirAffineMapGetNumInputs(map);
  if (nOperands > PBC_MAX_TERMS)
    return false;
  MlirValue operands[PBC_MAX_TERMS];
  for (int i = 0; i < nOperands; ++i)
    operands[i] = mlirOperationGetOperand(forOp, first + i);
  return flatten(e, 1, operands, (int)mlirAffineMapGetNumDims(map), f);
}

typedef struct {
  long long reads, writes;
} AccessCount;

static MlirWalkResult countAccesses(MlirOperation op, void *data) {
  AccessCount *c = data;
  if (pbcOpIsA(op, "affine.load") || pbcOpIsA(op, "affine.vector_load"))
    ++c->reads;
  else if (pbcOpIsA(op, "affine.store") || pbcOpIsA(op, "affine.vector_store"))
    ++c->writes;
  return MlirWalkResultAdvance;
}

/* MLIR's test solves an integer program per pair of a write and another
 * access under the loop: a scalar register tile unrolled without
 * vectorization (1,400 accesses) took 50 s in pbc-parallelize. Past this
 * many pairs the loop counts as not parallel (serial code, never wrong). */
enum { kMaxDependencePairs = 8192 };

/* Ops that touch no memory but through the accesses gathered with them:
 * their operands hold no memref (gathering reports any that do) and their
 * dialects have no other effects. */
static MlirWalkResult findOtherEffects(MlirOperation op, void *data) {
  static const char *const kPure[] = {"arith.", "math.", "vector.", "affine.", "index."};
  MlirStringRef name = mlirIdentifierStr(mlirOperationGetName(op));
  if (pbcOpIsA(op, "vector.print")) { /* the one vector op with an effect and no memref */
    *(bool *)data = true;
    return MlirWalkResultInterrupt;
  }
  for (size_t i = 0; i < sizeof(kPure) / sizeof(kPure[0]); ++i)
    if (name.length > strlen(kPure[i]) && !strncmp(name.data, kPure[i], strlen(kPure[i])))
      return MlirWalkResultAdvance;
  *(bool *)data = true;
  return MlirWalkResultInterrupt;
}

/* Some subscript of the access is coeff * iv + constant (coeff != 0, the
 * loop's iv the only term), and moves further than the access is wide per
 * iteration: distinct iterations touch distinct elements. */
static bool iterationsDisjoint(const PbcAccess *a, MlirValue iv, long long step) {
  for (int d = 0; d < a->rank; ++d) {
    const PbcLinearForm *f = &a->subscripts[d];
    if (f->nTerms != 1 || !mlirValueEqual(f->values[0], iv) || f->coeffs[0] == 0)
      continue;
    long long move = (f->coeffs[0] < 0 ? -f->coeffs[0] : f->coeffs[0]) * step;
    if (d < a->rank - 1 || move >= (a->lanes ? a->lanes : 1))
      return true;
  }
  return false;
}

enum { kFastPathAccesses = 64 };

/* The elementwise case without an integer program: every access that may
 * alias a write is to the same memref at the same subscripts as that write,
 * and the write touches distinct elements in distinct iterations. 1 if so
 * (parallel), 0 if it can't say. */
static int parallelByIdenticalSubscripts(MlirOperation loop) {
  if (mlirOperationGetNumResults(loop) != 0 || pbcLoopStep(loop) < 1)
    return 0;
  PbcAccess acc[kFastPathAccesses];
  int n = 0;
  bool other = false;
  if (!pbcGatherAccesses(loop, acc, kFastPathAccesses, &n))
    return 0;
  mlirOperationWalk(loop, findOtherEffects, &other, MlirWalkPreOrder);
  if (other)
    return 0;
  MlirValue iv = pbcLoopIv(loop);
  long long step = pbcLoopStep(loop);
  for (int i = 0; i < n; ++i) {
    if (!acc[i].isWrite)
      continue;
    if (!iterationsDisjoint(&acc[i], iv, step))
      return 0;
    for (int j = 0; j < n; ++j)
      if (j != i && pbcMemrefsMayAlias(acc[i].memref, acc[j].memref) &&
          !pbcAccessesSame(&acc[i], &acc[j]))
        return 0;
  }
  return 1;
}

bool pbcLoopIsParallel(MlirOperation loop) {
  /* One iteration carries nothing (a cache tile loop as large as its
   * dimension: MLIR's test took 0.3 s on one around a GEMM micro kernel). */
  long long trip = pbcExtAffineConstantTripCount(loop);
  if (trip >= 0 && trip <= 1)
    return true;
  if (parallelByIdenticalSubscripts(loop))
    return true;
  AccessCount c = {0, 0};
  mlirOperationWalk(loop, countAccesses, &c, MlirWalkPreOrder);
  if (c.writes * (c.reads + c.writes) > kMaxDependencePairs)
    return false;
  return pbcExtAffineIsLoopParallel(loop);
}

int pbcLinearRange(const PbcLinearForm *f, long long *lo, long long *hi) {
  if (!f->linear)
    return -1;
  __int128 l = f->constant, h = f->constant;
  for (int t = 0; t < f->nTerms; ++t) {
    MlirValue v = f->values[t];
    if (!mlirValueIsABlockArgument(v))
      return -1;
    MlirOperation loop = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v));
    PbcLinearForm lb, ub;
    if (!pbcOpIsA(loop, "affine.for") || !pbcLoopBoundForm(loop, false, &lb) ||
        !pbcLoopBoundForm(loop, true, &ub) || lb.nTerms || ub.nTerms)
      return -1;
    long long step = pbcLoopStep(loop);
    if (ub.constant <= lb.constant)
      return 0; /* the loop never runs */
    long long last = lb.constant + (ub.constant - 1 - lb.constant) / step * step;
    __int128 a = (__int128)f->coeffs[t] * lb.constant, b = (__int128)f->coeffs[t] * last;
    l += a < b ? a : b;
    h += a < b ? b : a;
  }
  if (l < -((__int128)1 << 62) || h > ((__int128)1 << 62))
    return -1;
  *lo = (long long)l;
  *hi = (long long)h;
  return 1;
}

long long pbcGcd(long long a, long long b) {
  a = a < 0 ? -a : a;
  b = b < 0 ? -b : b;
  while (b) {
    long long r = a % b;
    a = b;
    b = r;
  }
  return a;
}

static long long termsGcd(const PbcLinearForm *f, long long scale, int depth) {
  long long g = 0;
  for (int i = 0; i < f->nTerms; ++i) {
    PbcLinearForm lb;
    long long step, c = scale * f->coeffs[i];
    if (depth > 8 || !ivLowerBoundAndStep(f->values[i], &lb, &step))
      return -1;
    long long lbTerms = termsGcd(&lb, c, depth + 1);
    if (lbTerms < 0)
      return -1;
    g = pbcGcd(pbcGcd(pbcGcd(g, c * lb.constant), c * step), lbTerms);
  }
  return g;
}

long long pbcLinearTermsGcd(const PbcLinearForm *f, long long scale) {
  return termsGcd(f, scale, 0);
}

bool pbcHasDivisorIn(long long n, long long lo, long long hi) {
  for (long long d = lo; d <= hi; ++d)
    if (n % d == 0)
      return true;
  return false;
}

long long pbcLinearCoeff(const PbcLinearForm *f, MlirValue v) {
  for (int i = 0; i < f->nTerms; ++i)
    if (mlirValueEqual(f->values[i], v))
      return f->coeffs[i];
  return 0;
}

static bool accessGet(MlirOperation op, PbcAccess *acc, bool allLinear) {
  bool isLoad = pbcOpIsA(op, "affine.load") || pbcOpIsA(op, "affine.vector_load");
  bool isStore = pbcOpIsA(op, "affine.store") || pbcOpIsA(op, "affine.vector_store");
  if (!isLoad && !isStore)
    return false;
  memset(acc, 0, sizeof(*acc));
  acc->op = op;
  acc->isWrite = isStore;
  int memrefPos = isStore ? 1 : 0;
  acc->memref = mlirOperationGetOperand(op, memrefPos);
  MlirType vt = isStore ? mlirValueGetType(mlirOperationGetOperand(op, 0))
                        : mlirValueGetType(mlirOperationGetResult(op, 0));
  acc->lanes = mlirTypeIsAVector(vt) ? (int)mlirShapedTypeGetDimSize(vt, 0) : 0;
  MlirAttribute mapAttr = mlirOperationGetInherentAttributeByName(op, pbcStr("map"));
  if (mlirAttributeIsNull(mapAttr))
    return false;
  MlirAffineMap map = mlirAffineMapAttrGetValue(mapAttr);
  int nDims = (int)mlirAffineMapGetNumDims(map);
  int nOperands = (int)mlirOperationGetNumOperands(op) - memrefPos - 1;
  MlirValue operands[PBC_MAX_TERMS * 2];
  if (nOperands > (int)(sizeof(operands) / sizeof(operands[0])))
    return false;
  for (int i = 0; i < nOperands; ++i)
    operands[i] = mlirOperationGetOperand(op, memrefPos + 1 + i);
  acc->rank = (int)mlirAffineMapGetNumResults(map);
  if (acc->rank > PBC_MAX_RANK)
    return false;
  for (int d = 0; d < acc->rank; ++d) {
    PbcLinearForm *f = &acc->subscripts[d];
    f->linear = flatten(mlirAffineMapGetResult(map, d), 1, operands, nDims, f);
    if (!f->linear && allLinear)
      return false;
  }
  return true;
}

bool pbcAccessGet(MlirOperation op, PbcAccess *acc) { return accessGet(op, acc, true); }

bool pbcAccessGetAny(MlirOperation op, PbcAccess *acc) { return accessGet(op, acc, false); }

bool pbcAccessSubscriptUses(const PbcAccess *acc, int d, MlirValue v) {
  if (acc->subscripts[d].linear)
    return pbcLinearCoeff(&acc->subscripts[d], v) != 0;
  MlirOperation op = acc->op;
  int first = acc->isWrite ? 2 : 1;
  MlirAffineMap map = mlirAffineMapAttrGetValue(
      mlirOperationGetInherentAttributeByName(op, pbcStr("map")));
  int nDims = (int)mlirAffineMapGetNumDims(map);
  MlirAffineExpr e = mlirAffineMapGetResult(map, d);
  for (int i = first; i < (int)mlirOperationGetNumOperands(op); ++i)
    if (mlirValueEqual(mlirOperationGetOperand(op, i), v) &&
        (i - first >= nDims || mlirAffineExprIsFunctionOfDim(e, i - first)))
      return true; /* a symbol: say yes */
  return false;
}

PbcStride pbcAccessStrideAlong(const PbcAccess *acc, MlirOperation loop) {
  MlirValue iv = pbcLoopIv(loop);
  for (int d = 0; d < acc->rank; ++d) {
    const PbcLinearForm *f = &acc->subscripts[d];
    for (int t = 0; t < f->nTerms; ++t) {
      if (mlirValueEqual(f->values[t], iv) || f->coeffs[t] == 0)
        continue;
      /* Ivs of loops nested in `loop` are fine only if their bounds don't
       * move with `loop`'s iv; anything else defined inside varies. */
      MlirValue v = f->values[t];
      if (!pbcValueIsDefinedInside(v, loop))
        continue;
      if (mlirValueIsABlockArgument(v)) {
        MlirOperation owner = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v));
        if (pbcOpIsA(owner, "affine.for")) {
          bool boundsVary = false;
          for (intptr_t i = 0; i < mlirOperationGetNumOperands(owner); ++i)
            if (pbcValueIsDefinedInside(mlirOperationGetOperand(owner, i), loop))
              boundsVary = true;
          if (!boundsVary)
            continue;
        }
      }
      return PBC_STRIDE_OTHER;
    }
  }
  bool anyUse = false;
  for (int d = 0; d < acc->rank; ++d) {
    long long c = pbcLinearCoeff(&acc->subscripts[d], iv);
    if (c == 0)
      continue;
    if (d != acc->rank - 1 || c != 1)
      return PBC_STRIDE_OTHER;
    anyUse = true;
  }
  return anyUse ? PBC_STRIDE_CONTIGUOUS : PBC_STRIDE_INVARIANT;
}

long long pbcAccessByteStrideAlong(const PbcAccess *acc, MlirOperation loop) {
  MlirType t = mlirValueGetType(acc->memref);
  if (!mlirShapedTypeHasStaticShape(t) || !pbcMemrefHasIdentityLayout(t) ||
      (int)mlirShapedTypeGetRank(t) != acc->rank)
    return -1;
  MlirValue iv = pbcLoopIv(loop);
  long long elements = 0, stride = 1;
  for (int d = acc->rank - 1; d >= 0; --d) {
    if (!acc->subscripts[d].linear)
      return -1;
    elements += pbcLinearCoeff(&acc->subscripts[d], iv) * stride;
    stride *= mlirShapedTypeGetDimSize(t, d);
  }
  long long bytes = elements * pbcLoopStep(loop) * (pbcElementBits(t) / 8);
  return bytes < 0 ? -bytes : bytes;
}

bool pbcLinearIsIvPlusConstant(const PbcLinearForm *f, MlirValue iv, long long *k) {
  if (!f->linear || f->nTerms != 1 || !mlirValueEqual(f->values[0], iv) || f->coeffs[0] != 1)
    return false;
  *k = f->constant;
  return true;
}

bool pbcLinearConstantDifference(const PbcLinearForm *a, const PbcLinearForm *b, long long *diff) {
  for (int i = 0; i < a->nTerms; ++i)
    if (a->coeffs[i] != pbcLinearCoeff(b, a->values[i]))
      return false;
  for (int i = 0; i < b->nTerms; ++i)
    if (b->coeffs[i] != pbcLinearCoeff(a, b->values[i]))
      return false;
  *diff = a->constant - b->constant;
  return true;
}

bool pbcAccessesSame(const PbcAccess *a, const PbcAccess *b) {
  if (!mlirValueEqual(a->memref, b->memref) || a->rank != b->rank)
    return false;
  for (int d = 0; d < a->rank; ++d) {
    long long diff;
    if (!pbcLinearConstantDifference(&a->subscripts[d], &b->subscripts[d], &diff) || diff != 0)
      return false;
  }
  return a->lanes == b->lanes;
}

bool pbcAccessesDisjoint(const PbcAccess *a, const PbcAccess *b) {
  if (!mlirValueEqual(a->memref, b->memref) || a->rank != b->rank)
    return false;
  for (int d = 0; d < a->rank; ++d) {
    long long diff;
    if (!pbcLinearConstantDifference(&a->subscripts[d], &b->subscripts[d], &diff))
      continue;
    if (d < a->rank - 1) {
      if (diff != 0)
        return true;
      continue;
    }
    long long widthLow = diff > 0 ? (b->lanes ? b->lanes : 1) : (a->lanes ? a->lanes : 1);
    if ((diff > 0 ? diff : -diff) >= widthLow)
      return true;
  }
  return false;
}

static bool loopBoundsUse(MlirOperation forOp, MlirValue v) {
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(forOp); ++i)
    if (mlirValueEqual(mlirOperationGetOperand(forOp, i), v))
      return true;
  return false;
}

bool pbcAccessDependsOnLoop(const PbcAccess *acc, MlirOperation loop) {
  MlirValue iv = pbcLoopIv(loop);
  for (int d = 0; d < acc->rank; ++d) {
    const PbcLinearForm *f = &acc->subscripts[d];
    for (int t = 0; t < f->nTerms; ++t) {
      if (f->coeffs[t] == 0)
        continue;
      MlirValue v = f->values[t];
      if (mlirValueEqual(v, iv))
        return true;
      if (!mlirValueIsABlockArgument(v))
        continue;
      MlirOperation owner = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v));
      /* A point loop whose bounds come from the tile loop's iv. */
      if (pbcOpIsA(owner, "affine.for") && pbcOpIsInside(owner, loop) && loopBoundsUse(owner, iv))
        return true;
    }
  }
  return false;
}

long long pbcLoopStep(MlirOperation forOp) {
  MlirAttribute a = mlirOperationGetInherentAttributeByName(forOp, pbcStr("step"));
  return mlirAttributeIsNull(a) ? 1 : mlirIntegerAttrGetValueInt(a);
}

long long pbcLoopZeroBasedTrip(MlirOperation forOp) {
  return pbcLoopStep(forOp) == 1 ? pbcLoopUpperFromZero(forOp) : -1;
}

long long pbcLoopUpperFromZero(MlirOperation forOp) {
  MlirAttribute lb = mlirOperationGetAttributeByName(forOp, pbcStr("lowerBoundMap"));
  MlirAttribute ub = mlirOperationGetAttributeByName(forOp, pbcStr("upperBoundMap"));
  if (mlirAttributeIsNull(lb) || mlirAttributeIsNull(ub) || !mlirAttributeIsAAffineMap(lb) ||
      !mlirAttributeIsAAffineMap(ub) ||
      mlirOperationGetNumOperands(forOp) != mlirOperationGetNumResults(forOp)) /* iter_args aside */
    return -1;
  MlirAffineMap l = mlirAffineMapAttrGetValue(lb), u = mlirAffineMapAttrGetValue(ub);
  if (!mlirAffineMapIsSingleConstant(l) || mlirAffineMapGetSingleConstantResult(l) != 0 ||
      !mlirAffineMapIsSingleConstant(u) || mlirAffineMapGetSingleConstantResult(u) <= 0)
    return -1;
  return mlirAffineMapGetSingleConstantResult(u);
}

bool pbcRowsCrowdCacheSets(long long rowBytes) {
  /* Rows start (rowBytes / line) sets apart: its largest power-of-two
   * factor decides how few distinct set groups they use (3 KiB rows: every
   * 16th set, 4 groups; 4 KiB: 1), not the rest of the factors. */
  return rowBytes >= 256 && (rowBytes & -rowBytes) >= 256;
}

int pbcVectorLanes(int vectorBits, int elemBits, long long trip) {
  if (elemBits <= 0 || trip <= 0)
    return 0;
  for (int lanes = vectorBits / elemBits; lanes >= 2; lanes /= 2)
    if (trip % lanes == 0)
      return lanes;
  return 0;
}

long long pbcMemrefElements(MlirType t) {
  if (!mlirTypeIsAMemRef(t) || !mlirShapedTypeHasStaticShape(t))
    return -1;
  long long n = 1;
  for (intptr_t d = 0; d < mlirShapedTypeGetRank(t); ++d)
    n *= mlirShapedTypeGetDimSize(t, d);
  return n;
}

long long pbcBandIterations(MlirOperation root) {
  MlirOperation band[PBC_MAX_BAND];
  int depth = pbcLoopBand(root, band, PBC_MAX_BAND);
  long long total = 1;
  for (int l = 0; l < depth; ++l) {
    long long trip = pbcExtAffineConstantTripCount(band[l]);
    if (trip < 0)
      return -1;
    total *= trip;
  }
  return total;
}

typedef struct {
  PbcAccess *acc;
  int max, n;
  bool complete;
} Gathered;

static MlirWalkResult gatherAccess(MlirOperation op, void *data) {
  Gathered *g = data;
  PbcAccess acc;
  if (pbcAccessGet(op, &acc)) {
    if (g->n < g->max)
      g->acc[g->n++] = acc;
    else
      g->complete = false;
    return MlirWalkResultAdvance;
  }
  if (pbcOpIsA(op, "func.call") || pbcOpIsA(op, "func.call_indirect")) {
    g->complete = false; /* may touch any memory */
    return MlirWalkResultAdvance;
  }
  if (pbcOpIsA(op, "memref.dealloc") || pbcOpIsA(op, "affine.prefetch"))
    return MlirWalkResultAdvance;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i)
    if (mlirTypeIsAMemRef(mlirValueGetType(mlirOperationGetOperand(op, i))))
      g->complete = false;
  return MlirWalkResultAdvance;
}

bool pbcGatherAccesses(MlirOperation root, PbcAccess *acc, int max, int *n) {
  Gathered g = {acc, max, 0, true};
  mlirOperationWalk(root, gatherAccess, &g, MlirWalkPreOrder);
  *n = g.n;
  return g.complete;
}

bool pbcLoopStoresOnlyConstant(MlirOperation loop, PbcAccess *store, MlirOperation *constant) {
  MlirOperation first = mlirBlockGetFirstOperation(pbcLoopBody(loop));
  if (!pbcAccessGet(first, store) || !store->isWrite ||
      !pbcOpIsA(mlirOperationGetNextInBlock(first), "affine.yield"))
    return false;
  MlirValue k = mlirOperationGetOperand(first, 0);
  if (!mlirValueIsAOpResult(k) || !pbcOpIsA(mlirOpResultGetOwner(k), "arith.constant"))
    return false;
  *constant = mlirOpResultGetOwner(k);
  return true;
}

bool pbcIvOnlySubscripts(MlirValue iv) {
  for (MlirOpOperand u = mlirValueGetFirstUse(iv); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    bool load = pbcOpIsA(user, "affine.load");
    if (!load && !pbcOpIsA(user, "affine.store"))
      return false;
    if (mlirOpOperandGetOperandNumber(u) < (load ? 1u : 2u))
      return false; /* the memref or the stored value */
  }
  return true;
}

MlirOperation pbcMemrefHoistPoint(MlirOperation op, MlirValue memref, bool unlessWritten) {
  for (;;) {
    MlirOperation parent = mlirOperationGetParentOperation(op);
    if (!pbcOpIsA(parent, "affine.for") || pbcValueIsDefinedInside(memref, parent) ||
        (unlessWritten && pbcMayWriteMemref(parent, memref)))
      return op;
    op = parent;
  }
}
