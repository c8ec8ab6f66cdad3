/*===- pbc/files.h - Folders on disk --------------------------------------===*\
|* What the caches (libpbc's programs, the driver's kernels) need of the    *|
|* file system beyond reading a file (pbcReadFile, pbc/strbuf.h).          *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_FILES_H
#define PBC_FILES_H

#include <stdbool.h>

/* mkdir -p: makes `path` and the folders above it (mode 0755); true if it
 * exists afterwards or already did (not necessarily as a folder). */
bool pbcMakeDirs(const char *path);

#endif
