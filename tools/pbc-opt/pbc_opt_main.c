/* pbc-opt: runs registered passes, pipeline files or whole stages on MLIR
 * input and prints the result (for FileCheck tests and for debugging). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbc/isolate.h"
#include "pbc/pipeline.h"
#include "pbc/plugin_host.h"
#include "pbc/session.h"
#include "pbc/target_select.h"

static const char kUsage[] =
    "usage: pbc-opt [options] INPUT.mlir      (INPUT '-' reads stdin)\n"
    "\n"
    "Runs pipeline entries on MLIR input and prints the resulting module.\n"
    "  -p 'ENTRY;ENTRY...'   pipeline entries, as in a pipelines/ file: pbc passes\n"
    "                        (pbc-classify-nests{...}) or upstream MLIR fragments\n"
    "                        (func.func(lower-affine)); ';' separates entries\n"
    "  --pipeline=FILE       run the entries of a pipeline file\n"
    "  --stage=sN            run stage N's pipeline (s1..s5) of the target\n"
    "  --through=sN          run stages s1..sN\n"
    "  --target=NAME --chip=NAME --chip-set=KEY=VALUE --plugin-dir=DIR\n"
    "  -O0..3 --disable=G[,G]\n"
    "                        as for pbc (they select S4/S5, extension points,\n"
    "                        ${chip} values and groups)\n"
    "  --list-passes         list pbc's registered passes\n"
    "  -o FILE               output (default stdout)\n"
    "  --print-ir-after-all --dump-dir=DIR --timing --no-isolate   as for pbc\n"
    "exit status: 0 ok, 1 error, 2 usage error, 70 internal crash (reproducer\n"
    "written).\n";

typedef struct Opt {
  const char *input, *output, *passes, *pipelineFile, *target, *chip, *disable, *dumpDir;
  const char *pluginDirs[16];
  const char *chipSets[32]; /* --chip-set=KEY=VALUE */
  int numChipSets;
  int numPluginDirs, stage, through, optLevel;
  bool listPasses, printIr, timing, isolate;
  const PbcLoadedPlugin *plugin;
  PbcChip chipDesc;
  PbcStrBuf text;
} Opt;

static int usage(const char *msg, const char *arg) {
  fprintf(stderr, "pbc-opt: error: %s%s\n(see pbc-opt --help)\n", msg, arg);
  return PBC_EXIT_USAGE;
}

static bool prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static int stageNumber(const char *v) {
  return (v[0] == 's' && v[1] >= '1' && v[1] <= '5' && !v[2]) ? v[1] - '0' : 0;
}

static int work(void *arg) {
  Opt *o = arg;
  PbcSessionOptions so = {o->plugin->table, &o->chipDesc, o->optLevel, o->disable,
                          o->printIr, o->dumpDir, false, .verifyEach = true};
  PbcSession *s = pbcSessionCreate(&so);
  if (!s)
    return PBC_EXIT_ERROR;
  if (o->listPasses) {
    for (int i = 0; i < s->registry.numPasses; ++i)
      printf("%-28s %-15s %s\n", s->registry.passes[i].name, s->registry.passes[i].anchorOp,
             s->registry.passes[i].summary);
    pbcSessionDestroy(s);
    return PBC_EXIT_OK;
  }
  int rc = PBC_EXIT_OK;
  const char *fname = strcmp(o->input, "-") == 0 ? "<stdin>" : o->input;
  MlirModule m = pbcSessionParse(s, pbcStrBufGet(&o->text), fname);
  if (mlirModuleIsNull(m)) {
    pbcSessionDestroy(s);
    return PBC_EXIT_ERROR;
  }
  PbcPipeline p = {0};
  bool ok = true;
  if (o->passes || o->pipelineFile) {
    PbcStrBuf lines = {0};
    const char *source = "<-p>";
    if (o->pipelineFile) {
      source = o->pipelineFile;
      if (!pbcReadFile(o->pipelineFile, &lines)) {
        fprintf(stderr, "pbc-opt: error: cannot read '%s': %s\n", o->pipelineFile,
                strerror(errno));
        ok = false;
      }
    } else {
      for (const char *c = o->passes; *c; ++c)
        pbcStrBufAppend(&lines, *c == ';' ? "\n" : c, 1);
    }
    char disabled[256];
    snprintf(disabled, sizeof(disabled), "%s",
             o->optLevel == 0 ? "*" : (o->disable ? o->disable : ""));
    PbcPipelineEnv env = {&s->registry, &o->chipDesc, o->plugin->table, disabled};
    ok = ok && pbcPipelineParse(pbcStrBufGet(&lines), source, "opt", &env, &p) &&
         pbcPipelineBuild(s->ctx, &p);
    PbcRunOptions ro = {o->printIr, o->dumpDir, s->timings, &s->numTimings, 1024,
                        &s->dumpCounter};
    ok = ok && pbcPipelineRun(&p, mlirModuleGetOperation(m), &ro);
    pbcStrBufDestroy(&lines);
  } else if (o->stage) {
    ok = pbcSessionRunStages(s, m, o->stage, o->stage);
  } else if (o->through) {
    ok = pbcSessionRunStages(s, m, 1, o->through);
  }
  if (ok) {
    PbcStrBuf out = {0};
    mlirOperationPrint(mlirModuleGetOperation(m), pbcStrBufCallback, &out);
    pbcStrBufPuts(&out, "\n");
    if (!pbcWriteFile(o->output ? o->output : "-", out.data, out.len)) {
      fprintf(stderr, "pbc-opt: error: cannot write '%s'\n", o->output);
      rc = PBC_EXIT_ERROR;
    }
    pbcStrBufDestroy(&out);
  } else {
    rc = PBC_EXIT_ERROR;
  }
  if (o->timing)
    pbcSessionPrintTimings(s);
  pbcPipelineDestroy(&p);
  mlirModuleDestroy(m);
  pbcSessionDestroy(s);
  return rc;
}

int main(int argc, char **argv) {
  Opt o = {.target = "cpu", .optLevel = 3, .isolate = true};
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(kUsage, stdout);
      return 0;
    } else if (!strcmp(a, "-p")) {
      if (++i == argc)
        return usage("-p needs entries", "");
      o.passes = argv[i];
    } else if (prefix(a, "--pipeline=")) {
      o.pipelineFile = a + 11;
    } else if (prefix(a, "--stage=")) {
      if (!(o.stage = stageNumber(a + 8)))
        return usage("bad stage (expected s1..s5): ", a + 8);
    } else if (prefix(a, "--through=")) {
      if (!(o.through = stageNumber(a + 10)))
        return usage("bad stage (expected s1..s5): ", a + 10);
    } else if (prefix(a, "--target=")) {
      o.target = a + 9;
    } else if (prefix(a, "--chip=")) {
      o.chip = a + 7;
    } else if (prefix(a, "--chip-set=")) {
      if (o.numChipSets == 32)
        return usage("more than 32 --chip-set options", "");
      o.chipSets[o.numChipSets++] = a + 11;
    } else if (prefix(a, "--plugin-dir=")) {
      if (o.numPluginDirs < 16)
        o.pluginDirs[o.numPluginDirs++] = a + 13;
    } else if (a[0] == '-' && a[1] == 'O' && a[2] >= '0' && a[2] <= '3' && !a[3]) {
      o.optLevel = a[2] - '0';
    } else if (prefix(a, "--disable=")) {
      o.disable = a + 10;
    } else if (!strcmp(a, "--list-passes")) {
      o.listPasses = true;
    } else if (!strcmp(a, "-o")) {
      if (++i == argc)
        return usage("-o needs a file name", "");
      o.output = argv[i];
    } else if (!strcmp(a, "--print-ir-after-all")) {
      o.printIr = true;
    } else if (prefix(a, "--dump-dir=")) {
      o.dumpDir = a + 11;
    } else if (!strcmp(a, "--timing")) {
      o.timing = true;
    } else if (!strcmp(a, "--no-isolate")) {
      o.isolate = false;
    } else if (a[0] == '-' && a[1]) {
      return usage("unknown option ", a);
    } else if (o.input) {
      return usage("more than one input file: ", a);
    } else {
      o.input = a;
    }
  }
  if (!o.input && !o.listPasses)
    return usage("no input file (use '-' for stdin)", "");
  PbcPluginSet plugins;
  pbcPluginDiscover(o.pluginDirs, o.numPluginDirs, &plugins);
  if (!pbcSelectTarget(&plugins, o.target, o.chip, &o.plugin, &o.chipDesc, stderr) ||
      !pbcApplyChipOverrides(&o.chipDesc, o.chipSets, o.numChipSets))
    return PBC_EXIT_USAGE;
  if (o.input && !pbcReadFile(o.input, &o.text)) {
    fprintf(stderr, "pbc-opt: error: cannot read '%s': %s\n", o.input, strerror(errno));
    return PBC_EXIT_ERROR;
  }
  PbcIsolateOptions iso = {o.isolate, pbcStrBufGet(&o.text), "pbc-opt", NULL, "pbc-opt"};
  return pbcRunIsolated(work, &o, &iso);
}
