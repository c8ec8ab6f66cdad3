/* Pipeline files: parsing, building a pass manager per entry, running. */
#include "pbc/pipeline.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pbc/isolate.h"
#include "pbc/strbuf.h"

static char *dupRange(const char *b, const char *e) {
  char *s = malloc((size_t)(e - b) + 1);
  memcpy(s, b, (size_t)(e - b));
  s[e - b] = 0;
  return s;
}

static char *dupStr(const char *s) { return dupRange(s, s + strlen(s)); }

static bool groupDisabled(const char *disabled, const char *group) {
  if (!disabled || !*disabled)
    return false;
  if (strcmp(disabled, "*") == 0)
    return true;
  size_t n = strlen(group);
  for (const char *p = disabled; *p;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (len == n && strncmp(p, group, n) == 0)
      return true;
    p = c ? c + 1 : p + len;
  }
  return false;
}

static void addEntry(PbcPipeline *out, PbcPipelineEntry e) {
  out->entries = realloc(out->entries,
                         sizeof(PbcPipelineEntry) * (size_t)(out->numEntries + 1));
  out->entries[out->numEntries++] = e;
}

/* The registry name of an entry: the text before '{' when it is a plain
 * identifier (no nesting parentheses). */
static const PbcPassInfo *lookupEntry(const PbcPassRegistry *reg,
                                      const char *text, char **options) {
  const char *brace = strchr(text, '{');
  const char *end = brace ? brace : text + strlen(text);
  for (const char *c = text; c < end; ++c)
    if (!(isalnum((unsigned char)*c) || *c == '-' || *c == '_' || *c == '.'))
      return NULL;
  char *name = dupRange(text, end);
  const PbcPassInfo *info = reg ? pbcPassRegistryLookup(reg, name) : NULL;
  free(name);
  if (info) {
    if (brace) {
      const char *close = strrchr(text, '}');
      *options = dupRange(brace + 1, close && close > brace ? close : text + strlen(text));
    } else {
      *options = dupStr("");
    }
  }
  return info;
}

bool pbcPipelineParse(const char *text, const char *source, const char *stage,
                      const PbcPipelineEnv *env, PbcPipeline *out) {
  if (!out->stage)
    out->stage = dupStr(stage ? stage : "");
  bool ok = true;
  int lineNo = 0;
  for (const char *p = text; *p;) {
    const char *eol = strchr(p, '\n');
    if (!eol)
      eol = p + strlen(p);
    ++lineNo;
    const char *b = p, *e = eol;
    p = *eol ? eol + 1 : eol;
    const char *hash = memchr(b, '#', (size_t)(e - b));
    if (hash)
      e = hash;
    while (b < e && isspace((unsigned char)*b))
      ++b;
    while (e > b && isspace((unsigned char)e[-1]))
      --e;
    if (b == e)
      continue;

    char *group = NULL;
    if (*b == '[') {
      const char *close = memchr(b, ']', (size_t)(e - b));
      if (!close) {
        fprintf(stderr, "%s:%d: error: unterminated '[group]'\n", source, lineNo);
        ok = false;
        continue;
      }
      group = dupRange(b + 1, close);
      for (b = close + 1; b < e && isspace((unsigned char)*b); ++b)
        ;
      if (env && env->seenGroups && !groupDisabled(pbcStrBufGet(env->seenGroups), group)) {
        pbcStrBufPuts(env->seenGroups, ",");
        pbcStrBufPuts(env->seenGroups, group);
      }
      if (env && (groupDisabled(env->disabledGroups, group) ||
                  groupDisabled(env->replacedGroups, group))) {
        free(group);
        continue;
      }
    }

    char *raw = dupRange(b, e);
    PbcStrBuf sub = {0};
    char err[256];
    if (env && env->chip) {
      if (!pbcChipSubstitute(env->chip, raw, &sub, err, sizeof(err))) {
        fprintf(stderr, "%s:%d: error: %s\n", source, lineNo, err);
        ok = false;
        free(raw);
        free(group);
        pbcStrBufDestroy(&sub);
        continue;
      }
    } else {
      pbcStrBufPuts(&sub, raw);
    }
    free(raw);
    const char *t = pbcStrBufGet(&sub);

    if (strncmp(t, "@target:", 8) == 0) {
      /* Extension point: splice the target's entries in. */
      const char *point = t + 8;
      const PbcTargetPlugin *pl = env ? env->plugin : NULL;
      const char *ext = pl && pl->extension_point ? pl->extension_point(point) : NULL;
      if (ext) {
        char src[256];
        snprintf(src, sizeof(src), "<target %s>:%s", pl->name, point);
        PbcPipelineEnv targetEnv = *env;
        targetEnv.replacedGroups = NULL; /* the target's own entries stay */
        ok = pbcPipelineParse(ext, src, stage, &targetEnv, out) && ok;
      }
      free(group);
      pbcStrBufDestroy(&sub);
      continue;
    }

    PbcPipelineEntry entry = {0};
    entry.text = dupStr(t);
    entry.group = group;
    entry.source = dupStr(source);
    entry.line = lineNo;
    entry.pass = lookupEntry(env ? env->registry : NULL, t, &entry.options);
    if (!entry.pass && strncmp(t, "pbc-", 4) == 0) {
      /* pbc- names are ours: do not let MLIR's parser give a vaguer error. */
      fprintf(stderr, "%s:%d: error: unknown pbc pass '%s'\n", source, lineNo, t);
      ok = false;
    }
    addEntry(out, entry);
    pbcStrBufDestroy(&sub);
  }
  return ok;
}

typedef struct {
  const PbcPipelineEntry *entry;
  PbcStrBuf msg;
} BuildErr;

static void buildErrCallback(MlirStringRef s, void *ud) {
  pbcStrBufAppend(&((BuildErr *)ud)->msg, s.data, s.length);
}

bool pbcPipelineBuild(MlirContext ctx, PbcPipeline *p) {
  bool ok = true;
  for (int i = 0; i < p->numEntries; ++i) {
    PbcPipelineEntry *e = &p->entries[i];
    e->pm = mlirPassManagerCreateOnOperation(
        ctx, mlirStringRefCreateFromCString("builtin.module"));
    MlirOpPassManager top = mlirPassManagerGetAsOpPassManager(e->pm);
    mlirPassManagerEnableVerifier(e->pm, !p->verifyOnceAtEnd);
    if (e->pass) {
      char err[512] = "";
      MlirPass pass = e->pass->create(e->options, err, sizeof(err));
      if (!pass.ptr) {
        fprintf(stderr, "%s:%d: error: pass '%s': %s\n", e->source, e->line,
                e->pass->name, err[0] ? err : "could not be created");
        ok = false;
        continue;
      }
      const char *anchor = e->pass->anchorOp;
      if (anchor && *anchor && strcmp(anchor, "builtin.module") != 0) {
        MlirOpPassManager nested = mlirPassManagerGetNestedUnder(
            e->pm, mlirStringRefCreateFromCString(anchor));
        mlirOpPassManagerAddOwnedPass(nested, pass);
      } else {
        mlirPassManagerAddOwnedPass(e->pm, pass);
      }
      continue;
    }
    BuildErr be = {e, {0}};
    MlirLogicalResult r = mlirOpPassManagerAddPipeline(
        top, mlirStringRefCreateFromCString(e->text), buildErrCallback, &be);
    if (mlirLogicalResultIsFailure(r)) {
      /* MLIR's message can span lines; keep its first meaningful one. */
      const char *m = pbcStrBufGet(&be.msg);
      const char *colon = strstr(m, "error: ");
      const char *msg = colon ? colon + 7 : m;
      const char *nl = strchr(msg, '\n');
      fprintf(stderr, "%s:%d: error: invalid pipeline entry '%s': %.*s\n",
              e->source, e->line, e->text,
              (int)(nl ? (size_t)(nl - msg) : strlen(msg)), msg);
      ok = false;
    }
    pbcStrBufDestroy(&be.msg);
  }
  return ok;
}

void pbcPipelineDestroy(PbcPipeline *p) {
  for (int i = 0; i < p->numEntries; ++i) {
    PbcPipelineEntry *e = &p->entries[i];
    if (e->pm.ptr)
      mlirPassManagerDestroy(e->pm);
    free(e->text);
    free(e->group);
    free(e->source);
    free(e->options);
  }
  free(p->entries);
  free(p->stage);
  memset(p, 0, sizeof(*p));
}

static double nowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A file-name-safe version of an entry's text. */
static void slug(const char *text, char *out, size_t len) {
  size_t j = 0;
  for (const char *c = text; *c && j + 1 < len && *c != '{'; ++c)
    out[j++] = isalnum((unsigned char)*c) || *c == '-' ? *c : '_';
  out[j] = 0;
}

static void dumpModule(MlirOperation module, FILE *f) {
  MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
  PbcStrBuf b = {0};
  mlirOperationPrintWithFlags(module, flags, pbcStrBufCallback, &b);
  mlirOpPrintingFlagsDestroy(flags);
  fprintf(f, "%s\n", pbcStrBufGet(&b));
  pbcStrBufDestroy(&b);
}

int pbcCountTopLevelNests(MlirOperation module) {
  int n = 0;
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation f = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(f);
       f = mlirOperationGetNextInBlock(f)) {
    if (mlirOperationGetNumRegions(f) == 0)
      continue;
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0)); !mlirBlockIsNull(b);
         b = mlirBlockGetNextInRegion(b))
      for (MlirOperation op = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(op);
           op = mlirOperationGetNextInBlock(op))
        n += mlirOperationGetNumRegions(op) > 0;
  }
  return n;
}

bool pbcPipelineRun(const PbcPipeline *p, MlirOperation module,
                    const PbcRunOptions *opts) {
  for (int i = 0; i < p->numEntries; ++i) {
    const PbcPipelineEntry *e = &p->entries[i];
    pbcCrashContextSetPhase("stage %s, pass '%s' (%s:%d)", p->stage, e->text,
                            e->source, e->line);
    pbcCrashContextAppendReplay(e->text);
    double t0 = nowMs();
    MlirLogicalResult r = mlirPassManagerRunOnOp(e->pm, module);
    double ms = nowMs() - t0;
    if (opts && opts->timings && *opts->numTimings < opts->maxTimings)
      opts->timings[(*opts->numTimings)++] = (PbcPassTiming){
          p->stage, e->text, e->source, e->line, ms, pbcCountTopLevelNests(module)};
    if (mlirLogicalResultIsFailure(r)) {
      fprintf(stderr, "%s:%d: error: stage %s: pass '%s' failed\n", e->source,
              e->line, p->stage, e->text);
      return false;
    }
    if (opts && opts->printIrAfterAll) {
      fprintf(stderr, "// -----// IR after %s (%s:%d, stage %s) //----- //\n",
              e->text, e->source, e->line, p->stage);
      dumpModule(module, stderr);
    }
    if (opts && opts->dumpDir) {
      char name[160], path[4096];
      slug(e->text, name, sizeof(name));
      int n = opts->dumpCounter ? (*opts->dumpCounter)++ : i;
      snprintf(path, sizeof(path), "%s/%03d-%s-%s.mlir", opts->dumpDir, n,
               p->stage, name);
      FILE *f = fopen(path, "w");
      if (!f) {
        fprintf(stderr, "pbc: error: cannot write '%s'\n", path);
        return false;
      }
      fprintf(f, "// IR after %s (%s:%d)\n", e->text, e->source, e->line);
      dumpModule(module, f);
      fclose(f);
    }
  }
  if (p->verifyOnceAtEnd && p->numEntries > 0) {
    pbcCrashContextSetPhase("stage %s, verifying the module after it", p->stage);
    if (!mlirOperationVerify(module)) {
      fprintf(stderr,
              "pbc: error: stage %s left invalid IR (pbc --verify-each names the pass)\n",
              p->stage);
      return false;
    }
  }
  return true;
}
