/* Growable lists of operations: see pbc/op_list.h. */
#include "pbc/op_list.h"

#include <stdio.h>
#include <stdlib.h>

#include "pbc/c_pass.h"

void pbcOpListPush(PbcOpList *l, MlirOperation op) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 64;
    MlirOperation *ops = realloc(l->ops, (size_t)cap * sizeof(MlirOperation));
    if (!ops) {
      fprintf(stderr, "pbc: internal error: out of memory\n");
      abort();
    }
    l->ops = ops;
    l->cap = cap;
  }
  l->ops[l->n++] = op;
}

typedef struct {
  PbcOpList *list;
  const char *name;
} Collect;

static MlirWalkResult collectNamed(MlirOperation op, void *data) {
  const Collect *c = data;
  if (pbcOpIsA(op, c->name))
    pbcOpListPush(c->list, op);
  return MlirWalkResultAdvance;
}

void pbcOpListCollect(PbcOpList *l, MlirOperation root, const char *name) {
  Collect c = {l, name};
  mlirOperationWalk(root, collectNamed, &c, MlirWalkPreOrder);
}

void pbcOpListDestroy(PbcOpList *l) {
  free(l->ops);
  l->ops = NULL;
  l->n = l->cap = 0;
}

void pbcOpListRewriteEach(MlirOperation root, const char *name, void (*rewrite)(MlirOperation)) {
  PbcOpList l = {0};
  pbcOpListCollect(&l, root, name);
  for (int i = 0; i < l.n; ++i)
    rewrite(l.ops[i]);
  pbcOpListDestroy(&l);
}
