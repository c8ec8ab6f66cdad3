/*===- input/parse_guard.h - Text MLIR's parser would crash on -------------===*\
|* A lexical pass over program text before it is parsed: deep bracket       *|
|* nesting and malformed integer lists of linalg's custom syntax become      *|
|* located errors instead of parser crashes.                                 *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_PARSE_GUARD_H
#define PBC_PARSE_GUARD_H

#include <stdbool.h>

#include "mlir-c/IR.h"

/* False after emitting a located error (file `sourceName`) on ctx. */
bool pbcParseGuard(MlirContext ctx, const char *text, const char *sourceName);

#endif
