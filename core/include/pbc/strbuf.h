/*===- pbc/strbuf.h - Growable strings -----------------------------------===*/
#ifndef PBC_STRBUF_H
#define PBC_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

#include "mlir-c/Support.h"

typedef struct PbcStrBuf {
  char *data; /* always NUL-terminated once anything was appended */
  size_t len, cap;
} PbcStrBuf;

void pbcStrBufAppend(PbcStrBuf *b, const char *s, size_t n);
void pbcStrBufPuts(PbcStrBuf *b, const char *s);
void pbcStrBufPrintf(PbcStrBuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void pbcStrBufClear(PbcStrBuf *b);
void pbcStrBufDestroy(PbcStrBuf *b);
/* Returns data, or "" for an empty buffer. */
const char *pbcStrBufGet(const PbcStrBuf *b);
/* An MlirStringCallback that appends to the PbcStrBuf in userData. */
void pbcStrBufCallback(MlirStringRef s, void *userData);

/* Reads a whole file ("-" is stdin). Returns false on error (errno set). */
bool pbcReadFile(const char *path, PbcStrBuf *out);
bool pbcWriteFile(const char *path, const char *data, size_t len);

#endif
