/* Folders on disk: see pbc/files.h. */
#include "pbc/files.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

bool pbcMakeDirs(const char *path) {
  char buf[4096];
  snprintf(buf, sizeof(buf), "%s", path);
  for (char *p = buf + 1; *p; ++p)
    if (*p == '/') {
      *p = 0;
      mkdir(buf, 0755); /* may exist; the last mkdir decides */
      *p = '/';
    }
  return mkdir(buf, 0755) == 0 || errno == EEXIST;
}
