/* pbc-fuse: producer-consumer fusion of root nests (PolyBlocks §4.2), the
 * redundancy-free case: the producer P and the consumer C have the same
 * loop band (trip counts), and every element C touches of what P writes is
 * the one P writes in the same iteration (identical subscripts, ivs paired
 * level by level). Then each iteration of C can run P's iteration first:
 * P's body moves to the start of C's innermost body, no computation is
 * repeated, and loads of the produced values are replaced by the values
 * themselves, so the intermediate buffer, if it was local and is now only
 * written, disappears. Chains fuse left to right (a chain of pointwise ops
 * becomes one nest).
 * P must also write each element in one iteration only (its band loops all
 * parallel): a reduction's result is final only after its row, so no
 * consumer may read it inside the row (softmax's max, logsumexp's sum). A
 * broadcast consumer, such as a bias after pbc-pad-gemm's copy-back, fuses
 * like any other. Cost-model pruning by nest kind: no matmul-kind producer
 * or consumer (they are tiled by themselves; fusing into them breaks their
 * band). Deallocations between the nests move after the consumer.
 * Stencil consumers (neighbouring elements, the paper's Fig. 6 blur) need a
 * slice with a private buffer: pbc-fuse-slices. Epilogues of matmul-kind
 * nests join them per tile after tiling: pbc-fuse-epilogue. */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/op_list.h"
#include "passes/passes.h"

#define MAX_ACC 256

typedef struct {
  MlirOperation band[PBC_MAX_BAND];
  int depth;
  PbcAccess acc[MAX_ACC];
  int nAcc;
  bool ok;
} NestInfo;

/* A perfectly nested band of unit-step, constant-trip loops whose innermost
 * body has no loops or regions. */
static bool describe(MlirOperation root, NestInfo *n) {
  n->depth = pbcLoopBand(root, n->band, PBC_MAX_BAND);
  n->nAcc = 0;
  for (int l = 0; l < n->depth; ++l)
    if (pbcLoopStep(n->band[l]) != 1 || pbcExtAffineConstantTripCount(n->band[l]) < 0)
      return false;
  MlirOperation inner = n->band[n->depth - 1];
  if (!pbcLoopBodyIsFlat(inner) || !pbcGatherAccesses(inner, n->acc, MAX_ACC, &n->nAcc))
    return false;
  for (int i = 0; i < n->nAcc; ++i)
    if (n->acc[i].lanes) /* scalar nests only (fusion runs before vectorization) */
      return false;
  return true;
}

/* Same element in the same iteration: subscripts equal once P's ivs are
 * read as C's, level by level. */
static bool sameElement(const PbcAccess *p, const NestInfo *np, const PbcAccess *c,
                        const NestInfo *nc) {
  if (!mlirValueEqual(p->memref, c->memref) || p->rank != c->rank)
    return false;
  for (int d = 0; d < p->rank; ++d) {
    PbcLinearForm f = p->subscripts[d];
    for (int t = 0; t < f.nTerms; ++t)
      for (int l = 0; l < np->depth; ++l)
        if (mlirValueEqual(f.values[t], pbcLoopIv(np->band[l])))
          f.values[t] = pbcLoopIv(nc->band[l]);
    PbcAccess a = *p, b = *c;
    a.rank = b.rank = 1;
    a.subscripts[0] = f;
    b.subscripts[0] = c->subscripts[d];
    if (!pbcAccessesSame(&a, &b))
      return false;
  }
  return true;
}

static bool canFuse(MlirOperation P, MlirOperation C, NestInfo *np, NestInfo *nc) {
  if (pbcNestKindIs(P, "matmul") || pbcNestKindIs(C, "matmul"))
    return false;
  if (!describe(P, np) || !describe(C, nc) || np->depth != nc->depth)
    return false;
  /* P must write each element in one iteration only (every loop of its band
   * parallel): a reduction's result is final only after its row, and a
   * consumer fused into it would read partial values. */
  for (int l = 0; l < np->depth; ++l)
    if (!pbcLoopIsParallel(np->band[l]))
      return false;
  for (int l = 0; l < np->depth; ++l)
    if (pbcExtAffineConstantTripCount(np->band[l]) != pbcExtAffineConstantTripCount(nc->band[l]))
      return false;
  /* Every memref both nests touch, with a write on either side, must be
   * touched at the same element in the same iteration. */
  bool producesForC = false;
  for (int i = 0; i < np->nAcc; ++i)
    for (int j = 0; j < nc->nAcc; ++j) {
      const PbcAccess *p = &np->acc[i], *c = &nc->acc[j];
      if (!p->isWrite && !c->isWrite)
        continue;
      bool same = mlirValueEqual(p->memref, c->memref);
      if (!same && pbcMemrefsMayAlias(p->memref, c->memref))
        return false; /* e.g. a view of the produced buffer */
      if (!same)
        continue;
      if (!sameElement(p, np, c, nc))
        return false;
      producesForC |= p->isWrite && !c->isWrite;
    }
  return producesForC;
}

/* The value P stores into an element C loads (same iteration), if any. */
static MlirValue storedValue(const NestInfo *np, const NestInfo *nc, const PbcAccess *load) {
  MlirValue v = {NULL};
  for (int i = 0; i < np->nAcc; ++i)
    if (np->acc[i].isWrite && sameElement(&np->acc[i], np, load, nc))
      v = mlirOperationGetOperand(np->acc[i].op, 0); /* the last store wins */
  return v;
}

static void fuse(MlirOperation P, MlirOperation C, NestInfo *np, NestInfo *nc) {
  MlirBlock from = pbcLoopBody(np->band[np->depth - 1]);
  MlirBlock to = pbcLoopBody(nc->band[nc->depth - 1]);
  /* Forward produced values into C's loads before moving anything. */
  for (int j = 0; j < nc->nAcc; ++j) {
    if (nc->acc[j].isWrite)
      continue;
    MlirValue v = storedValue(np, nc, &nc->acc[j]);
    if (mlirValueIsNull(v))
      continue;
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(nc->acc[j].op, 0), v);
    mlirOperationDestroy(nc->acc[j].op);
  }
  /* P's stores that C overwrites (same element, same iteration; C's loads
   * of it were just forwarded) are dead. */
  for (int i = 0; i < np->nAcc; ++i) {
    if (!np->acc[i].isWrite)
      continue;
    for (int j = 0; j < nc->nAcc; ++j)
      if (nc->acc[j].isWrite && sameElement(&np->acc[i], np, &nc->acc[j], nc)) {
        mlirOperationDestroy(np->acc[i].op);
        break;
      }
  }
  pbcMoveBodyBefore(from, mlirBlockGetFirstOperation(to));
  for (int l = 0; l < np->depth; ++l)
    mlirValueReplaceAllUsesOfWith(pbcLoopIv(np->band[l]), pbcLoopIv(nc->band[l]));
  mlirOperationDestroy(P);
}

/* A local buffer that is only written (and freed) after fusion is dead. */
static void eraseWriteOnlyBuffers(MlirOperation func) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  PbcOpList allocs = {0}; /* first: erasing one erases its frees, maybe the next op */
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (pbcOpIsA(op, "memref.alloc"))
      pbcOpListPush(&allocs, op);
  for (int i = 0; i < allocs.n; ++i)
    pbcEraseIfWriteOnly(mlirOperationGetResult(allocs.ops[i], 0));
  pbcOpListDestroy(&allocs);
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockIsNull(body))
    return true;
  NestInfo *np = calloc(1, sizeof(NestInfo)), *nc = calloc(1, sizeof(NestInfo));
  MlirOperation P = {NULL};
  bool fused = false;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);) {
    MlirOperation next = mlirOperationGetNextInBlock(op);
    if (pbcOpIsA(op, "affine.for")) {
      if (!mlirOperationIsNull(P) && canFuse(P, op, np, nc)) {
        /* P's body now runs in C: deallocations between them (as of
         * pbc-pad-gemm's padded copies, which P may read) move after C. */
        pbcMoveDeallocsAfter(P, op);
        fuse(P, op, np, nc);
        fused = true;
      }
      P = op;
    } else if (!pbcOpIsConstantOrAlloc(op) && !pbcOpIsA(op, "memref.dealloc") &&
               !pbcOpIsMemrefView(op)) {
      /* only fuse nests adjacent but for allocs, frees and views (a padded
       * buffer's interior, which C fills) */
      P = (MlirOperation){NULL};
    }
    op = next;
  }
  if (fused)
    eraseWriteOnlyBuffers(func);
  free(np);
  free(nc);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcFusePass, "pbc-fuse", "func.func",
                           "Producer-consumer fusion of same-shape nests", run);
