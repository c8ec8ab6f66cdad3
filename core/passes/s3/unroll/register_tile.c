/* pbc-register-tile: the register level of the tiling pbc-tile decided
 * (PolyBlocks §4.3; BLIS's micro-kernel). Loops marked pbc.register_tile =
 * size (I and J, adjacent) are tiled by those sizes, the tile loops ordered
 * J-outer (the NR-wide panel of J's operand stays in L1 while I moves), and
 * the point loops marked for the passes after: pbc.vectorize (J's point loop;
 * pbc-vectorize), pbc.unroll_jam (both; pbc-unroll-jam jams them into the
 * reduction loop, one register accumulator per vector of the tile). It runs
 * after pbc-pack, whose copied regions are exact only on unit-step loops. */
#include <stdlib.h>

#include "mlir-c/BuiltinAttributes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/marks.h"
#include "pbc/op_list.h"
#include "passes/passes.h"


static long long tileSize(MlirOperation op) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, pbcStr(PBC_MARK_REGISTER_TILE));
  return mlirAttributeIsNull(a) ? 0 : mlirIntegerAttrGetValueInt(a);
}

static MlirWalkResult collect(MlirOperation op, void *data) {
  if (pbcOpIsA(op, "affine.for") && tileSize(op) > 0)
    pbcOpListPush(data, op);
  return MlirWalkResultAdvance;
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  PbcOpList marked = {0}, *m = &marked;
  mlirOperationWalk(func, collect, m, MlirWalkPreOrder);
  for (int i = 0; i < m->n; ++i) {
    MlirOperation outer = m->ops[i];
    if (mlirOperationIsNull(outer))
      continue; /* tiled (and replaced) as the inner loop of a pair */
    MlirOperation inner = pbcOnlyLoopIn(outer);
    bool pair = !mlirOperationIsNull(inner) && tileSize(inner) > 0;
    for (int j = i + 1; pair && j < m->n; ++j)
      if (mlirOperationEqual(m->ops[j], inner))
        m->ops[j] = (MlirOperation){NULL};
    MlirOperation band[2] = {outer, inner};
    unsigned sizes[2] = {(unsigned)tileSize(outer), pair ? (unsigned)tileSize(inner) : 0};
    int cnt = pair ? 2 : 1;
    bool vec[2] = {pbcOpHasAttr(outer, PBC_MARK_VECTORIZE), pair && pbcOpHasAttr(inner, PBC_MARK_VECTORIZE)};
    mlirOperationRemoveAttributeByName(outer, pbcStr(PBC_MARK_REGISTER_TILE));
    /* A root tiled here (a skinny GEMM's I or J) is replaced: re-tag it. */
    MlirAttribute kind = mlirOperationGetAttributeByName(outer, pbcStr(PBC_MARK_KIND));
    if (pair)
      mlirOperationRemoveAttributeByName(inner, pbcStr(PBC_MARK_REGISTER_TILE));
    MlirOperation t[4];
    if (!pbcExtAffineTile(band, cnt, sizes, t))
      continue;
    for (int l = 0; l < cnt; ++l)
      pbcOpSetUnitAttr(t[l], PBC_MARK_PARALLEL); /* I and J are parallel (pbc-tile checked) */
    if (pair) {
      /* Two adjacent parallel loops swap legally: no dependence is carried
       * by either, so none has a nonzero component in them. */
      unsigned perm[2] = {1, 0};
      pbcExtAffinePermuteLegal(t, 2, perm);
    }
    if (!mlirAttributeIsNull(kind))
      mlirOperationSetAttributeByName(pbcRootOf(t[0]), pbcStr(PBC_MARK_KIND), kind);
    /* Tiling made new loops: t[cnt..2cnt) are the point loops. */
    for (int l = 0; l < cnt; ++l) {
      pbcOpSetUnitAttr(t[cnt + l], PBC_MARK_UNROLL_JAM);
      if (vec[l])
        pbcOpSetUnitAttr(t[cnt + l], PBC_MARK_VECTORIZE);
    }
  }
  pbcOpListDestroy(m);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcRegisterTilePass, "pbc-register-tile", "func.func",
                           "Split the register tiles pbc-tile chose", run);
