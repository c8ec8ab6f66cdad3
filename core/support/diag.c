/* Prints MLIR diagnostics as `file:line:col: error: message`. */
#include "pbc/diag.h"

#include <stdatomic.h>
#include <stdlib.h>
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

static void printDiagnostic(MlirDiagnostic d, int depth, FILE *out) {
  static const char *const kinds[] = {"error", "warning", "note", "remark"};
  MlirDiagnosticSeverity sev = mlirDiagnosticGetSeverity(d);
  fprintf(out, "%*s", depth * 2, "");
  pbcDiagPrintLocation(mlirDiagnosticGetLocation(d), out);
  PbcStrBuf msg = {0};
  mlirDiagnosticPrint(d, pbcStrBufCallback, &msg);
  /* A message quoting its input (an op name made of 50 MB of garbage) is
   * cut: the location already says where. */
  enum { kMaxMessage = 2000 };
  if (msg.len > kMaxMessage)
    fprintf(out, ": %s: %.*s... (%zu more characters)\n", kinds[sev], kMaxMessage,
            msg.data, msg.len - kMaxMessage);
  else
    fprintf(out, ": %s: %s\n", kinds[sev], pbcStrBufGet(&msg));
  pbcStrBufDestroy(&msg);
  intptr_t n = mlirDiagnosticGetNumNotes(d);
  for (intptr_t i = 0; i < n; ++i)
    if (!isOpDumpNote(mlirDiagnosticGetNote(d, i)))
      printDiagnostic(mlirDiagnosticGetNote(d, i), depth + 1, out);
}

/* Where diagnostics go while a capture is set (one thread: the input's
 * preparation); NULL: printed. */
static PbcDiagCapture *capture;

static MlirLogicalResult handler(MlirDiagnostic d, void *userData) {
  (void)userData;
  bool error = mlirDiagnosticGetSeverity(d) == MlirDiagnosticError;
  if (capture) {
    if (!capture->stream)
      capture->stream = open_memstream(&capture->text, &capture->len);
    if (capture->stream) {
      capture->errors += error;
      printDiagnostic(d, 0, capture->stream);
      fflush(capture->stream);
      return mlirLogicalResultSuccess();
    }
  }
  if (error)
    atomic_fetch_add(&errorCount, 1);
  printDiagnostic(d, 0, stderr);
  fflush(stderr);
  return mlirLogicalResultSuccess();
}

PbcDiagCapture *pbcDiagCaptureInto(PbcDiagCapture *c) {
  PbcDiagCapture *before = capture;
  capture = c;
  return before;
}

const char *pbcDiagCaptureText(PbcDiagCapture *c) {
  if (c->stream)
    fflush(c->stream);
  return c->text ? c->text : "";
}

void pbcDiagCaptureReplay(PbcDiagCapture *c) {
  fputs(pbcDiagCaptureText(c), stderr);
  fflush(stderr);
  atomic_fetch_add(&errorCount, c->errors);
  pbcDiagCaptureDestroy(c);
}

void pbcDiagCaptureDestroy(PbcDiagCapture *c) {
  if (c->stream)
    fclose(c->stream);
  free(c->text);
  memset(c, 0, sizeof(*c));
}

void pbcDiagInstall(MlirContext ctx) {
  mlirContextAttachDiagnosticHandler(ctx, handler, NULL, NULL);
}
