// Thin C wrapper of DenseResourceElementsAttr's blob (see pbc-ext/resources.h).
#include "pbc-ext/resources.h"

#include "mlir/CAPI/IR.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;

bool pbcExtResourceElementsData(MlirAttribute attr, const char **data, size_t *size) {
  auto resource = llvm::dyn_cast<DenseResourceElementsAttr>(unwrap(attr));
  if (!resource)
    return false;
  AsmResourceBlob *blob = resource.getRawHandle().getBlob();
  if (!blob)
    return false;
  ArrayRef<char> bytes = blob->getData();
  *data = bytes.data();
  *size = bytes.size();
  return true;
}
