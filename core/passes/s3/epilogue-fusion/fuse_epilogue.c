/* pbc-fuse-epilogue: consumer-into-producer slicing fusion (PolyBlocks §4.2)
 * of an elementwise epilogue E (bias, activation: a pointwise or broadcast
 * nest) into the tiled matmul-kind nest M that computes its input C. This is
 * two-phase tiling's fusion step for consumers: M was tiled for the memory
 * hierarchy by itself, and E's slice for each of M's tiles now runs right
 * after that tile of C is computed, while it is in L1 (or still in vector
 * registers), instead of in a second pass over all of C.
 *
 * Where: the innermost loop P of M around C's stores such that the tile of C
 * one iteration of P writes is complete at the end of that iteration (P and
 * every loop around it indexes C or runs once: no reduction loop encloses
 * the slice) and is an exact box (the stores' offsets and the inner loops'
 * steps tile it without gaps or overlap), spanning the whole of any
 * dimension E has unrolled.
 * When:
 *  - M accesses C only through those stores (pbc-absorb-fill has removed the
 *    accumulator loads; a GEMM whose reduction is split re-reads C and keeps
 *    E apart);
 *  - E follows M with only constants, allocations, views, index arithmetic
 *    and loads of memory M does not write in between (they move above M),
 *    and frees (they stay after M);
 *  - E is a perfect band from 0 over C's whole extent with a straight-line
 *    body, and M is the first writer of C in its block (so M computes all
 *    of C that E reads); every access of C, and every access of a buffer E
 *    writes, is at E's own element (band ivs, constants along unrolled
 *    dimensions); M neither writes what E reads nor touches what E writes.
 * Then a clone of E goes at the end of P's body, each band loop restricted to
 * P's box, and E goes; C, if it is an allocation E alone read, goes with its
 * stores. The pass runs after vectorization and unrolling (E's
 * body is in its final vector form) and before parallelization. */
#include <stdlib.h>

#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/marks.h"
#include "pbc/op_list.h"
#include "passes/passes.h"

#define MAX_STORES 256
#define MAX_CHAIN 16

/* A slice of at most this many vector (or scalar) iterations is unrolled. */
static const long long kMaxUnrolledVectors = 64;


typedef struct {
  MlirValue c;
  int rank;
  int64_t extent[PBC_MAX_RANK];
  MlirOperation band[PBC_MAX_BAND]; /* E's */
  int depth;
} Epilogue;

typedef struct {
  PbcAccess st[MAX_STORES]; /* M's stores of C */
  int nSt;
  MlirOperation chain[MAX_CHAIN]; /* loops around them, innermost first, up to M */
  int nChain;
} Producer;

/* One iteration of P writes C[base[d] .. + width[d]) along each d,
 * base[d] a linear form of values defined outside P's body or P's iv. */
typedef struct {
  PbcLinearForm base[PBC_MAX_RANK];
  long long width[PBC_MAX_RANK];
} Box;

/* E's own element: subscript d is band[d]'s iv for d < depth, a constant
 * beyond (an unrolled dimension). */
static bool ownElement(const PbcAccess *a, const Epilogue *e) {
  if (a->rank != e->rank)
    return false;
  for (int d = 0; d < a->rank; ++d) {
    const PbcLinearForm *f = &a->subscripts[d];
    long long k;
    if (d < e->depth ? !pbcLinearIsIvPlusConstant(f, pbcLoopIv(e->band[d]), &k) || k != 0
                     : f->nTerms != 0)
      return false;
  }
  return true;
}

/* Sorts the distinct values of v[0..n) into v; returns how many. */
static int distinctSorted(long long *v, int n) {
  for (int i = 1; i < n; ++i)
    for (int j = i; j > 0 && v[j - 1] > v[j]; --j) {
      long long t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  int m = 0;
  for (int i = 0; i < n; ++i)
    if (m == 0 || v[m - 1] != v[i])
      v[m++] = v[i];
  return m;
}

/* True if the m sorted offsets step by `unit` from their first. */
static bool contiguous(const long long *off, int m, long long unit) {
  for (int i = 1; i < m; ++i)
    if (off[i] != off[0] + i * unit)
      return false;
  return true;
}

/* E: the next root nest after M, a pointwise or broadcast perfect band from
 * 0 over C, reading C at its own element; C is the one buffer E reads that M
 * writes. */
static bool describeEpilogue(MlirOperation e, MlirOperation m, Epilogue *ep, PbcAccess *acc) {
  if (!pbcOpIsA(e, "affine.for") ||
      !(pbcNestKindIs(e, "pointwise") || pbcNestKindIs(e, "broadcast")))
    return false;
  ep->depth = pbcLoopBand(e, ep->band, PBC_MAX_BAND);
  PbcLinearForm lb, ub[PBC_MAX_BAND];
  for (int l = 0; l < ep->depth; ++l)
    if (!pbcLoopBoundForm(ep->band[l], false, &lb) || lb.nTerms || lb.constant ||
        !pbcLoopBoundForm(ep->band[l], true, &ub[l]) || ub[l].nTerms)
      return false;
  ep->c.ptr = NULL;
  int n;
  if (!pbcLoopBodyIsFlat(ep->band[ep->depth - 1]) ||
      !pbcGatherAccesses(ep->band[ep->depth - 1], acc, MAX_STORES, &n))
    return false;
  for (int i = 0; i < n; ++i)
    if (!acc[i].isWrite && pbcMayWriteMemref(m, acc[i].memref)) {
      if (ep->c.ptr && !mlirValueEqual(ep->c, acc[i].memref))
        return false;
      ep->c = acc[i].memref;
    }
  if (!ep->c.ptr)
    return false;
  MlirType ct = mlirValueGetType(ep->c);
  if (!mlirShapedTypeHasStaticShape(ct) || !pbcMemrefHasIdentityLayout(ct))
    return false;
  ep->rank = (int)mlirShapedTypeGetRank(ct);
  if (ep->depth > ep->rank || ep->rank > PBC_MAX_RANK)
    return false;
  for (int d = 0; d < ep->rank; ++d)
    ep->extent[d] = mlirShapedTypeGetDimSize(ct, d);
  for (int l = 0; l < ep->depth; ++l)
    if (ub[l].constant != ep->extent[l])
      return false;
  /* Every access of C or of a buffer E writes is at E's own element; M
   * touches no buffer E writes. The unrolled dimensions of C are covered. */
  long long off[PBC_MAX_RANK][MAX_STORES];
  int nOff = 0, lanes = 0;
  for (int i = 0; i < n; ++i) {
    bool isC = pbcMemrefsMayAlias(acc[i].memref, ep->c);
    if (isC && !mlirValueEqual(acc[i].memref, ep->c))
      return false;
    bool written = acc[i].isWrite;
    for (int j = 0; j < n && !written; ++j)
      written = acc[j].isWrite && pbcMemrefsMayAlias(acc[j].memref, acc[i].memref);
    if (!isC && !written)
      continue;
    if (!ownElement(&acc[i], ep) || (!isC && pbcMayAccessMemref(m, acc[i].memref)))
      return false;
    if (isC) {
      for (int d = ep->depth; d < ep->rank; ++d)
        off[d][nOff] = acc[i].subscripts[d].constant;
      lanes = acc[i].lanes;
      ++nOff;
    }
  }
  for (int d = ep->depth; d < ep->rank; ++d) {
    long long unit = d == ep->rank - 1 && lanes ? lanes : 1;
    int k = distinctSorted(off[d], nOff);
    if (off[d][0] != 0 || !contiguous(off[d], k, unit) || k * unit != ep->extent[d])
      return false;
  }
  return true;
}

typedef struct {
  MlirValue c;
  Producer *p;
  bool loadsOk, ok;
} Collect;

static MlirWalkResult collectFn(MlirOperation op, void *user) {
  Collect *c = user;
  if (!pbcOpUsesMemref(op, c->c))
    return MlirWalkResultAdvance;
  PbcAccess a;
  bool access = pbcAccessGet(op, &a) && mlirValueEqual(a.memref, c->c);
  if (access && !a.isWrite && c->loadsOk)
    return MlirWalkResultAdvance;
  if (!access || !a.isWrite || c->p->nSt == MAX_STORES) {
    c->ok = false;
    return MlirWalkResultInterrupt;
  }
  c->p->st[c->p->nSt++] = a;
  return MlirWalkResultAdvance;
}

/* M's stores of C, all in one block, and the affine.for loops around it.
 * With loadsOk (M is a reduction's last block), M may also read C: its
 * accumulators' starts, each before the tile's stores that E follows. */
static bool describeProducer(MlirOperation m, MlirValue cv, bool loadsOk, Producer *p) {
  Collect c = {cv, p, loadsOk, true};
  p->nSt = 0;
  mlirOperationWalk(m, collectFn, &c, MlirWalkPreOrder);
  if (!c.ok || p->nSt == 0)
    return false;
  MlirBlock block = mlirOperationGetBlock(p->st[0].op);
  for (int i = 1; i < p->nSt; ++i)
    if (!mlirBlockEqual(mlirOperationGetBlock(p->st[i].op), block) ||
        p->st[i].lanes != p->st[0].lanes)
      return false;
  p->nChain = 0;
  for (MlirOperation op = mlirBlockGetParentOperation(block);;
       op = mlirOperationGetParentOperation(op)) {
    if (!pbcOpIsA(op, "affine.for") || p->nChain == MAX_CHAIN)
      return false;
    p->chain[p->nChain++] = op;
    if (mlirOperationEqual(op, m))
      return true;
  }
}

static bool sameTerms(const PbcLinearForm *a, const PbcLinearForm *b) {
  for (int t = 0; t < a->nTerms; ++t)
    if (pbcLinearCoeff(b, a->values[t]) != a->coeffs[t])
      return false;
  for (int t = 0; t < b->nTerms; ++t)
    if (pbcLinearCoeff(a, b->values[t]) != b->coeffs[t])
      return false;
  return true;
}

/* The box one iteration of P = chain[at] writes, if exact. */
static bool boxAt(const Producer *p, int at, int rank, Box *box) {
  MlirOperation loop = p->chain[at];
  bool innerUsed[MAX_CHAIN] = {false};
  long long count = 1;
  for (int d = 0; d < rank; ++d) {
    int inner = -2;
    long long off[MAX_STORES];
    for (int s = 0; s < p->nSt; ++s) {
      const PbcLinearForm *f = &p->st[s].subscripts[d];
      PbcLinearForm base = {.linear = true};
      int q = -1;
      for (int t = 0; t < f->nTerms; ++t) {
        if (f->coeffs[t] == 0)
          continue;
        int i = pbcLoopIndexOf(f->values[t], p->chain, at);
        if (i >= 0) {
          if (q >= 0 || f->coeffs[t] != 1)
            return false;
          q = i;
        } else if (!mlirValueEqual(f->values[t], pbcLoopIv(loop)) &&
                   pbcValueIsDefinedInside(f->values[t], loop)) {
          return false;
        } else {
          base.values[base.nTerms] = f->values[t];
          base.coeffs[base.nTerms++] = f->coeffs[t];
        }
      }
      if (s == 0) {
        box->base[d] = base;
        inner = q;
      } else if (q != inner || !sameTerms(&base, &box->base[d])) {
        return false;
      }
      off[s] = f->constant;
    }
    long long unit = d == rank - 1 && p->st[0].lanes ? p->st[0].lanes : 1;
    int m = distinctSorted(off, p->nSt);
    if (!contiguous(off, m, unit))
      return false;
    long long lo = off[0], width = m * unit;
    count *= m;
    if (inner >= 0) {
      /* The inner loop runs from lb (a linear form of outer values) over a
       * constant extent, in steps of the stores' width. */
      MlirOperation l = p->chain[inner];
      PbcLinearForm lb, ub;
      long long step = pbcLoopStep(l);
      if (innerUsed[inner] || !pbcLoopBoundForm(l, false, &lb) || !pbcLoopBoundForm(l, true, &ub) ||
          !sameTerms(&lb, &ub) || step != width || ub.constant <= lb.constant ||
          (ub.constant - lb.constant) % step != 0 ||
          box->base[d].nTerms + lb.nTerms > PBC_MAX_TERMS)
        return false;
      for (int t = 0; t < lb.nTerms; ++t) {
        if (pbcValueIsDefinedInside(lb.values[t], loop) &&
            !mlirValueEqual(lb.values[t], pbcLoopIv(loop)))
          return false;
        box->base[d].values[box->base[d].nTerms] = lb.values[t];
        box->base[d].coeffs[box->base[d].nTerms++] = lb.coeffs[t];
      }
      innerUsed[inner] = true;
      lo += lb.constant;
      width = ub.constant - lb.constant;
    }
    box->base[d].constant = lo;
    box->width[d] = width;
  }
  /* No inner loop repeats the stores, and no two stores write the same part. */
  for (int q = 0; q < at; ++q)
    if (!innerUsed[q] && pbcExtAffineConstantTripCount(p->chain[q]) != 1)
      return false;
  for (int s = 0; s < p->nSt; ++s)
    for (int t = s + 1; t < p->nSt; ++t) {
      bool differ = false;
      for (int d = 0; d < rank && !differ; ++d)
        differ = p->st[s].subscripts[d].constant != p->st[t].subscripts[d].constant;
      if (!differ)
        return false;
    }
  return count == p->nSt;
}

/* No loop from chain[at] outwards reduces into C: each indexes C or runs once. */
static bool completeAt(const Producer *p, int at) {
  for (int q = at; q < p->nChain; ++q) {
    bool indexes = pbcExtAffineConstantTripCount(p->chain[q]) == 1;
    for (int s = 0; s < p->nSt && !indexes; ++s)
      indexes = pbcAccessDependsOnLoop(&p->st[s], p->chain[q]);
    if (!indexes)
      return false;
  }
  return true;
}

/* The box fits E: E's unrolled dimensions whole, its loops' steps dividing
 * the box. */
static bool boxFits(const Box *box, const Epilogue *e) {
  for (int d = 0; d < e->rank; ++d) {
    if (d < e->depth) {
      if (box->width[d] % pbcLoopStep(e->band[d]) != 0)
        return false;
    } else if (box->base[d].nTerms != 0 || box->base[d].constant != 0 ||
               box->width[d] != e->extent[d]) {
      return false;
    }
  }
  return true;
}

/* Ops between M and E may move above M: constants, allocations, views
 * (a padded buffer's interior, which E writes), index arithmetic, and loads
 * of memory that M does not write. */
static bool movableAboveM(MlirOperation op, MlirOperation m) {
  if (pbcOpIsConstantOrAlloc(op) || pbcOpIsA(op, "affine.apply") || pbcOpIsMemrefView(op))
    return true;
  if (!pbcOpIsA(op, "affine.load") && !pbcOpIsA(op, "affine.vector_load"))
    return false;
  return !pbcMayWriteMemref(m, mlirOperationGetOperand(op, 0));
}

/* affine.apply of a linear form, before `before`. */
static MlirValue applyForm(MlirOperation before, const PbcLinearForm *f) {
  MlirContext ctx = mlirOperationGetContext(before);
  MlirAffineExpr e = mlirAffineConstantExprGet(ctx, f->constant);
  for (int t = 0; t < f->nTerms; ++t)
    e = mlirAffineAddExprGet(e, mlirAffineMulExprGet(mlirAffineDimExprGet(ctx, t),
                                                     mlirAffineConstantExprGet(ctx, f->coeffs[t])));
  return pbcBuildAffineApply(before, mlirAffineMapGet(ctx, f->nTerms, 0, 1, &e), f->values,
                             f->nTerms, mlirOperationGetLocation(before));
}

/* Once the slice is unrolled into the block of M's stores: a load of C that
 * reads exactly what an earlier store in the block wrote takes the stored
 * value, and a store that a later store of the same element overwrites with
 * no read of C between goes. (LLVM does neither: to it, C may alias the
 * epilogue's other inputs. Left in place, every tile stores twice and
 * reloads, and where C misses the caches the second stores wait for the
 * first ones' lines: 2048x2048x128 took 1.4x as long.) */
static void forwardStores(MlirBlock block, MlirValue c, PbcAccess st[MAX_STORES]) {
  int n = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(block), next; !mlirOperationIsNull(op);
       op = next) {
    next = mlirOperationGetNextInBlock(op);
    PbcAccess a;
    if (!pbcAccessGet(op, &a) || !mlirValueEqual(a.memref, c)) {
      if (pbcMayWriteMemref(op, c))
        n = 0; /* a write the linear forms cannot place (a view of C, a call) */
      continue;
    }
    if (a.isWrite) {
      if (n < MAX_STORES)
        st[n++] = a;
      else
        n = 0;
      continue;
    }
    int i = n - 1;
    for (; i >= 0 && !pbcAccessesSame(&st[i], &a); --i)
      if (!pbcAccessesDisjoint(&st[i], &a)) {
        i = -1;
        break;
      }
    if (i < 0 || st[i].lanes != a.lanes)
      continue;
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0),
                                  mlirOperationGetOperand(st[i].op, 0));
    mlirOperationDestroy(op);
  }
  for (MlirOperation op = mlirBlockGetFirstOperation(block), next; !mlirOperationIsNull(op);
       op = next) {
    next = mlirOperationGetNextInBlock(op);
    PbcAccess s;
    if (!pbcAccessGet(op, &s) || !s.isWrite || !mlirValueEqual(s.memref, c))
      continue;
    for (MlirOperation later = next; !mlirOperationIsNull(later);
         later = mlirOperationGetNextInBlock(later)) {
      PbcAccess a;
      bool placed = pbcAccessGet(later, &a) && mlirValueEqual(a.memref, c);
      if (!placed && pbcMayAccessMemref(later, c))
        break; /* an access the linear forms cannot place (a view of C, a call) */
      if (!placed || pbcAccessesDisjoint(&s, &a))
        continue;
      if (a.isWrite && pbcAccessesSame(&s, &a) && a.lanes == s.lanes)
        mlirOperationDestroy(op);
      break;
    }
  }
}

/* What fuse() works with: too large for the stack (a PbcAccess is 1.7 KB). */
typedef struct {
  Producer p;
  PbcAccess scratch[MAX_STORES]; /* E's accesses, then forwardStores' */
} Work;

/* Where in producer `m` (M itself, or its reduction's last block) E's slice
 * goes: the chain position, or -1. */
static int sliceSite(MlirOperation m, bool loadsOk, const Epilogue *ep, Work *w, Box *box) {
  if (!describeProducer(m, ep->c, loadsOk, &w->p))
    return -1;
  for (int q = 0; q < w->p.nChain; ++q)
    if (completeAt(&w->p, q) && boxAt(&w->p, q, ep->rank, box) && boxFits(box, ep))
      return q;
  return -1;
}

/* The op holding `op` (itself or an ancestor) in `block`, or null. */
static MlirOperation holderIn(MlirOperation op, MlirBlock block) {
  for (; !mlirOperationIsNull(op); op = mlirOperationGetParentOperation(op))
    if (mlirBlockEqual(mlirOperationGetBlock(op), block))
      return op;
  return op;
}

/* True if v is iv or computed from it (index arithmetic). */
static bool valueDependsOn(MlirValue v, MlirValue iv, int depth) {
  if (mlirValueEqual(v, iv))
    return true;
  if (depth == 0 || !mlirValueIsAOpResult(v))
    return depth == 0; /* too deep to tell: assume it does */
  MlirOperation def = mlirOpResultGetOwner(v);
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(def); ++i)
    if (valueDependsOn(mlirOperationGetOperand(def, i), iv, depth - 1))
      return true;
  return false;
}

/* True if the stores of C may tell L's iterations apart: a subscript reads
 * L's iv, or a loop between a store and L has bounds computed from it (a
 * tile's point loop, from its tile loop's iv). */
static bool storesIndexLoop(const PbcOpList *stores, MlirOperation l) {
  MlirValue iv = pbcLoopIv(l);
  PbcAccess a;
  for (int i = 0; i < stores->n; ++i) {
    if (!pbcOpIsInside(stores->ops[i], l))
      continue;
    if (!pbcAccessGet(stores->ops[i], &a) || pbcAccessDependsOnLoop(&a, l))
      return true;
    for (MlirOperation x = mlirOperationGetParentOperation(stores->ops[i]);
         !mlirOperationEqual(x, l); x = mlirOperationGetParentOperation(x))
      for (intptr_t k = 0; k < mlirOperationGetNumOperands(x); ++k)
        if (valueDependsOn(mlirOperationGetOperand(x, k), iv, 8))
          return true;
  }
  return false;
}

/* A GEMM whose reduction is split into KC blocks has C complete only in
 * the last block: L, the one loop of M around C's stores whose iterations
 * the stores cannot tell apart (storesIndexLoop; more than one iteration;
 * pbc-absorb-fill has peeled its first), must hold the last of them (every
 * store of C in M is in L or before it). Returns L, or null; its last
 * iteration, peeled (pbcLoopPeel), is a block E's slice can follow. */
static MlirOperation splitReductionLoop(MlirOperation m, MlirValue c) {
  PbcOpList stores = {0};
  PbcAccess a;
  for (MlirOpOperand u = mlirValueGetFirstUse(c); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    if (pbcOpIsInside(user, m) && pbcAccessGet(user, &a) && a.isWrite)
      pbcOpListPush(&stores, user);
  }
  MlirOperation l = {NULL};
  bool ok = stores.n > 0;
  for (int i = 0; i < stores.n && ok; ++i)
    for (MlirOperation op = mlirOperationGetParentOperation(stores.ops[i]);
         ok && !mlirOperationEqual(op, m); op = mlirOperationGetParentOperation(op)) {
      if (!pbcOpIsA(op, "affine.for") || pbcExtAffineConstantTripCount(op) <= 1 ||
          mlirOperationEqual(op, l) || storesIndexLoop(&stores, op))
        continue;
      ok = mlirOperationIsNull(l); /* a second reduction loop: not a KC split */
      l = op;
    }
  for (int i = 0; i < stores.n && ok && !mlirOperationIsNull(l); ++i) {
    MlirOperation h = holderIn(stores.ops[i], mlirOperationGetBlock(l));
    ok = !mlirOperationIsNull(h) && (mlirOperationEqual(h, l) || pbcOpFollowsInBlock(l, h));
  }
  pbcOpListDestroy(&stores);
  return ok ? l : (MlirOperation){NULL};
}

/* True if a use of v (a view of C's buffer, followed through further
 * views) held by an op before M may write C. */
static bool writtenThroughBefore(MlirValue v, MlirValue c, MlirOperation m, int depth) {
  MlirBlock block = mlirOperationGetBlock(m);
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    if (pbcOpIsMemrefView(user)) {
      if (depth > 8 || writtenThroughBefore(mlirOperationGetResult(user, 0), c, m, depth + 1))
        return true;
      continue;
    }
    MlirOperation holder = holderIn(user, block);
    if (mlirOperationIsNull(holder) || !pbcOpFollowsInBlock(m, holder))
      continue;
    PbcAccess a;
    if (pbcAccessGet(user, &a) ? a.isWrite && pbcMemrefsMayAlias(a.memref, c)
                               : pbcMayWriteMemref(user, c))
      return true;
  }
  return false;
}

/* True if an op before M in its block may write C: M then computes only a
 * part of C (a GEMM whose last columns pbc-tile split off into a nest of
 * their own, when E followed that one), or C holds values M accumulates
 * into (a fill pbc-absorb-fill left). E, which reads all of C, is kept.
 * (C's uses, through views of its buffer, not every op before M: a walk
 * of BERT's whole function per GEMM took a third of S3's time.) */
static bool writtenBefore(MlirOperation m, MlirValue c) {
  return writtenThroughBefore(pbcMemrefBase(c), c, m, 0);
}

static bool fuse(MlirOperation m, MlirOperation e) {
  Epilogue ep;
  Box box;
  int at = -1;
  Work *w = malloc(sizeof(*w));
  if (!describeEpilogue(e, m, &ep, w->scratch) || writtenBefore(m, ep.c)) {
    free(w);
    return false;
  }
  at = sliceSite(m, false, &ep, w, &box);
  if (at < 0) {
    /* C is re-read by a split reduction: E follows its last block. */
    MlirOperation l = splitReductionLoop(m, ep.c);
    MlirOperation last = mlirOperationIsNull(l) ? l : pbcLoopPeel(l, true);
    if (!mlirOperationIsNull(last) && (at = sliceSite(last, true, &ep, w, &box)) < 0)
      pbcLoopUnpeel(l, last, true);
  }
  if (at < 0) {
    free(w);
    return false;
  }
  MlirOperation loop = w->p.chain[at];
  for (MlirOperation op = mlirOperationGetNextInBlock(m); !mlirOperationEqual(op, e);) {
    MlirOperation next = mlirOperationGetNextInBlock(op);
    if (!pbcOpIsA(op, "memref.dealloc"))
      mlirOperationMoveBefore(op, m);
    op = next;
  }
  MlirOperation end = mlirBlockGetTerminator(pbcLoopBody(loop));
  MlirValue origin[PBC_MAX_RANK];
  for (int d = 0; d < ep.depth; ++d)
    origin[d] = applyForm(end, &box.base[d]);
  int dims[PBC_MAX_RANK];
  for (int d = 0; d < ep.depth; ++d)
    dims[d] = d;
  MlirOperation band[PBC_MAX_BAND];
  MlirOperation slice = pbcCloneNestRestricted(e, end, ep.depth, dims, box.width, origin, band);
  mlirOperationRemoveAttributeByName(slice, pbcStr(PBC_MARK_KIND));
  long long vectors = 1;
  for (int d = 0; d < ep.depth; ++d)
    vectors *= box.width[d] / pbcLoopStep(band[d]);
  mlirOperationDestroy(e);
  /* A register tile's slice (stores in P's own body) unrolls into it, and
   * its reads of C become the values the tile stored. */
  if (at == 0 && vectors <= kMaxUnrolledVectors) {
    for (int d = ep.depth - 1; d >= 0; --d)
      pbcExtAffineUnrollFull(band[d]);
    forwardStores(pbcLoopBody(loop), ep.c, w->scratch);
  }
  /* C, if it is an allocation E alone read, is now only written (a
   * MobileNet expansion's 14x14x576 C was written in full next to E's result) */
  pbcEraseIfWriteOnly(ep.c);
  free(w);
  return true;
}

/* The root nest after M, if only movable ops lie between, or frees: those
 * stay after M, which then holds E (E cannot read what is freed before it;
 * M may: a depthwise convolution's padded input). */
static MlirOperation nextNest(MlirOperation m) {
  for (MlirOperation op = mlirOperationGetNextInBlock(m); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (pbcOpIsA(op, "affine.for"))
      return op;
    if (!movableAboveM(op, m) && !pbcOpIsA(op, "memref.dealloc"))
      break;
  }
  return (MlirOperation){NULL};
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  PbcOpList roots = {0};
  pbcRootNests(func, "matmul", &roots);
  for (int i = 0; i < roots.n; ++i) {
    MlirOperation e = nextNest(roots.ops[i]);
    if (!mlirOperationIsNull(e))
      fuse(roots.ops[i], e);
  }
  pbcOpListDestroy(&roots);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcFuseEpiloguePass, "pbc-fuse-epilogue", "func.func",
                           "Elementwise consumers into tiled matmul-kind nests", run);
