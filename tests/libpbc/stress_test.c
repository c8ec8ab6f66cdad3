/* libpbc from many threads at once: each run starts THREADS threads that
 * compile at the same moment, either a mix (valid programs, each with its
 * own constants, beside invalid ones, each named uniquely) or one program
 * from every thread; some runs without a cache. Every valid program is
 * called and checked exactly; every error must be non-empty, located, and
 * name only its own program. The host's stderr must still be its own file
 * at the end. Usage: stress_test CPU_PLUGIN.so [RUNS [THREADS]]. */
#include <libgen.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pbc/libpbc.h"

enum { N = 67, MAX_THREADS = 64 };

static atomic_int wrong, misrouted, failedValid;
static pthread_barrier_t start;
static PbcCompileOptions base;
static char cacheDir[4096];

typedef struct Task {
  int thread, run;
  bool valid, sameForAll, noCache;
} Task;

static void validText(char *buf, size_t len, float c, float d) {
  snprintf(buf, len,
           "#m = affine_map<(d0) -> (d0)>\n"
           "func.func @f(%%x: tensor<%dxf32>) -> tensor<%dxf32> {\n"
           "  %%z = tensor.empty() : tensor<%dxf32>\n"
           "  %%r = linalg.generic {indexing_maps = [#m, #m], iterator_types = [\"parallel\"]}\n"
           "      ins(%%x : tensor<%dxf32>) outs(%%z : tensor<%dxf32>) {\n"
           "  ^bb0(%%a: f32, %%o: f32):\n"
           "    %%c = arith.constant %.1f : f32\n"
           "    %%d = arith.constant %.1f : f32\n"
           "    %%m = arith.mulf %%a, %%c : f32\n"
           "    %%s = arith.addf %%m, %%d : f32\n"
           "    linalg.yield %%s : f32\n"
           "  } -> tensor<%dxf32>\n"
           "  return %%r : tensor<%dxf32>\n"
           "}\n",
           N, N, N, N, N, c, d, N, N);
}

static const char kInvalid[] = "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                               "  %y = arith.addf %x, %q : tensor<4xf32>\n"
                               "  return %y : tensor<4xf32>\n}\n";

/* Every "NAME.mlir" the message mentions is ours. */
static bool onlyMentions(const char *err, const char *own) {
  size_t ownLen = strlen(own);
  for (const char *p = strstr(err, ".mlir"); p; p = strstr(p + 1, ".mlir")) {
    const char *nameEnd = p + 5;
    if ((size_t)(nameEnd - err) < ownLen || strncmp(nameEnd - ownLen, own, ownLen) != 0)
      return false;
  }
  return true;
}

static void *work(void *arg) {
  Task *t = arg;
  char text[4096], name[128];
  float c = (float)(1 << (t->thread % 4)) * 0.5f;
  float d = t->sameForAll ? 3.0f : (float)(t->run % 16 * 64 + t->thread);
  if (t->valid)
    validText(text, sizeof(text), c, d);
  snprintf(name, sizeof(name), "%s-%d-%d.mlir", t->valid ? "valid" : "invalid", t->thread,
           t->run);
  PbcCompileOptions o = base;
  o.cacheDir = t->noCache ? "" : cacheDir;
  pthread_barrier_wait(&start);
  char *err = NULL;
  PbcProgram *p = pbcProgramCompile(t->valid ? text : kInvalid, name, &o, &err);
  if (t->valid) {
    if (!p) {
      fprintf(stderr, "FAIL %s did not compile: %s\n", name, err ? err : "(no message)");
      atomic_fetch_add(&failedValid, 1);
    } else {
      float x[N], y[N];
      for (int i = 0; i < N; ++i) {
        x[i] = (float)(rand() % 1000 - 500) / 8.0f + 0.125f;
        y[i] = NAN;
      }
      int64_t shape[1] = {N};
      PbcTensor args[2] = {{"f32", 1, shape, NULL, x}, {"f32", 1, shape, NULL, y}};
      char *callErr = NULL;
      int bad = !pbcProgramCall(p, 0, args, 2, &callErr);
      for (int i = 0; i < N; ++i)
        bad += y[i] != x[i] * c + d;
      if (bad) {
        fprintf(stderr, "FAIL %s: %d wrong elements %s\n", name, bad, callErr ? callErr : "");
        atomic_fetch_add(&wrong, 1);
      }
      pbcMessageDestroy(callErr);
    }
  } else {
    char own[160];
    snprintf(own, sizeof(own), "%s:2:", name);
    if (p || !err || !*err || !strstr(err, own) || !onlyMentions(err, name)) {
      fprintf(stderr, "FAIL %s: misrouted or empty error: %s\n", name,
              p ? "(compiled)" : err ? err : "(none)");
      atomic_fetch_add(&misrouted, 1);
    }
  }
  pbcProgramDestroy(p);
  pbcMessageDestroy(err);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: stress_test CPU_PLUGIN.so [RUNS [THREADS]]\n");
    return 2;
  }
  int runs = argc > 2 ? atoi(argv[2]) : 20, threads = argc > 3 ? atoi(argv[3]) : 8;
  if (threads < 1 || threads > MAX_THREADS)
    threads = 8;
  srand((unsigned)time(NULL));
  char pluginDir[4096];
  snprintf(pluginDir, sizeof(pluginDir), "%s", argv[1]);
  const char *tmp = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
  snprintf(cacheDir, sizeof(cacheDir), "%s/libpbc-stress-%d", tmp, rand());
  base = (PbcCompileOptions){.pluginDir = dirname(pluginDir), .optLevel = 1};
  struct stat before, after;
  fstat(2, &before);
  for (int run = 0; run < runs; ++run) {
    pthread_t th[MAX_THREADS];
    Task tasks[MAX_THREADS];
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (int i = 0; i < threads; ++i) {
      bool same = run % 2 == 1;
      tasks[i] = (Task){i, run, same || i % 2 == 0, same, run % 5 == 4};
      pthread_create(&th[i], NULL, work, &tasks[i]);
    }
    for (int i = 0; i < threads; ++i)
      pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
  }
  fstat(2, &after);
  bool stderrOk = before.st_dev == after.st_dev && before.st_ino == after.st_ino;
  printf("libpbc stress: %d runs x %d threads: %d wrong results, %d misrouted or empty "
         "errors, %d valid programs not compiled, stderr %s\n",
         runs, threads, wrong, misrouted, failedValid, stderrOk ? "intact" : "REDIRECTED");
  return wrong || misrouted || failedValid || !stderrOk;
}
