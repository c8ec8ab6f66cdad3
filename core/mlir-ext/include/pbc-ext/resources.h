/*===- pbc-ext/resources.h - resource blob data, callable from C ---------===*\
|* The C API reads a dense_resource attribute only element by element, and  *|
|* crashes on one whose blob is absent (`dense_resource<__elided__>`): this *|
|* gives its raw bytes, or says there are none.                             *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_EXT_RESOURCES_H
#define PBC_EXT_RESOURCES_H

#include <stdbool.h>
#include <stddef.h>

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The row-major element bytes of a DenseResourceElementsAttr: true with
 * *data and *size set, false if `attr` is not one or its blob is absent. */
bool pbcExtResourceElementsData(MlirAttribute attr, const char **data, size_t *size);

#ifdef __cplusplus
}
#endif

#endif
