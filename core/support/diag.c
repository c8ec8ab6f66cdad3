/* Prints MLIR diagnostics as `file:line:col: error: message`. */
#include "pbc/diag.h"

#include <stdatomic.h>
#include <string.h>

#include "mlir-c/Diagnostics.h"
#include "pbc/strbuf.h"

static atomic_int errorCount;

int pbcDiagErrorCount(void) { return atomic_load(&errorCount); }

void pbcDiagPrintLocation(MlirLocation loc, FILE *out) {
  if (mlirLocationIsAFileLineColRange(loc)) {
    MlirIdentifier file = mlirLocationFileLineColRangeGetFilename(loc);
    MlirStringRef f = mlirIdentifierStr(file);
    fprintf(out, "%.*s:%d:%d", (int)f.length, f.data,
            mlirLocationFileLineColRangeGetStartLine(loc),
            mlirLocationFileLineColRangeGetStartColumn(loc));
    return;
  }
  if (mlirLocationIsAName(loc)) {
    pbcDiagPrintLocation(mlirLocationNameGetChildLoc(loc), out);
    return;
  }
  if (mlirLocationIsACallSite(loc)) {
    pbcDiagPrintLocation(mlirLocationCallSiteGetCallee(loc), out);
    return;
  }
  if (mlirLocationIsAFused(loc)) {
    /* The first file location is the most useful one to point at. */
    intptr_t n = mlirLocationFusedGetNumLocations(loc);
    if (n > 0) {
      MlirLocation locs[n];
      mlirLocationFusedGetLocations(loc, locs);
      pbcDiagPrintLocation(locs[0], out);
      return;
    }
  }
  PbcStrBuf b = {0};
  mlirLocationPrint(loc, pbcStrBufCallback, &b);
  fprintf(out, "%s", pbcStrBufGet(&b));
  pbcStrBufDestroy(&b);
}

/* MLIR attaches the whole failing op in generic form to every error; users
 * already get its location (and --print-ir-after-all shows the IR). */
static bool isOpDumpNote(MlirDiagnostic note) {
  PbcStrBuf msg = {0};
  mlirDiagnosticPrint(note, pbcStrBufCallback, &msg);
  bool dump = strncmp(pbcStrBufGet(&msg), "see current operation", 21) == 0;
  pbcStrBufDestroy(&msg);
  return dump;
}

static void printDiagnostic(MlirDiagnostic d, int depth) {
  static const char *const kinds[] = {"error", "warning", "note", "remark"};
  MlirDiagnosticSeverity sev = mlirDiagnosticGetSeverity(d);
  fprintf(stderr, "%*s", depth * 2, "");
  pbcDiagPrintLocation(mlirDiagnosticGetLocation(d), stderr);
  PbcStrBuf msg = {0};
  mlirDiagnosticPrint(d, pbcStrBufCallback, &msg);
  /* A message quoting its input (an op name made of 50 MB of garbage) is
   * cut: the location already says where. */
  enum { kMaxMessage = 2000 };
  if (msg.len > kMaxMessage)
    fprintf(stderr, ": %s: %.*s... (%zu more characters)\n", kinds[sev], kMaxMessage,
            msg.data, msg.len - kMaxMessage);
  else
    fprintf(stderr, ": %s: %s\n", kinds[sev], pbcStrBufGet(&msg));
  pbcStrBufDestroy(&msg);
  intptr_t n = mlirDiagnosticGetNumNotes(d);
  for (intptr_t i = 0; i < n; ++i)
    if (!isOpDumpNote(mlirDiagnosticGetNote(d, i)))
      printDiagnostic(mlirDiagnosticGetNote(d, i), depth + 1);
}

static MlirLogicalResult handler(MlirDiagnostic d, void *userData) {
  (void)userData;
  if (mlirDiagnosticGetSeverity(d) == MlirDiagnosticError)
    atomic_fetch_add(&errorCount, 1);
  printDiagnostic(d, 0);
  fflush(stderr);
  return mlirLogicalResultSuccess();
}

void pbcDiagInstall(MlirContext ctx) {
  mlirContextAttachDiagnosticHandler(ctx, handler, NULL, NULL);
}
