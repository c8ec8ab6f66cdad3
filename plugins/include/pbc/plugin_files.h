/*===- pbc/plugin_files.h - Files that ship next to a plugin ---------------===*\
|* A plugin finds what ships beside it (its runtime library) at query time,  *|
|* wherever the plugin was installed or built.                               *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_PLUGIN_FILES_H
#define PBC_PLUGIN_FILES_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the absolute path of `file` in the folder of the shared object
 * that contains `anchor` (a function of the plugin) into out; out is ""
 * if that folder cannot be found. */
void pbcPluginFileBeside(const void *anchor, const char *file, char *out, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* PBC_PLUGIN_FILES_H */
