/* Growable strings and whole-file I/O. */
#include "pbc/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pbcStrBufAppend(PbcStrBuf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 256;
    while (cap < b->len + n + 1)
      cap *= 2;
    b->data = realloc(b->data, cap);
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
}

void pbcStrBufPuts(PbcStrBuf *b, const char *s) {
  pbcStrBufAppend(b, s, strlen(s));
}

void pbcStrBufPrintf(PbcStrBuf *b, const char *fmt, ...) {
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof(small), fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n < sizeof(small)) {
    pbcStrBufAppend(b, small, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  pbcStrBufAppend(b, big, (size_t)n);
  free(big);
}

void pbcStrBufClear(PbcStrBuf *b) {
  b->len = 0;
  if (b->data)
    b->data[0] = 0;
}

void pbcStrBufDestroy(PbcStrBuf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

const char *pbcStrBufGet(const PbcStrBuf *b) { return b->data ? b->data : ""; }

void pbcStrBufCallback(MlirStringRef s, void *userData) {
  pbcStrBufAppend((PbcStrBuf *)userData, s.data, s.length);
}

bool pbcReadFile(const char *path, PbcStrBuf *out) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f)
    return false;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
    pbcStrBufAppend(out, buf, n);
  bool ok = !ferror(f);
  if (f != stdin)
    fclose(f);
  if (!out->data)
    pbcStrBufAppend(out, "", 0);
  return ok;
}

bool pbcWriteFile(const char *path, const char *data, size_t len) {
  FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "wb");
  if (!f)
    return false;
  bool ok = fwrite(data, 1, len, f) == len;
  if (f != stdout)
    ok = fclose(f) == 0 && ok;
  else
    fflush(f);
  return ok;
}
