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

/* Diagnostics kept instead of printed, while an attempt that may be
 * given up runs (pbc's route for dynamic sizes tries the batch loop, then
 * symbolic sizes): replayed if no attempt succeeds, dropped if one does. */
typedef struct PbcDiagCapture {
  FILE *stream;
  char *text;
  size_t len;
  int errors;
} PbcDiagCapture;

/* Sends diagnostics to c (zero-initialized; NULL: printed again); returns
 * the capture that was set. Not thread-safe: for the input's preparation. */
PbcDiagCapture *pbcDiagCaptureInto(PbcDiagCapture *c);
/* What c kept, as it would have been printed. */
const char *pbcDiagCaptureText(PbcDiagCapture *c);
/* Prints what c kept (its errors counted) and empties it. */
void pbcDiagCaptureReplay(PbcDiagCapture *c);
void pbcDiagCaptureDestroy(PbcDiagCapture *c);

#endif
