/* Memref queries: layouts, sizes and element widths, the buffer a view
 * shows, which memrefs may alias, and whether ops may read or write one (see pbc/memrefs.h). */
#include "pbc/memrefs.h"

#include <string.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/marks.h"

bool pbcMemrefIsRoot(MlirValue memref) {
  if (mlirValueIsABlockArgument(memref)) {
    MlirOperation owner = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(memref));
    return pbcOpIsA(owner, "func.func");
  }
  MlirOperation def = mlirOpResultGetOwner(memref);
  return pbcOpIsA(def, "memref.alloc") || pbcOpIsA(def, "memref.alloca");
}

bool pbcMemrefIsInvariantArg(MlirValue v) {
  if (!mlirValueIsABlockArgument(v))
    return false;
  MlirBlock block = mlirBlockArgumentGetOwner(v);
  MlirOperation func = mlirBlockGetParentOperation(block);
  if (!pbcOpIsA(func, "func.func") ||
      !mlirBlockEqual(block, mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0))))
    return false;
  MlirAttribute all = mlirOperationGetAttributeByName(func, pbcStr("arg_attrs"));
  intptr_t pos = mlirBlockArgumentGetArgNumber(v);
  if (mlirAttributeIsNull(all) || !mlirAttributeIsAArray(all) || pos >= mlirArrayAttrGetNumElements(all))
    return false;
  MlirAttribute dict = mlirArrayAttrGetElement(all, pos);
  return mlirAttributeIsADictionary(dict) &&
         !mlirAttributeIsNull(mlirDictionaryAttrGetElementByName(dict, pbcStr("pbc.invariant")));
}

bool pbcMemrefHasIdentityLayout(MlirType type) {
  return mlirTypeIsAMemRef(type) && mlirAffineMapIsIdentity(mlirMemRefTypeGetAffineMap(type));
}

long long pbcMemrefBytes(MlirType t) { return pbcMemrefElements(t) * (pbcElementBits(t) / 8); }

bool pbcMemrefLastDimContiguous(MlirType memrefType) {
  MlirAttribute layout = mlirMemRefTypeGetLayout(memrefType);
  if (mlirAttributeIsAStridedLayout(layout)) {
    intptr_t n = mlirStridedLayoutAttrGetNumStrides(layout);
    return n > 0 && mlirStridedLayoutAttrGetStride(layout, n - 1) == 1;
  }
  return mlirAffineMapIsIdentity(mlirMemRefTypeGetAffineMap(memrefType));
}

int pbcElementBits(MlirType t) {
  if (mlirTypeIsAShaped(t))
    t = mlirShapedTypeGetElementType(t);
  if (mlirTypeIsAFloat(t))
    return (int)mlirFloatTypeGetWidth(t);
  if (mlirTypeIsAInteger(t))
    return (int)mlirIntegerTypeGetWidth(t);
  return 0;
}

bool pbcOpIsMemrefView(MlirOperation op) {
  /* Called for every access by the alias queries: one look at the name. */
  static const char *const views[] = {"subview",        "reinterpret_cast", "cast",
                                      "collapse_shape", "expand_shape",     "transpose",
                                      "view",           "reshape",          NULL};
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  if (s.length < 8 || strncmp(s.data, "memref.", 7) != 0)
    return false;
  for (int i = 0; views[i]; ++i)
    if (s.length - 7 == strlen(views[i]) && !strncmp(s.data + 7, views[i], s.length - 7))
      return true;
  return false;
}

MlirValue pbcMemrefBase(MlirValue memref) {
  while (mlirValueIsAOpResult(memref)) {
    MlirOperation def = mlirOpResultGetOwner(memref);
    if (!pbcOpIsMemrefView(def) || mlirOperationGetNumOperands(def) == 0)
      break;
    memref = mlirOperationGetOperand(def, 0);
  }
  return memref;
}

/* The symbol a memref.get_global reads, or an empty name. */
static MlirStringRef globalName(MlirValue memref) {
  if (mlirValueIsAOpResult(memref) && pbcOpIsA(mlirOpResultGetOwner(memref), "memref.get_global")) {
    MlirAttribute name = mlirOperationGetAttributeByName(mlirOpResultGetOwner(memref), pbcStr("name"));
    if (mlirAttributeIsAFlatSymbolRef(name))
      return mlirFlatSymbolRefAttrGetValue(name);
  }
  return (MlirStringRef){NULL, 0};
}

bool pbcMemrefIsGlobal(MlirValue memref) { return globalName(memref).data != NULL; }

bool pbcMemrefsMayAlias(MlirValue a, MlirValue b) {
  if (mlirValueEqual(a, b))
    return true;
  MlirValue ba = pbcMemrefBase(a), bb = pbcMemrefBase(b);
  if (mlirValueEqual(ba, bb))
    return true;
  /* Module globals (pbc's are private constants, never passed in): one
   * global aliases only itself, and no argument or allocation. */
  MlirStringRef ga = globalName(ba), gb = globalName(bb);
  if (ga.data && gb.data)
    return ga.length == gb.length && !strncmp(ga.data, gb.data, ga.length);
  if ((ga.data && pbcMemrefIsRoot(bb)) || (gb.data && pbcMemrefIsRoot(ba)))
    return false;
  return !pbcMemrefIsRoot(ba) || !pbcMemrefIsRoot(bb);
}

typedef struct {
  MlirValue memref;
  bool writes;
} WriteQuery;

static MlirWalkResult findWrite(MlirOperation op, void *data) {
  WriteQuery *q = data;
  PbcAccess a;
  if (pbcAccessGet(op, &a)) {
    q->writes |= a.isWrite && pbcMemrefsMayAlias(a.memref, q->memref);
  } else if (pbcOpIsA(op, "func.call") || pbcOpIsA(op, "func.call_indirect")) {
    q->writes = true;
  } else if (!pbcOpIsMemrefView(op) && !pbcOpIsA(op, "memref.dealloc") &&
             !pbcOpIsA(op, "affine.prefetch") && !pbcOpIsA(op, "memref.load") &&
             !pbcOpIsA(op, "vector.load")) {
    q->writes |= pbcOpUsesMemref(op, q->memref);
  }
  return q->writes ? MlirWalkResultInterrupt : MlirWalkResultAdvance;
}

bool pbcOpUsesMemref(MlirOperation op, MlirValue memref) {
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    MlirValue v = mlirOperationGetOperand(op, i);
    if (mlirTypeIsAMemRef(mlirValueGetType(v)) && pbcMemrefsMayAlias(v, memref))
      return true;
  }
  return false;
}

static MlirWalkResult findAccess(MlirOperation op, void *data) {
  WriteQuery *q = data;
  q->writes = pbcOpUsesMemref(op, q->memref) || pbcOpIsA(op, "func.call") ||
              pbcOpIsA(op, "func.call_indirect");
  return q->writes ? MlirWalkResultInterrupt : MlirWalkResultAdvance;
}

bool pbcMayAccessMemref(MlirOperation op, MlirValue memref) {
  WriteQuery q = {memref, false};
  mlirOperationWalk(op, findAccess, &q, MlirWalkPreOrder);
  return q.writes;
}

bool pbcMayWriteMemref(MlirOperation op, MlirValue memref) {
  WriteQuery q = {memref, false};
  mlirOperationWalk(op, findWrite, &q, MlirWalkPreOrder);
  return q.writes;
}
