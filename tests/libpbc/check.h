/* CHECK(cond, fmt, ...) for the libpbc tests: reports a failed condition
 * with its line and counts it in `failures`, and goes on. */
#ifndef PBC_TESTS_LIBPBC_CHECK_H
#define PBC_TESTS_LIBPBC_CHECK_H

#include <stdio.h>

static int failures;
#define CHECK(c, ...)                                      \
  do {                                                     \
    if (!(c)) {                                            \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fprintf(stderr, "\n");                               \
      ++failures;                                          \
    }                                                      \
  } while (0)

#endif
