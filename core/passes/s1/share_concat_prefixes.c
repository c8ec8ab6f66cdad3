/* pbc-share-concat-prefixes: concatenations that share a prefix are built in
 * one tensor. A concatenation here is what frontends lower `cat` to: a
 * tensor.empty filled by a chain of tensor.insert_slice ops, each placing one
 * source after the previous one along a single dimension. When one
 * concatenation's sources are the first sources of a larger one (at the same
 * offsets), the larger one's chain is moved up so that each insert follows
 * its source's definition, and the smaller concatenation becomes an
 * extract_slice of that chain.
 *
 * Why: a DenseNet block concatenates every earlier layer's output before
 * each layer, so copies grow with the square of the block's depth (DenseNet-
 * 121: about 600 copy nests, two thirds of its nests, and each of them a
 * function for LLVM to compile). Built in one tensor, every feature is
 * written once, and bufferization plus eliminate-empty-tensors then let the
 * op producing it write straight into its slot.
 *
 * Value semantics make this exact whatever the bufferization later decides:
 * the extract_slice reads the same elements the smaller concatenation held. */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/c_pass.h"
#include "pbc/ir_build.h"
#include "pbc/ptr_map.h"
#include "passes/passes.h"

typedef struct Concat {
  MlirOperation empty;
  MlirOperation *inserts; /* in chain order */
  int n;
  int dim; /* the concatenated dimension */
  MlirValue result;
  bool replaced; /* by a slice of a larger one; its ops are gone */
} Concat;

enum { kMaxRank = 8 };

typedef struct Concats {
  Concat *items;
  int n, cap;
} Concats;

static MlirAttribute attr(MlirOperation op, const char *name) {
  return mlirOperationGetAttributeByName(op, pbcStr(name));
}

static MlirValue single_user_result(MlirValue v, MlirOperation *user) {
  MlirOpOperand u = mlirValueGetFirstUse(v);
  if (mlirOpOperandIsNull(u) || !mlirOpOperandIsNull(mlirOpOperandGetNextUse(u)))
    return (MlirValue){NULL};
  *user = mlirOpOperandGetOwner(u);
  if (!pbcOpIsA(*user, "tensor.insert_slice") || mlirOpOperandGetOperandNumber(u) != 1 ||
      mlirOperationGetNumOperands(*user) != 2)
    return (MlirValue){NULL};
  return mlirOperationGetResult(*user, 0);
}

/* The concatenated dimension of `insert` into `shape` (offset 0 and full size
 * in every other one, unit strides), or -1. */
static int insert_dim(MlirOperation insert, MlirType destType, int64_t expectedOffset, int dim) {
  MlirAttribute offs = attr(insert, "static_offsets"), sizes = attr(insert, "static_sizes"),
                strides = attr(insert, "static_strides");
  intptr_t rank = mlirShapedTypeGetRank(destType);
  if (mlirDenseArrayGetNumElements(offs) != rank || mlirDenseArrayGetNumElements(sizes) != rank)
    return -1;
  int found = -1;
  for (intptr_t r = 0; r < rank; ++r) {
    if (mlirDenseI64ArrayGetElement(strides, r) != 1)
      return -1;
    int64_t off = mlirDenseI64ArrayGetElement(offs, r), size = mlirDenseI64ArrayGetElement(sizes, r);
    int64_t full = mlirShapedTypeGetDimSize(destType, r);
    if (r == dim || (dim < 0 && (off != 0 || size != full))) {
      if (found >= 0)
        return -1;
      found = (int)r;
      if (off != expectedOffset)
        return -1;
    } else if (off != 0 || size != full) {
      return -1;
    }
  }
  return found;
}

/* The concatenation whose chain starts at `empty`, if it is one: at least two
 * inserts, consecutive along one dimension, covering the tensor. */
static bool match(MlirOperation empty, Concat *c) {
  MlirValue v = mlirOperationGetResult(empty, 0);
  MlirType type = mlirValueGetType(v);
  if (!mlirTypeIsARankedTensor(type) || !mlirShapedTypeHasStaticShape(type) ||
      mlirOperationGetNumOperands(empty) != 0)
    return false;
  memset(c, 0, sizeof(*c));
  c->empty = empty;
  c->dim = -1;
  int64_t covered = 0;
  int cap = 0;
  for (;;) {
    MlirOperation user;
    MlirValue next = single_user_result(v, &user);
    if (mlirValueIsNull(next))
      break;
    int d = insert_dim(user, type, covered, c->dim);
    if (d < 0)
      break;
    c->dim = d;
    covered += mlirDenseI64ArrayGetElement(attr(user, "static_sizes"), d);
    if (c->n == cap) {
      cap = cap ? 2 * cap : 8;
      c->inserts = realloc(c->inserts, (size_t)cap * sizeof(MlirOperation));
    }
    c->inserts[c->n++] = user;
    v = next;
    if (c->dim >= 0 && covered == mlirShapedTypeGetDimSize(type, c->dim))
      break;
  }
  if (c->n < 2 || covered != mlirShapedTypeGetDimSize(type, c->dim)) {
    free(c->inserts);
    return false;
  }
  c->result = v;
  return true;
}

static MlirValue source(const Concat *c, int i) { return mlirOperationGetOperand(c->inserts[i], 0); }

/* Whether `small`'s sources are `big`'s first ones, at the same places. */
static bool is_prefix(const Concat *small, const Concat *big) {
  if (small->n >= big->n || small->dim != big->dim)
    return false;
  MlirType st = mlirValueGetType(small->result), bt = mlirValueGetType(big->result);
  if (!mlirTypeEqual(mlirShapedTypeGetElementType(st), mlirShapedTypeGetElementType(bt)) ||
      mlirShapedTypeGetRank(st) != mlirShapedTypeGetRank(bt))
    return false;
  for (intptr_t r = 0; r < mlirShapedTypeGetRank(st); ++r)
    if (r != small->dim && mlirShapedTypeGetDimSize(st, r) != mlirShapedTypeGetDimSize(bt, r))
      return false;
  for (int i = 0; i < small->n; ++i)
    if (!mlirValueEqual(source(small, i), source(big, i)) ||
        !mlirAttributeEqual(attr(small->inserts[i], "static_offsets"), attr(big->inserts[i], "static_offsets")) ||
        !mlirAttributeEqual(attr(small->inserts[i], "static_sizes"), attr(big->inserts[i], "static_sizes")))
      return false;
  return true;
}

/* Position of the op defining `v` in the block (-1: a block argument or
 * defined elsewhere, which precedes everything here). */
static int def_position(const PbcPtrMap *pos, MlirValue v) {
  if (!mlirValueIsAOpResult(v))
    return -1;
  return pbcPtrMapGet(pos, mlirOpResultGetOwner(v).ptr);
}

/* Moves `big`'s chain up: each insert right after its source (or the
 * previous insert, whichever is later), the empty right before the first. */
static void hoist_chain(MlirBlock block, PbcPtrMap *pos, Concat *big) {
  MlirOperation cursor = {NULL};
  int cursorPos = -1;
  for (int i = 0; i < big->n; ++i) {
    MlirValue s = source(big, i);
    int p = def_position(pos, s);
    if (p > cursorPos) {
      cursor = mlirOpResultGetOwner(s);
      cursorPos = p;
    }
    if (mlirOperationIsNull(cursor))
      mlirOperationMoveBefore(big->inserts[i], mlirBlockGetFirstOperation(block));
    else
      mlirOperationMoveAfter(big->inserts[i], cursor);
    cursor = big->inserts[i];
    pbcPtrMapPut(pos, cursor.ptr, cursorPos);
    if (i == 0)
      mlirOperationMoveBefore(big->empty, cursor);
  }
}

/* `small` becomes the leading slice of `big`'s chain after its n-th insert. */
static void replace_by_slice(PbcPtrMap *pos, Concat *small, const Concat *big) {
  MlirOperation anchor = big->inserts[small->n - 1];
  MlirContext ctx = mlirOperationGetContext(anchor);
  MlirType type = mlirValueGetType(small->result);
  intptr_t rank = mlirShapedTypeGetRank(type);
  int64_t zeros[kMaxRank], ones[kMaxRank], sizes[kMaxRank];
  for (intptr_t r = 0; r < rank; ++r) {
    zeros[r] = 0;
    ones[r] = 1;
    sizes[r] = mlirShapedTypeGetDimSize(type, r);
  }
  int32_t segments[4] = {1, 0, 0, 0};
  MlirNamedAttribute attrs[4] = {
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, pbcStr("static_offsets")), mlirDenseI64ArrayGet(ctx, rank, zeros)),
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, pbcStr("static_sizes")), mlirDenseI64ArrayGet(ctx, rank, sizes)),
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, pbcStr("static_strides")), mlirDenseI64ArrayGet(ctx, rank, ones)),
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, pbcStr("operandSegmentSizes")),
                            mlirDenseI32ArrayGet(ctx, 4, segments)),
  };
  MlirValue whole = mlirOperationGetResult(anchor, 0);
  MlirOperation next = mlirOperationGetNextInBlock(anchor);
  MlirOperation slice = pbcBuildOp(next, "tensor.extract_slice", 1, &whole, type, 4, attrs);
  pbcPtrMapPut(pos, slice.ptr, pbcPtrMapGet(pos, anchor.ptr));
  mlirValueReplaceAllUsesOfWith(small->result, mlirOperationGetResult(slice, 0));
  for (int i = small->n - 1; i >= 0; --i)
    mlirOperationDestroy(small->inserts[i]);
  mlirOperationDestroy(small->empty);
  small->replaced = true;
}

static int moreSources(const void *a, const void *b) {
  return ((const Concat *)b)->n - ((const Concat *)a)->n;
}

static bool run(MlirOperation func, void *state) {
  (void)state;
  MlirRegion body = mlirOperationGetRegion(func, 0);
  MlirBlock block = mlirRegionGetFirstBlock(body);
  if (mlirBlockIsNull(block))
    return true;
  int nOps = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(block); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    ++nOps;
  PbcPtrMap pos;
  pbcPtrMapInit(&pos, 2 * (size_t)nOps + 1); /* ops, then the slices built */
  Concats cs = {0};
  int i = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(block); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op), ++i) {
    pbcPtrMapPut(&pos, op.ptr, i);
    if (!pbcOpIsA(op, "tensor.empty") ||
        mlirShapedTypeGetRank(mlirValueGetType(mlirOperationGetResult(op, 0))) > kMaxRank)
      continue;
    if (cs.n == cs.cap) {
      cs.cap = cs.cap ? 2 * cs.cap : 32;
      cs.items = realloc(cs.items, (size_t)cs.cap * sizeof(Concat));
    }
    if (match(op, &cs.items[cs.n]))
      ++cs.n;
  }
  /* Largest first: each concatenation not yet replaced collects the smaller
   * ones that are its prefixes (equal sizes are never prefixes). */
  qsort(cs.items, (size_t)cs.n, sizeof(Concat), moreSources);
  for (int a = 0; a < cs.n; ++a) {
    Concat *big = &cs.items[a];
    if (big->replaced)
      continue;
    bool hoisted = false;
    for (int b = a + 1; b < cs.n; ++b) {
      Concat *small = &cs.items[b];
      if (small->replaced || !is_prefix(small, big))
        continue;
      if (!hoisted)
        hoist_chain(block, &pos, big);
      hoisted = true;
      replace_by_slice(&pos, small, big);
    }
  }
  for (int a = 0; a < cs.n; ++a)
    free(cs.items[a].inserts);
  free(cs.items);
  pbcPtrMapDestroy(&pos);
  return true;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcShareConcatPrefixesPass, "pbc-share-concat-prefixes", "func.func",
                           "Concatenations sharing leading sources are built in one tensor", run);
