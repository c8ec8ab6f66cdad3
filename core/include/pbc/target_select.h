/*===- pbc/target_select.h - --target, --chip, --list-targets ------------===*/
#ifndef PBC_TARGET_SELECT_H
#define PBC_TARGET_SELECT_H

#include <stdbool.h>
#include <stdio.h>

#include "pbc/chip.h"
#include "pbc/plugin_host.h"

/* Finds the target and parses its chip ("native", a chip name, or NULL for
 * the target's default). On failure prints a diagnostic naming what exists
 * (and the broken plugin files) to `diag`. */
bool pbcSelectTarget(const PbcPluginSet *set, const char *target,
                     const char *chipName, const PbcLoadedPlugin **plugin,
                     PbcChip *chip, FILE *diag);
/* --chip-set=KEY=VALUE overrides, applied in order after pbcSelectTarget
 * (tuning and cross-compilation experiments: another cache size or core
 * count without writing a chip file). Prints a diagnostic on failure. */
bool pbcApplyChipOverrides(PbcChip *chip, const char *const *keyValues, int count);
/* --list-targets: name, version, chips, path; and plugins that failed. */
void pbcPrintTargets(const PbcPluginSet *set, FILE *out);
/* --target-info: the plugin and the chosen chip's description. */
void pbcPrintTargetInfo(const PbcLoadedPlugin *plugin, const PbcChip *chip, FILE *out);

#endif
