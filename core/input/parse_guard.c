/* A lexical check of program text before MLIR parses it, for inputs MLIR 22's
 * parser does not survive (found by tests/fuzz):
 *  - brackets nested deeper than kMaxNesting: the recursive-descent parser
 *    overflows its stack (an attribute of 20,000 nested `[`);
 *  - a malformed integer list after `permutation =` or `dimensions =` (the
 *    custom syntax of linalg.transpose, linalg.broadcast, linalg.reduce):
 *    their parsers store the null attribute a failed list parse returns,
 *    and the op crashes after the parse error is reported.
 * Each is reported as a located error; the text is not changed. */
#include "input/parse_guard.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "mlir-c/Diagnostics.h"

enum { kMaxNesting = 256 };

typedef struct {
  const char *text, *at;
} Cursor;

static void lineCol(const char *text, const char *at, unsigned *line, unsigned *col) {
  *line = 1;
  *col = 1;
  for (const char *c = text; c < at; ++c) {
    if (*c == '\n') {
      ++*line;
      *col = 1;
    } else {
      ++*col;
    }
  }
}

static void report(MlirContext ctx, const char *sourceName, const char *text, const char *at,
                   const char *msg) {
  unsigned line, col;
  lineCol(text, at, &line, &col);
  MlirLocation loc =
      mlirLocationFileLineColGet(ctx, mlirStringRefCreateFromCString(sourceName), line, col);
  mlirEmitError(loc, msg);
}

/* `[` int (`,` int)* `]` or `[]`, each int fitting int64; returns the end,
 * or NULL. */
static const char *integerList(const char *p) {
  while (*p == ' ' || *p == '\t')
    ++p;
  if (strncmp(p, "array<", 6) == 0 || strncmp(p, "dense<", 6) == 0)
    return p; /* the generic form's attribute: MLIR's own parser */
  if (*p != '[')
    return NULL;
  ++p;
  while (isspace((unsigned char)*p))
    ++p;
  if (*p == ']')
    return p + 1;
  for (;;) {
    if (*p == '-')
      ++p;
    const char *digits = p;
    while (isdigit((unsigned char)*p))
      ++p;
    size_t n = (size_t)(p - digits);
    if (n == 0 || n > 19 || (n == 19 && strncmp(digits, "9223372036854775807", 19) > 0))
      return NULL;
    while (isspace((unsigned char)*p))
      ++p;
    if (*p == ']')
      return p + 1;
    if (*p != ',')
      return NULL;
    ++p;
    while (isspace((unsigned char)*p))
      ++p;
  }
}

static bool keywordAt(const char *text, const char *p, const char *kw) {
  size_t n = strlen(kw);
  return strncmp(p, kw, n) == 0 && (p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_'));
}

bool pbcParseGuard(MlirContext ctx, const char *text, const char *sourceName) {
  static const char *const lists[] = {"permutation", "dimensions"};
  int depth = 0;
  for (const char *p = text; *p; ++p) {
    if (*p == '"') { /* string literal */
      for (++p; *p && *p != '"'; ++p)
        if (*p == '\\' && p[1])
          ++p;
      if (!*p)
        break;
      continue;
    }
    if (p[0] == '/' && p[1] == '/') { /* comment */
      while (*p && *p != '\n')
        ++p;
      if (!*p)
        break;
      continue;
    }
    if (*p == '(' || *p == '[' || *p == '{' || *p == '<') {
      if (++depth > kMaxNesting) {
        char msg[96];
        snprintf(msg, sizeof(msg), "brackets nested more than %d deep", kMaxNesting);
        report(ctx, sourceName, text, p, msg);
        return false;
      }
    } else if ((*p == ')' || *p == ']' || *p == '}' || *p == '>') && depth > 0 &&
               !(*p == '>' && p > text && p[-1] == '-')) {
      --depth;
    }
    for (size_t k = 0; k < sizeof(lists) / sizeof(lists[0]); ++k) {
      if (!keywordAt(text, p, lists[k]))
        continue;
      const char *q = p + strlen(lists[k]);
      while (*q == ' ' || *q == '\t')
        ++q;
      if (*q != '=')
        continue;
      if (!integerList(q + 1)) {
        char msg[160];
        snprintf(msg, sizeof(msg), "'%s' must be a list of integers, like [0, 2, 1]", lists[k]);
        report(ctx, sourceName, text, p, msg);
        return false;
      }
    }
  }
  return true;
}
