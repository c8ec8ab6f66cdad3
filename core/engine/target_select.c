/* Choosing a target plugin and a chip description, and describing them. */
#include "pbc/target_select.h"

#include <string.h>

static bool parseChipText(const PbcTargetPlugin *t, const char *text, PbcChip *chip,
                          FILE *diag) {
  char err[256];
  if (pbcChipParse(text, chip, err, sizeof(err)))
    return true;
  fprintf(diag, "pbc: error: target '%s' has a malformed chip description: line %s\n",
          t->name, err);
  return false;
}

static void chipNames(const PbcTargetPlugin *t, char *buf, size_t len) {
  size_t used = (size_t)snprintf(buf, len, "%s", t->detect_native_chip ? "native" : "");
  for (const char *const *c = t->chips; *c && used < len; ++c) {
    PbcChip chip;
    char err[64];
    if (!pbcChipParse(*c, &chip, err, sizeof(err)))
      continue;
    used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                             pbcChipName(&chip));
    pbcChipDestroy(&chip);
  }
}

bool pbcSelectTarget(const PbcPluginSet *set, const char *target,
                     const char *chipName, const PbcLoadedPlugin **plugin,
                     PbcChip *chip, FILE *diag) {
  const PbcLoadedPlugin *p = pbcPluginFind(set, target);
  if (!p) {
    char names[512];
    pbcPluginNames(set, names, sizeof(names));
    fprintf(diag, "pbc: error: unknown target '%s' (available: %s)\n", target, names);
    for (int i = 0; i < set->numBroken; ++i)
      fprintf(diag, "pbc: note: plugin %s could not be used: %s\n",
              set->broken[i].path, set->broken[i].error);
    if (set->numBrokenOmitted)
      fprintf(diag, "pbc: note: and %d more broken plugin files\n",
              set->numBrokenOmitted);
    return false;
  }
  *plugin = p;
  const PbcTargetPlugin *t = p->table;
  const char *want = chipName && *chipName ? chipName : t->default_chip;
  if (want && strcmp(want, "native") == 0) {
    if (!t->detect_native_chip) {
      fprintf(diag, "pbc: error: target '%s' cannot run on this machine: give a --chip\n",
              t->name);
      return false;
    }
    char text[4096];
    if (t->detect_native_chip(text, sizeof(text)) != 0) {
      fprintf(diag, "pbc: error: target '%s' could not describe this machine\n", t->name);
      return false;
    }
    return parseChipText(t, text, chip, diag);
  }
  for (const char *const *c = t->chips; *c; ++c) {
    if (!parseChipText(t, *c, chip, diag))
      return false;
    if (!want || strcmp(pbcChipName(chip), want) == 0)
      return true;
    pbcChipDestroy(chip);
  }
  char names[1024];
  chipNames(t, names, sizeof(names));
  fprintf(diag, "pbc: error: unknown chip '%s' for target '%s' (available: %s)\n",
          want, t->name, names);
  return false;
}

bool pbcApplyChipOverrides(PbcChip *chip, const char *const *keyValues, int count) {
  for (int i = 0; i < count; ++i) {
    char err[256];
    if (!pbcChipOverride(chip, keyValues[i], err, sizeof(err))) {
      fprintf(stderr, "pbc: error: --chip-set: %s\n", err);
      return false;
    }
  }
  return true;
}

void pbcPrintTargets(const PbcPluginSet *set, FILE *out) {
  for (int i = 0; i < set->numPlugins; ++i) {
    const PbcLoadedPlugin *p = &set->plugins[i];
    char names[1024];
    chipNames(p->table, names, sizeof(names));
    fprintf(out, "%-10s %-8s %s\n           chips: %s (default: %s)\n           path:  %s\n",
            p->table->name, p->table->version ? p->table->version : "?",
            p->table->description ? p->table->description : "", names,
            p->table->default_chip ? p->table->default_chip : "first", p->path);
  }
  for (int i = 0; i < set->numBroken; ++i)
    fprintf(out, "(broken)   %s\n           %s\n", set->broken[i].path,
            set->broken[i].error);
  if (set->numBrokenOmitted)
    fprintf(out, "(broken)   and %d more broken plugin files\n", set->numBrokenOmitted);
}

void pbcPrintTargetInfo(const PbcLoadedPlugin *plugin, const PbcChip *chip, FILE *out) {
  const PbcTargetPlugin *t = plugin->table;
  const char *replaced = pbcPluginReplacedGroups(t);
  fprintf(out, "target: %s %s - %s\nplugin: %s (plugin API v%u)\n", t->name,
          t->version ? t->version : "", t->description ? t->description : "",
          plugin->path, t->api_version);
  if (replaced && *replaced)
    fprintf(out, "s3-replaced-groups: %s\n", replaced);
  fprintf(out, "chip:\n");
  PbcStrBuf b = {0};
  pbcChipPrint(chip, &b);
  fputs(pbcStrBufGet(&b), out);
  pbcStrBufDestroy(&b);
}
