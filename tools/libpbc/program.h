/*===- program.h - libpbc's loaded program (internal) --------------------===*/
#ifndef PBC_LIBPBC_PROGRAM_H
#define PBC_LIBPBC_PROGRAM_H

#include "pbc/entry_sig.h"

struct PbcProgram {
  void *handle;
  int numEntries;
  PbcEntrySig *sigs;
  void **ciface;
  void (**packed)(void **);
  char libPath[4200];
  char privateCopy[4300]; /* the loaded private copy of libPath, or "" */
};

/* A message for the caller: formatted, at most 64 KiB. */
char *pbcLibMessage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Stores msg in *error when error is not NULL, frees it otherwise. */
void pbcLibSetError(char **error, char *msg);

#endif
