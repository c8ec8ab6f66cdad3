/* A compilation session: context, registries and the stage pipelines. */
#include "pbc/session.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/Func.h"
#include "mlir-c/RegisterEverything.h"
#include "pbc/diag.h"
#include "pbc/plugin_host.h"
#include "input/parse_guard.h"

static void registerEverything(PbcSession *s) {
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  if (s->opts.plugin && s->opts.plugin->register_dialects)
    s->opts.plugin->register_dialects(registry);
  s->ctx = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);
  mlirContextLoadAllAvailableDialects(s->ctx);
  mlirRegisterAllPasses();
  mlirRegisterAllLLVMTranslations(s->ctx);
  pbcDiagInstall(s->ctx);
  pbcRegisterCorePasses(&s->registry);
  if (s->opts.plugin && s->opts.plugin->register_passes)
    s->opts.plugin->register_passes(pbcHostApi(), &s->registry);
}

/* Every name in the comma list `disabled` is a group of the pipelines
 * (`seen`: ",g1,g2..."); else an error listing them. */
static bool knownGroups(const char *disabled, const char *seen) {
  for (const char *p = disabled; *p;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    bool found = false;
    for (const char *q = seen; q && *q && !found;) {
      const char *qe = strchr(q + 1, ',');
      size_t ql = qe ? (size_t)(qe - q - 1) : strlen(q + 1);
      found = ql == len && strncmp(q + 1, p, len) == 0;
      q = qe ? qe : q + 1 + ql;
    }
    if (!found) {
      fprintf(stderr, "pbc: error: --disable: unknown optimization group '%.*s' (groups: %s)\n",
              (int)len, p, seen && *seen ? seen + 1 : "none");
      return false;
    }
    p = c ? c + 1 : p + len;
  }
  return true;
}

PbcSession *pbcSessionCreate(const PbcSessionOptions *opts) {
  PbcSession *s = calloc(1, sizeof(PbcSession));
  s->opts = *opts;
  registerEverything(s);

  /* -O0 turns off every optimization group; --disable turns off some. A
   * target's s3_replaced_groups are core S3 groups it replaces with its own
   * passes at extension points (e.g. CPU cache tiling on a GPU). */
  char disabled[512];
  snprintf(disabled, sizeof(disabled), "%s",
           opts->optLevel == 0 ? "*" : (opts->disabledGroups ? opts->disabledGroups : ""));
  const char *replaced = pbcPluginReplacedGroups(opts->plugin);
  PbcStrBuf groups = {0};
  PbcPipelineEnv env = {&s->registry, opts->chip, opts->plugin, disabled, replaced, &groups};
  const char *texts[PBC_NUM_STAGES] = {
      pbc_pipeline_s1, opts->reference ? pbc_pipeline_reference : pbc_pipeline_s2,
      opts->reference ? "" : pbc_pipeline_s3,
      opts->plugin ? opts->plugin->s4_pipeline : "",
      opts->plugin ? opts->plugin->s5_pipeline : ""};
  char targetSrc[2][128];
  const char *plName = opts->plugin ? opts->plugin->name : "?";
  snprintf(targetSrc[0], sizeof(targetSrc[0]), "<target %s>:s4.pipeline", plName);
  snprintf(targetSrc[1], sizeof(targetSrc[1]), "<target %s>:s5.pipeline", plName);
  const char *sources[PBC_NUM_STAGES] = {
      "pipelines/s1.pipeline",
      opts->reference ? "pipelines/reference.pipeline" : "pipelines/s2.pipeline",
      "pipelines/s3.pipeline", targetSrc[0], targetSrc[1]};
  bool ok = true;
  for (int i = 0; i < PBC_NUM_STAGES; ++i) {
    char stage[4];
    snprintf(stage, sizeof(stage), "s%d", i + 1);
    ok = pbcPipelineParse(texts[i] ? texts[i] : "", sources[i], stage, &env,
                          &s->stages[i]) && ok;
  }
  if (ok && opts->optLevel != 0 && opts->disabledGroups)
    ok = knownGroups(opts->disabledGroups, pbcStrBufGet(&groups));
  pbcStrBufDestroy(&groups);
  /* Each stage is verified once at its end unless every pass's output is
   * asked for: verifying the whole module after each of S3's passes cost
   * as much as the passes themselves on large models (tools/bench/README.md,
   * compile time). The differential tester and pbc-opt (the passes' lit
   * tests) verify after every pass. */
  for (int i = 0; ok && i < PBC_NUM_STAGES; ++i) {
    s->stages[i].verifyOnceAtEnd = !opts->verifyEach;
    ok = pbcPipelineBuild(s->ctx, &s->stages[i]);
  }
  if (!ok) {
    pbcSessionDestroy(s);
    return NULL;
  }
  return s;
}

void pbcSessionDestroy(PbcSession *s) {
  if (!s)
    return;
  for (int i = 0; i < PBC_NUM_STAGES; ++i)
    pbcPipelineDestroy(&s->stages[i]);
  mlirContextDestroy(s->ctx);
  free(s);
}

/* Skips blank and `//` comment lines. */
static const char *skipBlank(const char *t) {
  for (;;) {
    while (*t == ' ' || *t == '\t' || *t == '\n' || *t == '\r')
      ++t;
    if (t[0] != '/' || t[1] != '/')
      return t;
    while (*t && *t != '\n')
      ++t;
  }
}

/* Skips one top-level alias definition (`#map = affine_map<...>` or
 * `!t = ...`): to the end of the line on which its brackets close (the `>`
 * of an affine map's `->` closes nothing). */
static const char *skipAlias(const char *t) {
  int depth = 0;
  bool inString = false;
  for (; *t; ++t) {
    if (inString) {
      if (*t == '\\' && t[1])
        ++t;
      else if (*t == '"')
        inString = false;
    } else if (*t == '"') {
      inString = true;
    } else if (strchr("<([{", *t)) {
      ++depth;
    } else if (strchr(">)]}", *t) && depth > 0 && !(*t == '>' && t[-1] == '-')) {
      --depth;
    } else if (*t == '\n' && depth == 0) {
      return t + 1;
    }
  }
  return t;
}

/* Where the first top-level op starts: after blank lines, comments and
 * alias definitions (which must stay outside any op). */
static const char *firstOp(const char *t) {
  for (t = skipBlank(t); *t == '#' || *t == '!'; t = skipBlank(t))
    t = skipAlias(t);
  return t;
}

MlirModule pbcSessionParseText(PbcSession *s, const char *text, const char *sourceName) {
  if (!pbcParseGuard(s->ctx, text, sourceName))
    return (MlirModule){NULL};
  /* MLIR parses one named top-level op from a string; a program of several
   * ops is wrapped into a module that opens on the line of its first op
   * (after the alias definitions), so lines stay right. */
  PbcStrBuf wrapped = {0};
  const char *op0 = firstOp(text);
  if (!(strncmp(op0, "module", 6) == 0 && !(isalnum((unsigned char)op0[6]) || op0[6] == '_'))) {
    pbcStrBufAppend(&wrapped, text, (size_t)(op0 - text));
    pbcStrBufPuts(&wrapped, "module {");
    pbcStrBufPuts(&wrapped, op0);
    pbcStrBufPuts(&wrapped, "\n}\n");
  }
  MlirOperation op = mlirOperationCreateParse(
      s->ctx, mlirStringRefCreateFromCString(wrapped.data ? wrapped.data : text),
      mlirStringRefCreateFromCString(sourceName));
  pbcStrBufDestroy(&wrapped);
  if (mlirOperationIsNull(op))
    return (MlirModule){NULL};
  return mlirModuleFromOperation(op);
}

MlirModule pbcSessionParse(PbcSession *s, const char *text, const char *filename) {
  /* Diagnostics must say file:line:col: a file is parsed by name. */
  if (strcmp(filename, "<stdin>") != 0) {
    if (!pbcParseGuard(s->ctx, text, filename))
      return (MlirModule){NULL};
    return mlirModuleCreateParseFromFile(s->ctx, mlirStringRefCreateFromCString(filename));
  }
  return pbcSessionParseText(s, text, filename);
}

bool pbcSessionRunStages(PbcSession *s, MlirModule m, int first, int last) {
  PbcRunOptions ro = {s->opts.printIrAfterAll, s->opts.dumpDir, s->timings,
                      &s->numTimings,
                      (int)(sizeof(s->timings) / sizeof(s->timings[0])),
                      &s->dumpCounter};
  bool ok = true;
  for (int i = first - 1; ok && i < last && i < PBC_NUM_STAGES; ++i) {
    /* Only S4 and S5: earlier stages hold one function per entry point, and
     * their passes may look beyond the function they run on. */
    mlirContextEnableMultithreading(s->ctx, s->opts.threadedLateStages && i >= 3);
    ok = pbcPipelineRun(&s->stages[i], mlirModuleGetOperation(m), &ro);
  }
  mlirContextEnableMultithreading(s->ctx, false);
  return ok;
}

void pbcSessionPrintTimings(const PbcSession *s) {
  double stageMs[PBC_NUM_STAGES + 1] = {0}, total = 0;
  fprintf(stderr, "===- pbc compile time -===\n%10s  %-5s  %s\n", "ms", "stage",
          "pass (source:line)");
  for (int i = 0; i < s->numTimings; ++i) {
    const PbcPassTiming *t = &s->timings[i];
    fprintf(stderr, "%10.3f  %-5s  %s (%s:%d)", t->ms, t->stage, t->text, t->source, t->line);
    if (t->nests > 0)
      fprintf(stderr, "  %d nests, %.1f us each", t->nests, 1e3 * t->ms / t->nests);
    fputc('\n', stderr);
    int st = t->stage[0] == 's' ? atoi(t->stage + 1) : 0;
    if (st >= 1 && st <= PBC_NUM_STAGES)
      stageMs[st] += t->ms;
    total += t->ms;
  }
  for (int i = 1; i <= PBC_NUM_STAGES; ++i)
    fprintf(stderr, "%10.3f  s%d     (stage total)\n", stageMs[i], i);
  fprintf(stderr, "%10.3f  all    (all passes)\n", total);
}
