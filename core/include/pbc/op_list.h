/*===- pbc/op_list.h - Growable lists of operations ----------------------===*\
|* What passes collect before they rewrite (nests, loops, copies): no fixed *|
|* capacity, so a model with more of them than a pass expected is still    *|
|* handled whole instead of silently in part.                              *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_OP_LIST_H
#define PBC_OP_LIST_H

#include "mlir-c/IR.h"

typedef struct PbcOpList {
  MlirOperation *ops;
  int n, cap;
} PbcOpList;

/* Appends op (the list starts zero-initialized). */
void pbcOpListPush(PbcOpList *l, MlirOperation op);
/* Appends every op named `name` under root (root included), in pre-order:
 * what a pass rewrites, collected before the rewriting starts. */
void pbcOpListCollect(PbcOpList *l, MlirOperation root, const char *name);
void pbcOpListDestroy(PbcOpList *l);
/* Collects every op named `name` under root, then calls rewrite on each in
 * turn (it may replace or erase the op it is given). */
void pbcOpListRewriteEach(MlirOperation root, const char *name, void (*rewrite)(MlirOperation));

#endif
