/*===- pbc/session.h - One compilation: context, target, stages ----------===*\
|* A session owns the MLIR context (every dialect, pass and LLVM translation *|
|* registered, plus the target's own), pbc's pass registry, and the stage    *|
|* pipelines S1..S5 parsed for the chosen target and chip.                   *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_SESSION_H
#define PBC_SESSION_H

#include <stdbool.h>

#include "mlir-c/IR.h"
#include "pbc/chip.h"
#include "pbc/pass_registry.h"
#include "pbc/pipeline.h"
#include "pbc/plugin.h"

#define PBC_NUM_STAGES 5

typedef struct PbcSessionOptions {
  const PbcTargetPlugin *plugin;
  const PbcChip *chip;
  int optLevel;               /* 0..3; 0 skips every [group] entry in S3 */
  const char *disabledGroups; /* --disable=a,b */
  bool printIrAfterAll;
  const char *dumpDir;
  bool reference;             /* the naive -O0 reference lowering for --check */
  bool verifyEach;            /* verify after every pass (default: once,
                                 after each stage) */
  bool threadedLateStages;    /* S4 and S5 run their per-function passes on
                                 all cores (each nest is a function by then) */
} PbcSessionOptions;

typedef struct PbcSession {
  MlirContext ctx;
  PbcPassRegistry registry;
  PbcSessionOptions opts;
  PbcPipeline stages[PBC_NUM_STAGES];
  PbcPassTiming timings[1024];
  int numTimings;
  int dumpCounter;
} PbcSession;

/* Creates the context and parses and builds all stage pipelines. Returns NULL
 * after printing errors (e.g. a bad pipeline entry, with file:line). */
PbcSession *pbcSessionCreate(const PbcSessionOptions *opts);
void pbcSessionDestroy(PbcSession *s);

/* Parses a program: the file `filename`, or `text` when filename is
 * "<stdin>". Null on error (diagnosed). */
MlirModule pbcSessionParse(PbcSession *s, const char *text, const char *filename);
/* Parses program text; `sourceName` names it in diagnostics. */
MlirModule pbcSessionParseText(PbcSession *s, const char *text, const char *sourceName);
/* Checks the program is a tensor program pbc supports (dialects, static
 * shapes, element types) and marks public functions for the C interface. */
bool pbcSessionCheckInput(PbcSession *s, MlirModule m);
/* Runs stages first..last (1-based, inclusive). */
bool pbcSessionRunStages(PbcSession *s, MlirModule m, int first, int last);
/* Prints the --timing report (per pass and per stage) to stderr. */
void pbcSessionPrintTimings(const PbcSession *s);

/* The core's stage pipeline texts (the embedded pipelines/sN.pipeline files). */
extern const char pbc_pipeline_s1[], pbc_pipeline_s2[], pbc_pipeline_s3[],
    pbc_pipeline_reference[];

#endif
