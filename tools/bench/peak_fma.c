/* peak_fma: measured fp32 FMA peak of this machine, 1..nproc threads, for
 * AVX-512 (zmm) and AVX2 (ymm), plus the core clock estimated from a
 * dependent integer-add chain. Anchors "percent of peak" figures.
 *
 * usage: peak_fma [--seconds S]   (S per trial, default 0.2; 7 trials) */
#define _POSIX_C_SOURCE 200809L
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* 12 independent accumulators: more than FMA latency (4-5 cycles) x 2
 * pipes, so the loop is throughput-bound, yet with the 2 operands it fits
 * AVX2's 16 registers (16 accumulators would spill there). Each kernel
 * returns a value derived from all accumulators so nothing is dead code. */
#define NACC 12
/* Distinct starting values: identical accumulators would be merged into
 * one chain by the compiler (GCC does). */
#define ACC12(T, SET1) \
  T a0 = SET1(0.f), a1 = SET1(1.f), a2 = SET1(2.f), a3 = SET1(3.f), \
    a4 = SET1(4.f), a5 = SET1(5.f), a6 = SET1(6.f), a7 = SET1(7.f), \
    a8 = SET1(8.f), a9 = SET1(9.f), a10 = SET1(10.f), a11 = SET1(11.f)
#define STEP12(F)                                                      \
  a0 = F(a0, x, y); a1 = F(a1, x, y); a2 = F(a2, x, y);                \
  a3 = F(a3, x, y); a4 = F(a4, x, y); a5 = F(a5, x, y);                \
  a6 = F(a6, x, y); a7 = F(a7, x, y); a8 = F(a8, x, y);                \
  a9 = F(a9, x, y); a10 = F(a10, x, y); a11 = F(a11, x, y)
#define FMA512(a, b, c) _mm512_fmadd_ps(b, c, a)
#define FMA256(a, b, c) _mm256_fmadd_ps(b, c, a)

__attribute__((target("avx512f"), noinline)) static float
fma512(int64_t iters, float seed) {
  __m512 x = _mm512_set1_ps(seed), y = _mm512_set1_ps(0.999999f);
  ACC12(__m512, _mm512_set1_ps);
  for (int64_t i = 0; i < iters; ++i) {
    STEP12(FMA512);
  }
  __m512 s = _mm512_add_ps(
      _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                    _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7))),
      _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"), noinline)) static float
fma256(int64_t iters, float seed) {
  __m256 x = _mm256_set1_ps(seed), y = _mm256_set1_ps(0.999999f);
  ACC12(__m256, _mm256_set1_ps);
  for (int64_t i = 0; i < iters; ++i) {
    STEP12(FMA256);
  }
  __m256 s = _mm256_add_ps(
      _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                    _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7))),
      _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
}

/* 100 dependent 1-cycle adds per iteration: cycles ~= adds. */
static void addChain(int64_t iters) {
  uint64_t v = 0;
  for (int64_t i = 0; i < iters; ++i) {
    __asm__ volatile(
        ".rept 100\n\t"
        "add $1, %0\n\t"
        ".endr"
        : "+r"(v));
  }
  __asm__ volatile("" ::"r"(v));
}

static int cmpDouble(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef float (*Kernel)(int64_t, float);

/* GFLOP/s over `trials` runs of `iters` loop iterations on each of
 * `threads` threads; reports median and best. */
static void measure(const char *name, Kernel k, int lanes, int threads,
                    int64_t iters, int trials, double ghz) {
  double g[32];
  volatile float sink = 0;
  for (int t = 0; t < trials; ++t) {
    double t0 = now();
#pragma omp parallel num_threads(threads)
    {
      float r = k(iters, 1.0f + (float)omp_get_thread_num());
#pragma omp atomic
      sink += r;
    }
    double dt = now() - t0;
    g[t] = NACC * 2.0 * lanes * (double)iters * threads / dt * 1e-9;
  }
  qsort(g, (size_t)trials, sizeof(double), cmpDouble);
  printf("  %-7s %2d thread%s: median %7.1f  best %7.1f GFLOP/s"
         "  (%.1f flop/cycle/thread at %.2f GHz)\n",
         name, threads, threads > 1 ? "s" : " ", g[trials / 2], g[trials - 1],
         g[trials / 2] / threads / ghz, ghz);
  (void)sink;
}

int main(int argc, char **argv) {
  double seconds = 0.2;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = atof(argv[++i]);
    else {
      fprintf(stderr, "usage: peak_fma [--seconds S]\n");
      return 2;
    }
  }
  const int trials = 7;
  int nproc = omp_get_num_procs();
  if (nproc > 32)
    nproc = 32;

  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    fprintf(stderr, "peak_fma: needs AVX2 and FMA\n");
    return 1;
  }
  int has512 = __builtin_cpu_supports("avx512f");

  /* Clock estimate, single thread (also warms the core up). */
  addChain(2000000);
  double t0 = now();
  const int64_t chainIters = 20000000;
  addChain(chainIters);
  double ghz = 100.0 * (double)chainIters / (now() - t0) * 1e-9;
  printf("clock (dependent add chain, 1 thread): ~%.2f GHz\n", ghz);

  /* Calibrate iterations to ~`seconds` per trial at single-thread speed.
   * The result goes to a volatile: an unused call to a side-effect-free
   * function may be dropped (GCC does). */
  volatile float sink;
  int64_t iters = 100000;
  double dt;
  for (;;) {
    t0 = now();
    sink = fma256(iters, 1.0f); /* AVX-512 trials then take about half */
    dt = now() - t0;
    if (dt > 0.01)
      break;
    iters *= 4;
  }
  (void)sink;
  iters = (int64_t)((double)iters * seconds / dt);
  if (iters < 1000)
    iters = 1000;

  /* 1, 2, 4, ... threads, and always nproc itself. */
  for (int th = 1;; th = th * 2 < nproc ? th * 2 : nproc) {
    if (has512)
      measure("avx512", fma512, 16, th, iters, trials, ghz);
    measure("avx2", fma256, 8, th, iters, trials, ghz);
    if (th >= nproc)
      break;
  }
  return 0;
}
