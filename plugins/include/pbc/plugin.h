/*===- pbc/plugin.h - The pbc target plugin ABI ---------------------------===*\
|*                                                                            *|
|* A target plugin is a shared library exporting one C symbol:                *|
|*                                                                            *|
|*   const PbcTargetPlugin *pbc_target_plugin_query(uint32_t host_version);   *|
|*                                                                            *|
|* The returned table starts with its own size and API version and only ever  *|
|* grows at its end (as PJRT and IREE's executable plugins do): a host reads  *|
|* a field only if struct_size says the plugin has it. The host refuses a     *|
|* plugin whose api_version it cannot serve, naming both versions.            *|
|*                                                                            *|
|* Everything a plugin tells the host that the host interprets is data:       *|
|* chip descriptions and pass pipelines are text (see targets/cpu for the     *|
|* formats), so adding a field to a chip never changes this ABI.              *|
|*                                                                            *|
|* MLIR handles cross this boundary: the host, the core and every plugin link *|
|* the one shared library that carries MLIR's C API (libpbc_mlir_capi.so).    *|
\*===----------------------------------------------------------------------===*/

#ifndef PBC_PLUGIN_H
#define PBC_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this header. Bump when a field is added to a table below. */
#define PBC_PLUGIN_API_VERSION 2u
/* The oldest plugin API version this header's host can still serve. */
#define PBC_PLUGIN_API_VERSION_MIN 1u
#define PBC_PLUGIN_QUERY_SYMBOL "pbc_target_plugin_query"

#if defined(__GNUC__)
#define PBC_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define PBC_PLUGIN_EXPORT
#endif

/* Creates a pass from its textual options ("" when none). Returns a null pass
 * and writes a message into err on bad options. */
typedef MlirPass (*PbcPassCreateFn)(const char *options, char *err,
                                    size_t errLen);

/* Services the host offers a plugin while it registers itself. */
typedef struct PbcHostApi {
  size_t struct_size;
  uint32_t api_version;
  /* Registers a pass under `name` so pipeline files can name it. `anchorOp`
   * is the op it runs on ("func.func", "builtin.module", ...). */
  void (*register_pass)(void *hostCtx, const char *name, const char *anchorOp,
                        const char *summary, PbcPassCreateFn create);
} PbcHostApi;

typedef struct PbcTargetPlugin {
  size_t struct_size;   /* sizeof(PbcTargetPlugin) as the plugin saw it */
  uint32_t api_version; /* PBC_PLUGIN_API_VERSION the plugin was built with */

  const char *name;        /* --target=NAME */
  const char *version;     /* the plugin's own version, free-form */
  const char *description; /* one line */

  /* Chip descriptions as text, NULL-terminated. Format: one `key = value`
   * per line, `#` comments; `name` is required. */
  const char *const *chips;
  /* Chip used when --chip is not given; "native" asks detect_native_chip. */
  const char *default_chip;
  /* Writes the host machine's chip description (text) into buf; returns 0 on
   * success. NULL for targets that cannot run on the host. */
  int (*detect_native_chip)(char *buf, size_t len);

  /* Optional: dialects beyond MLIR's own that this target needs. */
  void (*register_dialects)(MlirDialectRegistry registry);
  /* Optional: register this target's passes through host->register_pass. */
  void (*register_passes)(const PbcHostApi *host, void *hostCtx);
  /* Optional: pipeline text to run at the named S3 extension point (a
   * `@target:NAME` line in pipelines/s3.pipeline), or NULL for none. */
  const char *(*extension_point)(const char *name);

  /* Pipeline texts for S4 (affine -> scf + parallelism) and S5 (-> LLVM,
   * device binaries). Same grammar as pipelines/ files. */
  const char *s4_pipeline;
  const char *s5_pipeline;

  /* Host code generation: LLVM triple, CPU and features for the code the
   * host runs ("" for the process's own, i.e. JIT-native). */
  const char *host_triple;
  /* Runtime libraries JIT execution loads and AOT libraries link, as absolute
   * paths, NULL-terminated. */
  const char *const *runtime_libraries;

  /* --- API version 2 --- */
  /* Core S3 groups (the [group] names of pipelines/s3.pipeline, comma
   * separated) this target replaces with its own passes at extension
   * points, e.g. CPU cache tiling on a GPU; NULL or "": none. Declared once
   * per target; `--target-info` shows it. */
  const char *s3_replaced_groups;
} PbcTargetPlugin;

typedef const PbcTargetPlugin *(*PbcTargetPluginQueryFn)(uint32_t hostVersion);

#ifdef __cplusplus
}
#endif

#endif /* PBC_PLUGIN_H */
