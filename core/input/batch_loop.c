/* Entries compiled once for every batch size, called per batch element
 * (pbc/batch_loop.h). */
#include "pbc/batch_loop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/op_list.h"
#include "pbc/ptr_map.h"
#include "pbc/specialize_shapes.h"
#include "pbc/strbuf.h"

/* The batch the separation is proven at: a prime no other size of a real
 * program is, so that a reshape's group holding it shows where it went. */
#define kProbeBatch 1009

bool pbcEntrySigIsBatched(const PbcEntrySig *sig) {
  for (int i = 0; i < sig->numInputs + sig->numOutputs; ++i) {
    const PbcTensorType *t = pbcEntrySigArg(sig, i);
    for (int d = 0; d < t->rank; ++d)
      if (t->shape[d] == PBC_DYNAMIC_SIZE)
        return true;
  }
  return false;
}

/* --- what each value holds --------------------------------------------------- */

/* A value is batched at position p (its slice i along p is computed from the
 * inputs' batch element i alone and values that hold no batch) or holds no
 * batch; it is uniform along a position when all its slices there are
 * equal (tensor.empty, splat constants, broadcasts): such a value may be
 * read along the batch. Kept in a map as (uniform << 4) | (p + 1). */
typedef struct {
  PbcPtrMap map;
  /* A batched value's factor F: its batch dimension holds F consecutive
   * entries per batch element (the batch merged with the dimensions after
   * it: BERT's rows of batch x sequence); absent: 1. */
  PbcPtrMap factors;
  MlirOperation bad;
  char why[256];
} Flow;

static int64_t factorOf(const Flow *f, MlirValue v) {
  int k = pbcPtrMapGet(&f->factors, v.ptr);
  return k < 0 ? 1 : k;
}

static void setFactor(Flow *f, MlirValue v, int64_t k) {
  if (k != 1)
    pbcPtrMapPut(&f->factors, v.ptr, (int)k);
}

static void setInfo(Flow *f, MlirValue v, int pos, unsigned uniform) {
  pbcPtrMapPut(&f->map, v.ptr, (int)((uniform & 0xFFu) << 4) | (pos + 1));
}

static int posOf(const Flow *f, MlirValue v) {
  int c = pbcPtrMapGet(&f->map, v.ptr);
  return c < 0 ? -1 : (c & 15) - 1;
}

static unsigned uniformOf(const Flow *f, MlirValue v) {
  int c = pbcPtrMapGet(&f->map, v.ptr);
  return c < 0 ? 0u : (unsigned)c >> 4;
}

static bool refuse(Flow *f, MlirOperation op, const char *why) {
  f->bad = op;
  snprintf(f->why, sizeof(f->why), "%s", why);
  return false;
}

static int64_t dimSize(MlirValue v, int d) {
  return mlirShapedTypeGetDimSize(mlirValueGetType(v), d);
}

static int rankOf(MlirValue v) {
  MlirType t = mlirValueGetType(v);
  return mlirTypeIsAShaped(t) && mlirShapedTypeHasRank(t) ? (int)mlirShapedTypeGetRank(t) : 0;
}

static unsigned allPositions(MlirValue v) {
  return rankOf(v) >= 8 ? 0xFFu : (1u << rankOf(v)) - 1u;
}

static MlirAttribute attr(MlirOperation op, const char *name) {
  return mlirOperationGetAttributeByName(op, pbcStr(name));
}

/* --- linalg.generic ------------------------------------------------------------ */

/* Whether a use of a loop index is the batch subscript of a tensor.extract
 * of a batched value (read inside a body: the same batch element's). */
static bool batchSubscript(const Flow *f, MlirOpOperand use);

typedef struct {
  const Flow *flow;
  int64_t dim;
  bool reads;
} IndexScan;

static MlirWalkResult findIndexOf(MlirOperation op, void *data) {
  IndexScan *s = data;
  if (!pbcOpIsA(op, "linalg.index") || mlirIntegerAttrGetValueInt(attr(op, "dim")) != s->dim)
    return MlirWalkResultAdvance;
  for (MlirOpOperand u = mlirValueGetFirstUse(mlirOperationGetResult(op, 0));
       !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u))
    if (!batchSubscript(s->flow, u)) {
      s->reads = true;
      return MlirWalkResultInterrupt;
    }
  return MlirWalkResultAdvance;
}

/* Whether g's body reads loop dim's index other than as the batch
 * subscript of a batched value it extracts from. */
static bool readsIndex(const Flow *flow, MlirOperation g, int64_t dim) {
  IndexScan s = {flow, dim, false};
  mlirOperationWalk(g, findIndexOf, &s, MlirWalkPreOrder);
  return s.reads;
}

static bool mapUsesDim(MlirAffineMap map, intptr_t d) {
  for (intptr_t r = 0; r < mlirAffineMapGetNumResults(map); ++r)
    if (mlirAffineExprIsFunctionOfDim(mlirAffineMapGetResult(map, r), d))
      return true;
  return false;
}

/* The position of map's result that is exactly loop d, the only one using
 * it; -1 if none is, -2 if d is used otherwise. */
static int exactPosition(MlirAffineMap map, intptr_t d) {
  int at = -1;
  for (intptr_t r = 0; r < mlirAffineMapGetNumResults(map); ++r) {
    MlirAffineExpr e = mlirAffineMapGetResult(map, r);
    if (!mlirAffineExprIsFunctionOfDim(e, d))
      continue;
    if (at != -1 || !mlirAffineExprIsADim(e))
      return -2;
    at = (int)r;
  }
  return at;
}

static bool blockArgUnused(MlirOperation g, int i) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(g, 0));
  return mlirBlockIsNull(body) || i >= mlirBlockGetNumArguments(body) ||
         mlirOpOperandIsNull(mlirValueGetFirstUse(mlirBlockGetArgument(body, i)));
}

static bool flowGeneric(Flow *f, MlirOperation g, bool anyBatched, intptr_t capturedLoop) {
  MlirAttribute seg = attr(g, "operandSegmentSizes"), maps = attr(g, "indexing_maps"),
                iters = attr(g, "iterator_types");
  if (mlirAttributeIsNull(seg) || mlirAttributeIsNull(maps) || mlirAttributeIsNull(iters))
    return refuse(f, g, "has no indexing maps");
  int nIns = mlirDenseI32ArrayGetElement(seg, 0), nOuts = mlirDenseI32ArrayGetElement(seg, 1);
  int n = nIns + nOuts;
  if (mlirArrayAttrGetNumElements(maps) != n || mlirOperationGetNumResults(g) != nOuts)
    return refuse(f, g, "has operands its maps do not describe");
  MlirAttribute parallel = pbcLinalgParallelIterator(mlirOperationGetContext(g));
  if (!anyBatched && capturedLoop < 0) {
    /* No batch: a result is uniform along a position whose loop no input
     * reads, the body does not index, and the init is uniform along (or
     * unread). */
    for (int o = 0; o < nOuts; ++o) {
      MlirAffineMap om = mlirAffineMapAttrGetValue(mlirArrayAttrGetElement(maps, nIns + o));
      MlirValue init = mlirOperationGetOperand(g, nIns + o);
      unsigned uniform = 0;
      for (intptr_t r = 0; r < mlirAffineMapGetNumResults(om) && r < 8; ++r) {
        MlirAffineExpr e = mlirAffineMapGetResult(om, r);
        if (!mlirAffineExprIsADim(e))
          continue;
        intptr_t d = mlirAffineDimExprGetPosition(e);
        bool ok = !readsIndex(f, g, d) &&
                  ((uniformOf(f, init) >> r) & 1u || blockArgUnused(g, nIns + o));
        for (int i = 0; ok && i < nIns; ++i)
          ok = !mapUsesDim(mlirAffineMapAttrGetValue(mlirArrayAttrGetElement(maps, i)), d);
        if (ok)
          uniform |= 1u << r;
      }
      setInfo(f, mlirOperationGetResult(g, o), -1, uniform);
    }
    return true;
  }
  /* The batch loop: the one loop every batched operand reads its batch by
   * (and the body's extracts of batched values, where it has them), with
   * one factor. */
  intptr_t b = capturedLoop;
  int64_t factor = -1;
  for (int k = 0; k < n; ++k) {
    MlirValue v = mlirOperationGetOperand(g, k);
    int p = posOf(f, v);
    if (p < 0)
      continue;
    MlirAffineMap map = mlirAffineMapAttrGetValue(mlirArrayAttrGetElement(maps, k));
    MlirAffineExpr e = mlirAffineMapGetResult(map, p);
    if (!mlirAffineExprIsADim(e))
      return refuse(f, g, "reads the batch through a subscript that is not one loop (a window, an offset)");
    intptr_t d = mlirAffineDimExprGetPosition(e);
    if (b != -1 && d != b)
      return refuse(f, g, "pairs batch elements of different operands by different loops");
    if (factor != -1 && factorOf(f, v) != factor)
      return refuse(f, g, "pairs operands whose batch elements have different sizes");
    b = d;
    factor = factorOf(f, v);
    if (exactPosition(map, b) != p)
      return refuse(f, g, "reads the batch loop in more than one subscript");
  }
  if (b < 0 || b >= mlirArrayAttrGetNumElements(iters))
    return refuse(f, g, "has no loop over the batch");
  if (!mlirAttributeEqual(mlirArrayAttrGetElement(iters, b), parallel))
    return refuse(f, g, "reduces over the batch");
  if (readsIndex(f, g, b))
    return refuse(f, g, "reads the batch index (linalg.index)");
  for (int k = 0; k < n; ++k) {
    MlirValue v = mlirOperationGetOperand(g, k);
    if (posOf(f, v) >= 0)
      continue;
    MlirAffineMap map = mlirAffineMapAttrGetValue(mlirArrayAttrGetElement(maps, k));
    int q = exactPosition(map, b);
    if (q == -2 || (q >= 0 && (q >= 8 || !((uniformOf(f, v) >> q) & 1u))))
      return refuse(f, g, "reads a value that holds no batch along the batch loop");
  }
  for (int o = 0; o < nOuts; ++o) {
    MlirAffineMap om = mlirAffineMapAttrGetValue(mlirArrayAttrGetElement(maps, nIns + o));
    int q = exactPosition(om, b);
    if (q < 0)
      return refuse(f, g, "has a result without the batch");
    if (capturedLoop >= 0 && factor > 1)
      return refuse(f, g, "extracts from a batched value in a body over merged batch elements");
    setInfo(f, mlirOperationGetResult(g, o), q, 0);
    setFactor(f, mlirOperationGetResult(g, o), factor < 0 ? 1 : factor);
  }
  return true;
}

/* --- reshapes, slices, pads, concatenations ----------------------------------------- */

static int64_t i64At(MlirAttribute a, intptr_t i) { return mlirDenseI64ArrayGetElement(a, i); }

/* collapse_shape (expand = false: groups over the result, members from the
 * source) and expand_shape (groups over the source). */
static bool flowReshape(Flow *f, MlirOperation op, bool expand) {
  MlirValue src = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
  MlirAttribute groups = attr(op, "reassociation");
  MlirValue wide = expand ? res : src; /* the side whose dims the groups list */
  int p = posOf(f, src);
  unsigned uniform = uniformOf(f, src), outUniform = 0;
  int outPos = -1;
  int64_t outFactor = expand ? 1 : factorOf(f, src);
  for (intptr_t g = 0; g < mlirArrayAttrGetNumElements(groups); ++g) {
    MlirAttribute members = mlirArrayAttrGetElement(groups, g);
    intptr_t m = mlirArrayAttrGetNumElements(members);
    bool holds = false, allUniform = true;
    for (intptr_t k = 0; k < m; ++k) {
      int d = (int)mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(members, k));
      if (!expand) {
        holds |= d == p;
        allUniform &= d < 8 && (((uniform >> d) & 1u) || dimSize(src, d) == 1);
      }
    }
    if (expand) {
      holds = g == p;
      allUniform = g < 8 && ((uniform >> g) & 1u);
    }
    if (!expand) {
      if (holds) {
        /* The batch may lead a merge (its elements' entries stay
         * consecutive: the factor grows); a dimension before it may not. */
        bool after = false;
        for (intptr_t k = 0; k < m; ++k) {
          int d = (int)mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(members, k));
          if (d == p)
            after = true;
          else if (!after && dimSize(src, d) != 1)
            return refuse(f, op, "merges the batch into a dimension before it");
          else if (after)
            outFactor *= dimSize(src, d);
        }
        outPos = (int)g;
      }
      if (allUniform && g < 8)
        outUniform |= 1u << g;
      continue;
    }
    /* expand: the group of source dim g becomes result dims `members`.
     * The batch (the probe's prime times its factor F) goes to the group's
     * first dimension that is not 1, which must be a multiple of the probe
     * (probe x F0, F0 dividing F); the dimensions after it split F / F0. */
    int64_t rest = 1;
    for (intptr_t k = 0; k < m; ++k) {
      int d = (int)mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(members, k));
      int64_t size = dimSize(wide, d);
      if (holds) {
        if (outPos >= 0)
          rest *= size;
        else if (size != 1) {
          int64_t whole = factorOf(f, src);
          if (size % kProbeBatch != 0 || whole % (size / kProbeBatch) != 0)
            return refuse(f, op, "splits the batch into several dimensions");
          outPos = d;
          outFactor = size / kProbeBatch;
        }
      }
      if (allUniform && d < 8)
        outUniform |= 1u << d;
    }
    if (holds && outPos >= 0 && outFactor * rest != factorOf(f, src))
      return refuse(f, op, "splits the batch into several dimensions");
  }
  if (p >= 0 && outPos < 0)
    return refuse(f, op, "loses the batch dimension");
  if (outFactor > (1 << 30))
    return refuse(f, op, "merges more than 2^30 entries per batch element");
  setInfo(f, res, outPos, outUniform);
  if (p >= 0)
    setFactor(f, res, outFactor);
  return true;
}

/* Whether offsets/sizes/strides keep all of dimension d of v. */
static bool wholeAlong(MlirOperation op, MlirValue v, int d) {
  MlirAttribute off = attr(op, "static_offsets"), sz = attr(op, "static_sizes"),
                st = attr(op, "static_strides");
  return !mlirAttributeIsNull(off) && !mlirAttributeIsNull(sz) && !mlirAttributeIsNull(st) &&
         d < mlirDenseArrayGetNumElements(sz) && i64At(off, d) == 0 &&
         i64At(sz, d) == dimSize(v, d) && i64At(st, d) == 1;
}

static bool flowExtractSlice(Flow *f, MlirOperation op) {
  MlirValue src = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
  int p = posOf(f, src);
  if (rankOf(res) != rankOf(src) || mlirOperationGetNumOperands(op) != 1)
    return p >= 0 ? refuse(f, op, "slices with dynamic or dropped dimensions") : (setInfo(f, res, -1, 0), true);
  if (p >= 0 && !wholeAlong(op, src, p))
    return refuse(f, op, "takes part of the batch");
  setInfo(f, res, p, uniformOf(f, src));
  if (p >= 0)
    setFactor(f, res, factorOf(f, src));
  return true;
}

static bool flowInsertSlice(Flow *f, MlirOperation op) {
  MlirValue src = mlirOperationGetOperand(op, 0), dst = mlirOperationGetOperand(op, 1);
  MlirValue res = mlirOperationGetResult(op, 0);
  int p = posOf(f, src) >= 0 ? posOf(f, src) : posOf(f, dst);
  if (rankOf(src) != rankOf(dst) || mlirOperationGetNumOperands(op) != 2 ||
      (posOf(f, src) >= 0 && posOf(f, dst) >= 0 && posOf(f, src) != posOf(f, dst)))
    return refuse(f, op, "places the batch with dynamic, dropped or moved dimensions");
  bool srcOk = posOf(f, src) == p || (p < 8 && ((uniformOf(f, src) >> p) & 1u));
  bool dstOk = posOf(f, dst) == p || (p < 8 && ((uniformOf(f, dst) >> p) & 1u));
  if (!srcOk || !dstOk || !wholeAlong(op, dst, p) || dimSize(src, p) != dimSize(dst, p))
    return refuse(f, op, "writes part of the batch");
  MlirValue held = posOf(f, src) >= 0 ? src : dst;
  if (posOf(f, src) >= 0 && posOf(f, dst) >= 0 && factorOf(f, src) != factorOf(f, dst))
    return refuse(f, op, "places batch elements of one size into those of another");
  setInfo(f, res, p, 0);
  setFactor(f, res, factorOf(f, held));
  return true;
}

static bool flowPad(Flow *f, MlirOperation op) {
  MlirValue src = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
  int p = posOf(f, src);
  MlirAttribute lo = attr(op, "static_low"), hi = attr(op, "static_high");
  if (mlirOperationGetNumOperands(op) != 1 || mlirAttributeIsNull(lo) || mlirAttributeIsNull(hi) ||
      i64At(lo, p) != 0 || i64At(hi, p) != 0)
    return refuse(f, op, "pads the batch");
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
  if (!mlirBlockIsNull(body) && p < mlirBlockGetNumArguments(body) &&
      !mlirOpOperandIsNull(mlirValueGetFirstUse(mlirBlockGetArgument(body, p))))
    return refuse(f, op, "pads with a value computed from the batch index");
  setInfo(f, res, p, 0);
  setFactor(f, res, factorOf(f, src));
  return true;
}

static bool flowConcat(Flow *f, MlirOperation op) {
  int p = -1;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i)
    if (posOf(f, mlirOperationGetOperand(op, i)) >= 0)
      p = posOf(f, mlirOperationGetOperand(op, i));
  if (mlirIntegerAttrGetValueInt(attr(op, "dim")) == p)
    return refuse(f, op, "concatenates along the batch");
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    MlirValue v = mlirOperationGetOperand(op, i);
    if (posOf(f, v) != p && !(p < 8 && ((uniformOf(f, v) >> p) & 1u)))
      return refuse(f, op, "concatenates operands that hold the batch in different places");
  }
  int64_t factor = -1;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    MlirValue v = mlirOperationGetOperand(op, i);
    if (posOf(f, v) < 0)
      continue;
    if (factor != -1 && factorOf(f, v) != factor)
      return refuse(f, op, "concatenates batch elements of different sizes");
    factor = factorOf(f, v);
  }
  setInfo(f, mlirOperationGetResult(op, 0), p, 0);
  setFactor(f, mlirOperationGetResult(op, 0), factor);
  return true;
}

/* linalg.softmax (no generic form): each row along `dimension` alone. */
static bool flowSoftmax(Flow *f, MlirOperation op) {
  MlirValue in = mlirOperationGetOperand(op, 0), init = mlirOperationGetOperand(op, 1);
  int p = posOf(f, in);
  if (p < 0 || mlirIntegerAttrGetValueInt(attr(op, "dimension")) == p)
    return refuse(f, op, "normalizes along the batch");
  if (posOf(f, init) != p && !(p < 8 && ((uniformOf(f, init) >> p) & 1u)))
    return refuse(f, op, "writes into a value that holds the batch elsewhere");
  if (posOf(f, init) == p && factorOf(f, init) != factorOf(f, in))
    return refuse(f, op, "writes batch elements of one size into those of another");
  setInfo(f, mlirOperationGetResult(op, 0), p, 0);
  setFactor(f, mlirOperationGetResult(op, 0), factorOf(f, in));
  return true;
}

/* --- one op, one function -------------------------------------------------------- */

static bool batchSubscript(const Flow *f, MlirOpOperand use) {
  MlirOperation user = mlirOpOperandGetOwner(use);
  intptr_t n = mlirOpOperandGetOperandNumber(use);
  return pbcOpIsA(user, "tensor.extract") && n >= 1 &&
         posOf(f, mlirOperationGetOperand(user, 0)) == n - 1;
}

/* What a region reads from batched values defined outside it: only
 * `tensor.extract %v[...]` in a linalg.generic's body whose batch
 * subscript is one loop's index (`loop`: the same for all), of a value
 * whose batch is not merged with other dimensions, reads the batch element
 * the iteration computes; anything else (a gather's table indexed
 * by data) reads any element. */
typedef struct {
  const Flow *f;
  MlirOperation top;
  intptr_t loop;
  bool other;
} CaptureScan;

static MlirWalkResult findCapture(MlirOperation op, void *data) {
  CaptureScan *s = data;
  if (mlirOperationEqual(op, s->top))
    return MlirWalkResultAdvance;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    int p = posOf(s->f, mlirOperationGetOperand(op, i));
    if (p < 0)
      continue;
    if (factorOf(s->f, mlirOperationGetOperand(op, i)) != 1) {
      s->other = true; /* its batch subscript would not be one element's */
      return MlirWalkResultInterrupt;
    }
    MlirValue sub = i == 0 && pbcOpIsA(op, "tensor.extract") && p + 1 < mlirOperationGetNumOperands(op)
                        ? mlirOperationGetOperand(op, p + 1)
                        : (MlirValue){NULL};
    MlirOperation index = !mlirValueIsNull(sub) && mlirValueIsAOpResult(sub)
                              ? mlirOpResultGetOwner(sub)
                              : (MlirOperation){NULL};
    bool inBody = mlirOperationEqual(mlirOperationGetParentOperation(op), s->top) &&
                  pbcOpIsA(s->top, "linalg.generic");
    if (mlirOperationIsNull(index) || !pbcOpIsA(index, "linalg.index") || !inBody) {
      s->other = true;
      return MlirWalkResultInterrupt;
    }
    intptr_t k = (intptr_t)mlirIntegerAttrGetValueInt(attr(index, "dim"));
    if (s->loop >= 0 && s->loop != k) {
      s->other = true;
      return MlirWalkResultInterrupt;
    }
    s->loop = k;
  }
  return MlirWalkResultAdvance;
}

static bool flowOp(Flow *f, MlirOperation op) {
  bool anyBatched = false;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i)
    anyBatched |= posOf(f, mlirOperationGetOperand(op, i)) >= 0;
  CaptureScan s = {f, op, -1, false};
  if (mlirOperationGetNumRegions(op) > 0) {
    mlirOperationWalk(op, findCapture, &s, MlirWalkPreOrder);
    if (s.other)
      return refuse(f, op, "reads a batched value inside its region");
  }
  if (pbcOpIsA(op, "linalg.generic"))
    return flowGeneric(f, op, anyBatched, s.loop);
  if (s.loop >= 0)
    return refuse(f, op, "reads a batched value inside its region");
  if (pbcOpIsA(op, "func.return")) {
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i)
      if (posOf(f, mlirOperationGetOperand(op, i)) != 0 ||
          factorOf(f, mlirOperationGetOperand(op, i)) != 1)
        return refuse(f, op, "returns a result whose leading dimension is not the batch");
    return true;
  }
  if (!anyBatched) {
    for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i) {
      MlirValue r = mlirOperationGetResult(op, i);
      MlirAttribute value = attr(op, "value");
      bool uniform = pbcOpIsA(op, "tensor.empty") ||
                     (pbcOpIsA(op, "arith.constant") && mlirAttributeIsADenseElements(value) &&
                      mlirDenseElementsAttrIsSplat(value));
      setInfo(f, r, -1, uniform ? allPositions(r) : 0);
    }
    return true;
  }
  if (pbcOpIsA(op, "tensor.cast")) {
    MlirValue src = mlirOperationGetOperand(op, 0);
    setInfo(f, mlirOperationGetResult(op, 0), posOf(f, src), uniformOf(f, src));
    setFactor(f, mlirOperationGetResult(op, 0), factorOf(f, src));
    return true;
  }
  if (pbcOpIsA(op, "tensor.collapse_shape"))
    return flowReshape(f, op, false);
  if (pbcOpIsA(op, "tensor.expand_shape"))
    return flowReshape(f, op, true);
  if (pbcOpIsA(op, "tensor.extract_slice"))
    return flowExtractSlice(f, op);
  if (pbcOpIsA(op, "tensor.insert_slice"))
    return flowInsertSlice(f, op);
  if (pbcOpIsA(op, "tensor.pad"))
    return flowPad(f, op);
  if (pbcOpIsA(op, "tensor.concat"))
    return flowConcat(f, op);
  if (pbcOpIsA(op, "linalg.softmax"))
    return flowSoftmax(f, op);
  return refuse(f, op, "is not an op pbc splits by batch element");
}

static MlirWalkResult countValues(MlirOperation op, void *data) {
  *(size_t *)data += (size_t)mlirOperationGetNumResults(op) + 1;
  return MlirWalkResultAdvance;
}

/* Follows the batch from f's inputs marked in `batched` to its results.
 * False after a located error. */
static bool separates(MlirOperation func, const bool *batched, MlirStringRef name) {
  MlirRegion body = mlirOperationGetRegion(func, 0);
  MlirBlock entry = mlirRegionGetFirstBlock(body);
  Flow f = {0};
  size_t values = (size_t)mlirBlockGetNumArguments(entry) + 16;
  mlirOperationWalk(func, countValues, &values, MlirWalkPreOrder);
  pbcPtrMapInit(&f.map, values);
  pbcPtrMapInit(&f.factors, values);
  bool ok = mlirBlockIsNull(mlirBlockGetNextInRegion(entry));
  if (!ok)
    refuse(&f, func, "has more than one block");
  for (intptr_t i = 0; ok && i < mlirBlockGetNumArguments(entry); ++i)
    setInfo(&f, mlirBlockGetArgument(entry, i), batched[i] ? 0 : -1, 0);
  for (MlirOperation op = mlirBlockGetFirstOperation(entry); ok && !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    ok = flowOp(&f, op);
  if (!ok) {
    char on[128];
    pbcEmitOpError(f.bad,
                   "@%.*s does not separate over its batch (the leading `?` of its inputs): "
                   "'%s' %s; give its sizes (pbc --shape or --dim) to compile it for them",
                   (int)name.length, name.data, pbcOpName(f.bad, on, sizeof(on)), f.why);
  }
  pbcPtrMapDestroy(&f.map);
  pbcPtrMapDestroy(&f.factors);
  return ok;
}

/* --- the batch's size ----------------------------------------------------------- */

/* A size read from a dynamic dimension (tensor.dim) may only give shapes
 * (tensor.empty, reshapes, a slice's sizes) and feed shape checks
 * (cf.assert): a value computed from it (a mean that divides by the batch,
 * an offset) would be folded to a constant at a batch of one and the
 * program then computes another function per element. */
static bool passesSize(MlirOperation op) {
  static const char *const kArith[] = {
      "arith.index_cast", "arith.index_castui", "arith.muli", "arith.addi", "arith.subi",
      "arith.divsi", "arith.divui", "arith.ceildivsi", "arith.ceildivui", "arith.floordivsi",
      "arith.remsi", "arith.remui", "arith.cmpi", "arith.select", "arith.andi", "arith.ori",
      "arith.xori", "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui", "arith.extsi",
      "arith.extui", "arith.trunci", "affine.apply", "affine.min", "affine.max",
      "tensor.from_elements"};
  for (size_t i = 0; i < sizeof(kArith) / sizeof(kArith[0]); ++i)
    if (pbcOpIsA(op, kArith[i]))
      return true;
  return false;
}

/* Whether operand `i` of op takes a size: a shape it gives, or a check. */
static bool takesSize(MlirOperation op, intptr_t i) {
  if (pbcOpIsA(op, "tensor.empty") || pbcOpIsA(op, "cf.assert"))
    return true;
  if (pbcOpIsA(op, "tensor.expand_shape") || pbcOpIsA(op, "tensor.splat"))
    return i >= 1;
  if (pbcOpIsA(op, "tensor.reshape"))
    return i == 1;
  bool extract = pbcOpIsA(op, "tensor.extract_slice"), insert = pbcOpIsA(op, "tensor.insert_slice");
  if (extract || insert) {
    /* operands: source[, dest], offsets, sizes, strides */
    MlirAttribute seg = attr(op, "operandSegmentSizes");
    if (mlirAttributeIsNull(seg))
      return false;
    int first = insert ? 2 : 1;
    int offsets = mlirDenseI32ArrayGetElement(seg, first);
    int sizes = mlirDenseI32ArrayGetElement(seg, first + 1);
    return i >= first + offsets && i < first + offsets + sizes;
  }
  return false;
}

typedef struct {
  MlirOperation bad;
} SizeScan;

/* Follows the values computed from v; false at a use that is not a size. */
static bool sizeOnly(MlirValue v, SizeScan *s, int depth) {
  if (depth > 64)
    return false;
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    if (takesSize(user, mlirOpOperandGetOperandNumber(u)))
      continue;
    if (!passesSize(user)) {
      s->bad = user;
      return false;
    }
    for (intptr_t r = 0; r < mlirOperationGetNumResults(user); ++r)
      if (!sizeOnly(mlirOperationGetResult(user, r), s, depth + 1))
        return false;
  }
  return true;
}

static MlirWalkResult findSizeRead(MlirOperation op, void *data) {
  SizeScan *s = data;
  if (pbcOpIsA(op, "tensor.dim") || pbcOpIsA(op, "memref.dim")) {
    if (!sizeOnly(mlirOperationGetResult(op, 0), s, 0))
      return MlirWalkResultInterrupt;
  } else if (strncmp(mlirIdentifierStr(mlirOperationGetName(op)).data, "shape.", 6) == 0) {
    s->bad = op;
    return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

static bool sizesOnlyShape(MlirOperation f) {
  SizeScan s = {{NULL}};
  mlirOperationWalk(f, findSizeRead, &s, MlirWalkPreOrder);
  if (mlirOperationIsNull(s.bad))
    return true;
  MlirStringRef name = mlirStringAttrGetValue(attr(f, "sym_name"));
  char on[128];
  pbcEmitOpError(s.bad,
                 "@%.*s does not separate over its batch (the leading `?` of its inputs): "
                 "'%s' computes with a dynamic size; give its sizes (pbc --shape or --dim) to "
                 "compile it for them",
                 (int)name.length, name.data, pbcOpName(s.bad, on, sizeof(on)));
  return false;
}

/* --- torch-mlir's broadcasts ------------------------------------------------------ */

/* torch-mlir writes a broadcast of a tensor with a dynamic size X as an
 * extract in a generic's body at `select(X == 1, 0, i)`, i the index of the
 * loop over X (the output's size there is X): the broadcast of a size-1
 * dimension. With i in [0, X), X == 1 means i == 0, so the select is i
 * itself, for every X; written so, the body reads the batch size no more
 * (it would be folded differently at each size). */
static bool isConstantInt(MlirValue v, int64_t want) {
  if (!mlirValueIsAOpResult(v) || !pbcOpIsA(mlirOpResultGetOwner(v), "arith.constant"))
    return false;
  MlirAttribute a = attr(mlirOpResultGetOwner(v), "value");
  return mlirAttributeIsAInteger(a) && mlirIntegerAttrGetValueInt(a) == want;
}

/* The value giving loop k's extent of generic g, when its output's size
 * there is a tensor.empty's dynamic operand; NULL otherwise. */
static MlirValue loopExtent(MlirOperation g, int64_t k) {
  MlirAttribute seg = attr(g, "operandSegmentSizes"), maps = attr(g, "indexing_maps");
  if (mlirAttributeIsNull(seg) || mlirAttributeIsNull(maps))
    return (MlirValue){NULL};
  int nIns = mlirDenseI32ArrayGetElement(seg, 0), nOuts = mlirDenseI32ArrayGetElement(seg, 1);
  for (int o = 0; o < nOuts; ++o) {
    MlirAffineMap om = mlirAffineMapAttrGetValue(mlirArrayAttrGetElement(maps, nIns + o));
    int r = exactPosition(om, k);
    MlirValue init = mlirOperationGetOperand(g, nIns + o);
    MlirType t = mlirValueGetType(init);
    if (r < 0 || !mlirValueIsAOpResult(init) || !pbcOpIsA(mlirOpResultGetOwner(init), "tensor.empty") ||
        !mlirShapedTypeIsDynamicDim(t, r))
      continue;
    int dyn = 0; /* tensor.empty's operands: its dynamic sizes, in order */
    for (int d = 0; d < r; ++d)
      dyn += mlirShapedTypeIsDynamicDim(t, d);
    return mlirOperationGetOperand(mlirOpResultGetOwner(init), dyn);
  }
  return (MlirValue){NULL};
}

static MlirWalkResult simplifyBroadcastSelect(MlirOperation op, void *data) {
  (void)data;
  if (!pbcOpIsA(op, "arith.select"))
    return MlirWalkResultAdvance;
  MlirValue cond = mlirOperationGetOperand(op, 0), index = mlirOperationGetOperand(op, 2);
  MlirOperation cmp = mlirValueIsAOpResult(cond) ? mlirOpResultGetOwner(cond) : (MlirOperation){NULL};
  MlirOperation idx = mlirValueIsAOpResult(index) ? mlirOpResultGetOwner(index) : (MlirOperation){NULL};
  MlirOperation g = mlirOperationGetParentOperation(op);
  if (mlirOperationIsNull(cmp) || !pbcOpIsA(cmp, "arith.cmpi") ||
      mlirIntegerAttrGetValueInt(attr(cmp, "predicate")) != 0 /* eq */ ||
      mlirOperationIsNull(idx) || !pbcOpIsA(idx, "linalg.index") ||
      !isConstantInt(mlirOperationGetOperand(op, 1), 0) || !pbcOpIsA(g, "linalg.generic"))
    return MlirWalkResultAdvance;
  MlirValue a = mlirOperationGetOperand(cmp, 0), b = mlirOperationGetOperand(cmp, 1);
  MlirValue x = isConstantInt(b, 1) ? a : isConstantInt(a, 1) ? b : (MlirValue){NULL};
  MlirValue extent = loopExtent(g, mlirIntegerAttrGetValueInt(attr(idx, "dim")));
  if (mlirValueIsNull(x) || mlirValueIsNull(extent) || !mlirValueEqual(x, extent))
    return MlirWalkResultAdvance;
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), index);
  return MlirWalkResultAdvance;
}

static void simplifyBroadcasts(MlirOperation f) {
  mlirOperationWalk(f, simplifyBroadcastSelect, NULL, MlirWalkPostOrder);
  /* The selects and compares left unused go with canonicalization. */
}

/* --- the whole ------------------------------------------------------------------- */

static MlirType functionType(MlirOperation f) {
  return mlirTypeAttrGetValue(attr(f, "function_type"));
}

static MlirStringRef funcName(MlirOperation f) {
  return mlirStringAttrGetValue(attr(f, "sym_name"));
}

static MlirOperation nthPublic(MlirModule m, int k) {
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(m)); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (pbcFuncIsPublic(op) && k-- == 0)
      return op;
  return (MlirOperation){NULL};
}

/* Which inputs of public function f have a dynamic leading size (*any:
 * whether one has); false (after a located error) if a size other than the
 * leading one is dynamic, or a result is dynamic with no dynamic input. */
static bool batchedInputs(MlirOperation f, bool *batched, bool *any) {
  MlirType ft = functionType(f);
  MlirStringRef name = funcName(f);
  *any = false;
  bool dynamicResult = false;
  for (intptr_t i = 0; i < mlirFunctionTypeGetNumResults(ft); ++i) {
    MlirType t = mlirFunctionTypeGetResult(ft, i);
    dynamicResult |= mlirTypeIsARankedTensor(t) && !mlirShapedTypeHasStaticShape(t);
  }
  for (intptr_t i = 0; i < mlirFunctionTypeGetNumInputs(ft); ++i) {
    MlirType t = mlirFunctionTypeGetInput(ft, i);
    batched[i] = false;
    if (!mlirTypeIsARankedTensor(t) || mlirShapedTypeHasStaticShape(t))
      continue;
    for (intptr_t d = 1; d < mlirShapedTypeGetRank(t); ++d)
      if (mlirShapedTypeIsDynamicDim(t, d)) {
        pbcEmitOpError(f,
                       "argument %ld of @%.*s has a dynamic size in dimension %ld: pbc compiles "
                       "one library for every size of a leading (batch) dimension only; give "
                       "the sizes (pbc --shape or --dim) to compile it for them",
                       (long)i, (int)name.length, name.data, (long)d);
        return false;
      }
    batched[i] = *any = true;
  }
  if (dynamicResult && !*any) {
    pbcEmitOpError(f, "@%.*s returns dynamic sizes from static inputs", (int)name.length, name.data);
    return false;
  }
  return true;
}

/* The ops compared between batches: not loop indices and index constants,
 * which canonicalization trades for each other at a batch of one (the
 * index of a loop of one iteration is 0); sizes that could reach the
 * computation through them were refused on the dynamic program. */
static MlirWalkResult collectOp(MlirOperation op, void *data) {
  bool indexConstant = pbcOpIsA(op, "arith.constant") &&
                       mlirTypeIsAIndex(mlirValueGetType(mlirOperationGetResult(op, 0)));
  if (!indexConstant && !pbcOpIsA(op, "linalg.index"))
    pbcOpListPush(data, op);
  return MlirWalkResultAdvance;
}

static bool isNamed(MlirStringRef s, const char *name) {
  return s.length == strlen(name) && strncmp(s.data, name, s.length) == 0;
}

/* Whether two values of an attribute agree but for the batch: equal, one
 * of the attributes sizes are spelt in (a slice's sizes, an expand's
 * output shape, the function's type), or splat constants of one value. */
static bool sameButBatch(MlirStringRef name, MlirAttribute a, MlirAttribute b) {
  if (mlirAttributeEqual(a, b) || isNamed(name, "static_sizes") ||
      isNamed(name, "static_output_shape") || isNamed(name, "function_type"))
    return true;
  return mlirAttributeIsADenseElements(a) && mlirAttributeIsADenseElements(b) &&
         mlirDenseElementsAttrIsSplat(a) && mlirDenseElementsAttrIsSplat(b) &&
         mlirAttributeEqual(mlirDenseElementsAttrGetSplatValue(a),
                            mlirDenseElementsAttrGetSplatValue(b));
}

/* Whether f at a batch of one is the probe's program but for the batch's
 * size: the same ops in the same order with the same attributes (a
 * constant that differs is a size folded into the computation). NULL, or
 * the first op that differs. */
static MlirOperation firstDifference(MlirOperation probe, MlirOperation f) {
  PbcOpList a = {0}, b = {0};
  mlirOperationWalk(probe, collectOp, &a, MlirWalkPreOrder);
  mlirOperationWalk(f, collectOp, &b, MlirWalkPreOrder);
  MlirOperation bad = {NULL};
  for (int i = 0; i < a.n && i < b.n && mlirOperationIsNull(bad); ++i) {
    MlirOperation x = a.ops[i], y = b.ops[i];
    intptr_t n = mlirOperationGetNumAttributes(x);
    bool same = mlirIdentifierEqual(mlirOperationGetName(x), mlirOperationGetName(y)) &&
                n == mlirOperationGetNumAttributes(y) &&
                mlirOperationGetNumOperands(x) == mlirOperationGetNumOperands(y) &&
                mlirOperationGetNumResults(x) == mlirOperationGetNumResults(y);
    for (intptr_t k = 0; same && k < n; ++k) {
      MlirNamedAttribute na = mlirOperationGetAttribute(x, k);
      MlirStringRef name = mlirIdentifierStr(na.name);
      MlirAttribute other = mlirOperationGetAttributeByName(y, name);
      same = !mlirAttributeIsNull(other) && sameButBatch(name, na.attribute, other);
    }
    if (!same)
      bad = y;
  }
  if (mlirOperationIsNull(bad) && a.n != b.n)
    bad = f;
  pbcOpListDestroy(&a);
  pbcOpListDestroy(&b);
  return bad;
}

static bool specializeAt(MlirModule m, int64_t batch) {
  PbcShapeSpec *spec = calloc(1, sizeof(PbcShapeSpec)); /* large: heap */
  spec->dim = batch;
  bool ok = pbcSpecializeShapes(m, spec);
  free(spec);
  return ok;
}

/* A batched input marked pbc.invariant loses the mark: each batch element
 * is another buffer, so its packed tiles could never be kept (pack-once
 * keys them by address and would repack per element). */
static void dropInvariantMarks(MlirOperation f, const bool *batched) {
  MlirAttribute all = attr(f, "arg_attrs");
  if (mlirAttributeIsNull(all) || !mlirAttributeIsAArray(all))
    return;
  MlirContext ctx = mlirOperationGetContext(f);
  intptr_t n = mlirArrayAttrGetNumElements(all);
  MlirAttribute *dicts = calloc((size_t)(n ? n : 1), sizeof(MlirAttribute));
  for (intptr_t i = 0; i < n; ++i) {
    MlirAttribute d = mlirArrayAttrGetElement(all, i);
    dicts[i] = d;
    if (i >= PBC_MAX_ARGS || !batched[i] || !mlirAttributeIsADictionary(d))
      continue;
    intptr_t k = mlirDictionaryAttrGetNumElements(d), kept = 0;
    MlirNamedAttribute *named = calloc((size_t)(k ? k : 1), sizeof(MlirNamedAttribute));
    for (intptr_t j = 0; j < k; ++j) {
      MlirNamedAttribute a = mlirDictionaryAttrGetElement(d, j);
      MlirStringRef name = mlirIdentifierStr(a.name);
      if (!(name.length == 13 && strncmp(name.data, "pbc.invariant", 13) == 0))
        named[kept++] = a;
    }
    dicts[i] = mlirDictionaryAttrGet(ctx, kept, named);
    free(named);
  }
  mlirOperationSetAttributeByName(f, pbcStr("arg_attrs"), mlirArrayAttrGet(ctx, n, dicts));
  free(dicts);
}

bool pbcBatchLoopPrepare(MlirModule m, PbcEntrySig *sigs, int max, int *numSigs) {
  int numPublic = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(m)); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    numPublic += pbcFuncIsPublic(op);
  /* batched[k * PBC_MAX_ARGS + i]: input i of public function k. */
  bool *batched = calloc((size_t)(numPublic ? numPublic : 1) * PBC_MAX_ARGS, sizeof(bool));
  bool *loops = calloc((size_t)(numPublic ? numPublic : 1), sizeof(bool));
  /* Every entry that does not separate is named, not only the first. */
  bool allSeparate = true;
  for (int k = 0; k < numPublic; ++k) {
    MlirOperation f = nthPublic(m, k);
    if (mlirFunctionTypeGetNumInputs(functionType(f)) > PBC_MAX_ARGS)
      continue; /* the signature check names it */
    if (!batchedInputs(f, &batched[(size_t)k * PBC_MAX_ARGS], &loops[k]))
      allSeparate = loops[k] = false;
    else if (loops[k])
      simplifyBroadcasts(f);
  }
  /* The selects the broadcasts no longer use go before sizes are traced. */
  bool ok = pbcRunPipelineText(mlirModuleGetOperation(m), "func.func(canonicalize)");
  for (int k = 0; ok && k < numPublic; ++k)
    if (loops[k] && !sizesOnlyShape(nthPublic(m, k)))
      allSeparate = loops[k] = false;
  /* The proof, on a copy at the probe batch (TOSA and named ops as
   * generics); then the program at a batch of one must be the probe's
   * program but for the batch's size. */
  MlirModule probe = mlirModuleFromOperation(mlirOperationClone(mlirModuleGetOperation(m)));
  ok = ok && specializeAt(probe, kProbeBatch);
  MlirModule probeText = {NULL};
  if (ok)
    probeText = mlirModuleFromOperation(mlirOperationClone(mlirModuleGetOperation(probe)));
  ok = ok && pbcRunPipelineText(mlirModuleGetOperation(probe),
                         "func.func(tosa-optional-decompositions,tosa-to-linalg-named,tosa-to-"
                         "linalg,tosa-to-arith,tosa-to-tensor,linalg-generalize-named-ops,"
                         "canonicalize)");
  for (int k = 0; ok && k < numPublic; ++k)
    if (loops[k])
      allSeparate &= separates(nthPublic(probe, k), &batched[(size_t)k * PBC_MAX_ARGS],
                               funcName(nthPublic(m, k)));
  ok = ok && allSeparate && specializeAt(m, 1);
  for (int k = 0; ok && k < numPublic; ++k) {
    if (!loops[k])
      continue;
    MlirOperation f = nthPublic(m, k);
    MlirOperation bad = firstDifference(nthPublic(probeText, k), f);
    if (!mlirOperationIsNull(bad)) {
      MlirStringRef name = funcName(f);
      char on[128];
      pbcEmitOpError(bad,
                     "@%.*s does not separate over its batch: '%s' differs between batches "
                     "(a size folded into the computation); give its sizes (pbc --shape or "
                     "--dim) to compile it for them",
                     (int)name.length, name.data, pbcOpName(bad, on, sizeof(on)));
      ok = false;
    }
  }
  mlirModuleDestroy(probe);
  if (!mlirModuleIsNull(probeText))
    mlirModuleDestroy(probeText);
  if (ok) {
    *numSigs = pbcEntrySigsCollect(m, sigs, max);
    ok = *numSigs >= 0 && *numSigs == numPublic;
  }
  for (int k = 0; ok && k < numPublic; ++k) {
    if (!loops[k])
      continue;
    PbcEntrySig *s = &sigs[k];
    /* The glue hands the slice one batch element: its batched inputs and
     * every result must lead with a size of 1 at a batch of one (what the
     * proof says; checked, as the glue's strides rely on it). */
    for (int i = 0; i < s->numInputs; ++i)
      if (batched[(size_t)k * PBC_MAX_ARGS + i]) {
        ok &= s->inputs[i].rank > 0 && s->inputs[i].shape[0] == 1;
        s->inputs[i].shape[0] = PBC_DYNAMIC_SIZE;
      }
    for (int i = 0; i < s->numOutputs; ++i) {
      ok &= s->outputs[i].rank > 0 && s->outputs[i].shape[0] == 1;
      s->outputs[i].shape[0] = PBC_DYNAMIC_SIZE;
    }
    if (!ok) {
      pbcEmitOpError(nthPublic(m, k),
                     "pbc internal error: @%s at a batch of one has a batched argument that does "
                     "not lead with one element", s->name);
      break;
    }
    char sliceName[sizeof(s->name) + sizeof(PBC_BATCH_SLICE_SUFFIX)];
    snprintf(sliceName, sizeof(sliceName), "%s%s", s->name, PBC_BATCH_SLICE_SUFFIX);
    MlirOperation f = nthPublic(m, k);
    mlirOperationSetAttributeByName(
        f, pbcStr("sym_name"), mlirStringAttrGet(mlirOperationGetContext(f), pbcStr(sliceName)));
    dropInvariantMarks(f, &batched[(size_t)k * PBC_MAX_ARGS]);
  }
  free(loops);
  free(batched);
  return ok;
}
