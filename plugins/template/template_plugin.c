/* The template target plugin: the smallest complete pbc target. Copy this
 * folder to start a new target (see plugins/WRITING_A_TARGET.md).
 *
 * It generates sequential host code (no OpenMP), so it runs anywhere and its
 * tests can execute what it compiles. A real target changes: its chips, its
 * S4/S5 pipelines, its S3 extension points, and its runtime libraries. */
#include "pbc/plugin.h"

extern const char pbc_template_s4[], pbc_template_s5[], pbc_template_chip[];

static const char *const kChips[] = {pbc_template_chip, NULL};
static const char *const kNoRuntime[] = {NULL};

/* S3 extension points this target fills (see pipelines/s3.pipeline). */
static const char *extensionPoint(const char *name) {
  (void)name;
  return NULL; /* none: the core's S3 defaults are fine for this target */
}

static const PbcTargetPlugin kPlugin = {
    .struct_size = sizeof(PbcTargetPlugin),
    .api_version = PBC_PLUGIN_API_VERSION,
    .name = "template",
    .version = "0.1.0",
    .description = "Template plugin: sequential host code (copy me)",
    .chips = kChips,
    .default_chip = "template-chip",
    .detect_native_chip = NULL,
    .extension_point = extensionPoint,
    .s4_pipeline = pbc_template_s4,
    .s5_pipeline = pbc_template_s5,
    .host_triple = "",
    .runtime_libraries = kNoRuntime,
};

PBC_PLUGIN_EXPORT const PbcTargetPlugin *pbc_target_plugin_query(uint32_t hostVersion) {
  /* A plugin may decline a host older than it needs by returning NULL. */
  return hostVersion >= 1 ? &kPlugin : NULL;
}
