/*===- pbc/pipeline.h - Pass pipelines as data ---------------------------===*\
|* A pipeline file lists one entry per line, run in order:                    *|
|*   # comment                                                                *|
|*   pbc-some-pass{key=value}   a pass from pbc's registry (core or plugin)   *|
|*   func.func(lower-affine)    anything else: an upstream MLIR pipeline      *|
|*                              fragment, with MLIR's own textual syntax      *|
|*   @target:NAME               extension point: the target's entries for     *|
|*                              NAME (may be none)                            *|
|*   [group] ENTRY              an optimization entry in an ablation group:   *|
|*                              skipped under --disable=group and at -O0      *|
|* ${key} is replaced by the chip description's value of key.                 *|
|* Each entry runs as its own pass-manager run, so timing, IR dumps and crash *|
|* reports name the exact entry (file:line).                                  *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_PIPELINE_H
#define PBC_PIPELINE_H

#include <stdbool.h>
#include <stdio.h>

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "pbc/chip.h"
#include "pbc/pass_registry.h"
#include "pbc/plugin.h"
#include "pbc/strbuf.h"

typedef struct PbcPipelineEntry {
  char *text;   /* the entry after ${} substitution, without [group] */
  char *group;  /* ablation group, or NULL */
  char *source; /* file (or "<target>:point") the entry came from */
  int line;
  const PbcPassInfo *pass; /* registry pass, or NULL for upstream text */
  char *options;           /* registry pass options (inside {}) */
  MlirPassManager pm;      /* built by pbcPipelineBuild */
} PbcPipelineEntry;

typedef struct PbcPipeline {
  char *stage; /* "s1".."s5" or a free name */
  int numEntries;
  PbcPipelineEntry *entries;
  /* Set before pbcPipelineBuild: MLIR verifies the module after every pass
   * by default; with this, only once, after the last entry (S4 and S5 are
   * upstream conversions whose per-pass verification cost ResNet-50 about a
   * second; see tools/bench/README.md). */
  bool verifyOnceAtEnd;
} PbcPipeline;

/* What a pipeline is parsed against. */
typedef struct PbcPipelineEnv {
  const PbcPassRegistry *registry;
  const PbcChip *chip;             /* for ${key}; may be NULL */
  const PbcTargetPlugin *plugin;   /* for @target: points; may be NULL */
  const char *disabledGroups;      /* comma list; "*" disables all groups */
  const char *replacedGroups;      /* comma list: groups whose entries the
                                      target replaces (its own extension-point
                                      entries are kept); may be NULL */
  PbcStrBuf *seenGroups;           /* if set: ",group" appended for every
                                      [group] parsed, disabled or not */
} PbcPipelineEnv;

/* Parses text into entries, skipping disabled groups. Errors are printed as
 * `source:line: error: ...`; returns false on any. */
bool pbcPipelineParse(const char *text, const char *source, const char *stage,
                      const PbcPipelineEnv *env, PbcPipeline *out);
/* Creates a pass manager per entry; an unknown upstream pass or bad option is
 * reported at the entry's source:line. */
bool pbcPipelineBuild(MlirContext ctx, PbcPipeline *p);
void pbcPipelineDestroy(PbcPipeline *p);

typedef struct PbcPassTiming {
  const char *stage, *text, *source;
  int line;
  double ms;
  int nests; /* top-level nests after the entry: see pbcCountTopLevelNests */
} PbcPassTiming;

/* Ops holding a region at the top level of the module's functions: loop
 * nests and parallel regions (linalg ops before S2), the units whose number
 * the cost of most passes should grow with. */
int pbcCountTopLevelNests(MlirOperation module);

typedef struct PbcRunOptions {
  bool printIrAfterAll;      /* to stderr */
  const char *dumpDir;       /* write IR after each entry here, or NULL */
  PbcPassTiming *timings;    /* appended to, or NULL */
  int *numTimings;
  int maxTimings;
  int *dumpCounter;          /* numbering of dump files across stages */
} PbcRunOptions;

/* Runs the built entries in order on module. Reports the failing entry. */
bool pbcPipelineRun(const PbcPipeline *p, MlirOperation module,
                    const PbcRunOptions *opts);

#endif
