/* bench_chain: a chain of five elementwise ops, out = (max(x*y + x, 0))^2 - y,
 * over N floats, from a pbc-compiled library, against the STREAM triad
 * (a = b + s*c: the same traffic, 2 arrays read and 1 written) and the same
 * chain as one C loop, all OpenMP, in one process. The rate column is
 * GB/s of that traffic (12 bytes per element). */
#include "bench_common.h"
#include <stdio.h>
#include <stdlib.h>

static const char *kUsage =
    "usage: bench_chain --lib LIB.so --func NAME ROWS COLS [--reps N]\n"
    "  LIB exports _mlir_ciface_NAME(x[ROWSxCOLS]*, y[ROWSxCOLS]*,\n"
    "  out[ROWSxCOLS]*) computing (max(x*y + x, 0))^2 - y elementwise.\n";

typedef void (*ChainFn)(BenchMemref *, BenchMemref *, BenchMemref *);

typedef struct {
  int64_t n;
  float *x, *y, *out, *a;
  BenchMemref dX, dY, dOut;
  ChainFn fn;
} Ctx;

static void runPbc(void *p) {
  Ctx *c = p;
  c->fn(&c->dX, &c->dY, &c->dOut);
}

static void runTriad(void *p) {
  Ctx *c = p;
  const int64_t n = c->n;
  float *restrict a = c->a;
  const float *restrict b = c->x, *restrict d = c->y;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    a[i] = b[i] + 3.0f * d[i];
}

static void runC(void *p) {
  Ctx *c = p;
  const int64_t n = c->n;
  float *restrict o = c->a;
  const float *restrict x = c->x, *restrict y = c->y;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float t = x[i] * y[i] + x[i];
    t = t > 0.0f ? t : 0.0f;
    o[i] = t * t - y[i];
  }
}

int main(int argc, char **argv) {
  BenchOptions o;
  argc = benchParseOptions(argc, argv, &o, kUsage);
  if (argc != 3) {
    fputs(kUsage, stderr);
    return 2;
  }
  int64_t rows = atoll(argv[1]), cols = atoll(argv[2]);
  Ctx c = {.n = rows * cols};
  c.x = benchAlloc(c.n);
  c.y = benchAlloc(c.n);
  c.out = benchAlloc(c.n);
  c.a = benchAlloc(c.n);
  benchFillRandom(c.x, c.n, 1);
  benchFillRandom(c.y, c.n, 2);
  benchFillNaN(c.out, c.n);
  int64_t sizes[2] = {rows, cols};
  c.dX = benchMemrefCreate(c.x, 2, sizes);
  c.dY = benchMemrefCreate(c.y, 2, sizes);
  c.dOut = benchMemrefCreate(c.out, 2, sizes);
  c.fn = (ChainFn)benchLoadCiface(o.lib, o.func);
  benchPrintEnvironment();
  printf("elementwise chain of 5 ops over %lld floats (%s: %s); rate column = GB/s "
         "(12 bytes per element)\n",
         (long long)c.n, o.lib, o.func);
  runPbc(&c);
  runC(&c);
  /* Scale per element: |t*t| + |y| (the subtraction can cancel). */
  float *scale = benchAlloc(c.n);
  for (int64_t i = 0; i < c.n; ++i) {
    float t = c.x[i] * c.y[i] + c.x[i];
    scale[i] = t * t + (c.y[i] < 0 ? -c.y[i] : c.y[i]);
  }
  double err = benchCheck("pbc", c.out, c.a, scale, c.n, BENCH_TOL);
  benchFree(scale);
  BenchImpl impls[] = {{"pbc", runPbc, &c},
                       {"STREAM triad (omp)", runTriad, &c},
                       {"same chain, one C loop", runC, &c}};
  BenchResult r[3];
  benchRunInterleaved(impls, 3, o.timing, r);
  benchPrintTable(impls, r, 3, o.timing.rounds, 12.0 * c.n, "GB/s");
  benchResultsFree(r, 3);
  return err <= BENCH_TOL ? 0 : 1;
}
