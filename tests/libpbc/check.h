/* For the libpbc tests: CHECK(cond, fmt, ...) reports a failed condition
 * with its line, counts it in `failures` and goes on; testFolders gives the
 * plugin folder and a fresh cache folder. */
#ifndef PBC_TESTS_LIBPBC_CHECK_H
#define PBC_TESTS_LIBPBC_CHECK_H

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

/* The folder of the cpu plugin file `plugin` (argv[1]), and a cache folder
 * named `tag` plus a random number under $TEST_TMPDIR (else /tmp). Seeds
 * rand() from the clock first. */
static void testFolders(const char *plugin, const char *tag, char pluginDir[4096],
                        char cacheDir[4096]) {
  srand((unsigned)time(NULL));
  char copy[4096];
  snprintf(copy, sizeof(copy), "%s", plugin);
  snprintf(pluginDir, 4096, "%s", dirname(copy));
  const char *tmp = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
  snprintf(cacheDir, 4096, "%s/%s-%d", tmp, tag, rand());
}

/* n floats uniform in about [-1, 1], never 0 (malloc'ed). */
static inline float *randomNonZero(long long n) {
  float *a = malloc((size_t)n * sizeof(float));
  for (long long i = 0; i < n; ++i)
    a[i] = (float)((rand() % 2000) - 1000) / 997.0f + 0.001f;
  return a;
}

#endif
