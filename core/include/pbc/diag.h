/*===- pbc/diag.h - Diagnostics as users read them -----------------------===*\
|* MLIR reports errors through the context's diagnostic handler. pbc prints   *|
|* them as `file:line:col: error: message` (the form editors understand),     *|
|* with notes indented below.                                                 *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_DIAG_H
#define PBC_DIAG_H

#include <stdbool.h>
#include <stdio.h>

#include "mlir-c/IR.h"

/* Installs pbc's printer on ctx; returns the handler id. Counts errors. */
void pbcDiagInstall(MlirContext ctx);
/* Errors reported through MLIR diagnostics since install. */
int pbcDiagErrorCount(void);
/* Prints a location as file:line:col (or MLIR's form for other kinds). */
void pbcDiagPrintLocation(MlirLocation loc, FILE *out);

#endif
