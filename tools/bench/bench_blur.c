/* bench_blur: the blur example (separable 5-tap binomial blur of an NHWC
 * image with 3 channels, examples/blur.mlir at any size) compiled by pbc
 * twice: as usual (slicing fusion, Fig. 6: no intermediate image) and with
 * --disable=slice-fusion (the horizontal pass writes the whole intermediate,
 * the vertical pass reads it). Peers in the same process: the same two
 * passes in C with a preallocated intermediate (the unfused traffic without
 * any allocation), and a copy of x into y (the traffic floor of any fused
 * blur: read x once, write y once), with plain and with non-temporal stores
 * (pbc's blur streams y past the caches, so the second is its floor). The
 * rate column is GB/s of that floor. */
#include "bench_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE__
#include <immintrin.h>
#endif

static const char *kUsage =
    "usage: bench_blur --lib FUSED.so --unfused UNFUSED.so --func NAME H W\n"
    "  both libraries export _mlir_ciface_NAME(x[1x(H+4)x(W+4)x3]*,\n"
    "  y[1xHxWx3]*): y = the 5x1 blur of the 1x5 blur of x, taps\n"
    "  (1, 4, 6, 4, 1) / 16, as examples/blur.mlir.\n";

typedef void (*BlurFn)(BenchMemref *, BenchMemref *);

enum { kChannels = 3, kTaps = 5 };
static const float kTap[kTaps] = {0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f};

typedef struct {
  int64_t h, w;
  float *x, *y, *tmp, *ref;
  BenchMemref dX, dY;
  BlurFn fused, unfused;
} Ctx;

static void runFused(void *p) {
  Ctx *c = p;
  c->fused(&c->dX, &c->dY);
}

static void runUnfused(void *p) {
  Ctx *c = p;
  c->unfused(&c->dX, &c->dY);
}

/* tmp[(H+4) x W x 3] = horizontal pass of x; out = vertical pass of tmp. */
static void blurC(const Ctx *c, float *restrict out) {
  const int64_t xw = (c->w + 4) * kChannels, row = c->w * kChannels;
  const float *restrict x = c->x;
  float *restrict t = c->tmp;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < c->h + 4; ++i)
    for (int64_t j = 0; j < row; ++j) {
      float s = 0;
      for (int k = 0; k < kTaps; ++k)
        s += kTap[k] * x[i * xw + j + k * kChannels];
      t[i * row + j] = s;
    }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < c->h; ++i)
    for (int64_t j = 0; j < row; ++j) {
      float s = 0;
      for (int k = 0; k < kTaps; ++k)
        s += kTap[k] * t[(i + k) * row + j];
      out[i * row + j] = s;
    }
}

static void runC(void *p) {
  Ctx *c = p;
  blurC(c, c->ref);
}

typedef void (*CopyRowFn)(float *restrict dst, const float *restrict src, int64_t n);

static void copyPlain(float *restrict dst, const float *restrict src, int64_t n) {
  memcpy(dst, src, (size_t)n * sizeof(float));
}

/* dst[0, n) = src[0, n), storing dst's 64-byte-aligned middle with
 * non-temporal stores (the rest, and without SSE all of it, plainly). */
static void copyStreaming(float *restrict dst, const float *restrict src, int64_t n) {
  int64_t i = 0;
#ifdef __SSE__
  for (; i < n && ((uintptr_t)(dst + i) & 63); ++i)
    dst[i] = src[i];
#ifdef __AVX512F__
  for (; i + 16 <= n; i += 16)
    _mm512_stream_ps(dst + i, _mm512_loadu_ps(src + i));
#else
  for (; i + 4 <= n; i += 4)
    _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
#endif
  _mm_sfence(); /* the streamed lines reach memory before the next call */
#endif
  for (; i < n; ++i)
    dst[i] = src[i];
}

/* y's interior pixels of x into ref, row by row: the traffic floor. */
static void copyRows(const Ctx *c, CopyRowFn copy) {
  const int64_t xw = (c->w + 4) * kChannels, row = c->w * kChannels;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < c->h; ++i)
    copy(c->ref + i * row, c->x + (i + 2) * xw + 2 * kChannels, row);
}

static void runCopy(void *p) { copyRows(p, copyPlain); }

static void runCopyStreaming(void *p) { copyRows(p, copyStreaming); }

int main(int argc, char **argv) {
  const char *unfusedLib = NULL;
  for (int i = 1; i + 1 < argc; ++i)
    if (!strcmp(argv[i], "--unfused")) {
      unfusedLib = argv[i + 1];
      memmove(&argv[i], &argv[i + 2], sizeof(char *) * (size_t)(argc - i - 1));
      argc -= 2;
      break;
    }
  BenchOptions o;
  argc = benchParseOptions(argc, argv, &o, kUsage);
  if (argc != 3 || !unfusedLib) {
    fputs(kUsage, stderr);
    return 2;
  }
  Ctx c = {.h = atoll(argv[1]), .w = atoll(argv[2])};
  if (c.h <= 0 || c.w <= 0) {
    fputs(kUsage, stderr);
    return 2;
  }
  int64_t nx = (c.h + 4) * (c.w + 4) * kChannels, ny = c.h * c.w * kChannels;
  c.x = benchAlloc((size_t)nx);
  c.y = benchAlloc((size_t)ny);
  c.ref = benchAlloc((size_t)ny);
  c.tmp = benchAlloc((size_t)((c.h + 4) * c.w * kChannels));
  benchFillRandom(c.x, (size_t)nx, 1);
  int64_t xs[4] = {1, c.h + 4, c.w + 4, kChannels}, ys[4] = {1, c.h, c.w, kChannels};
  c.dX = benchMemrefCreate(c.x, 4, xs);
  c.dY = benchMemrefCreate(c.y, 4, ys);
  c.fused = (BlurFn)benchLoadCiface(o.lib, o.func);
  c.unfused = (BlurFn)benchLoadCiface(unfusedLib, o.func);
  benchPrintEnvironment();
  printf("blur %lldx%lldx%d (%s and %s: %s); rate column = GB/s of reading x and "
         "writing y once\n",
         (long long)c.h, (long long)c.w, kChannels, o.lib, unfusedLib, o.func);

  /* Both libraries against the C blur; the scale is the blur of |x| (the
   * taps are positive). */
  float *scale = benchAlloc((size_t)ny), *x = c.x, *absX = benchAlloc((size_t)nx);
  benchAbsCopy(absX, x, (size_t)nx);
  c.x = absX;
  blurC(&c, scale);
  c.x = x;
  benchFree(absX);
  blurC(&c, c.ref);
  double err = 0, e;
  benchFillNaN(c.y, (size_t)ny);
  runFused(&c);
  e = benchCheck("pbc (fused)", c.y, c.ref, scale, (size_t)ny, BENCH_TOL);
  err = e > err ? e : err;
  benchFillNaN(c.y, (size_t)ny);
  runUnfused(&c);
  e = benchCheck("pbc --disable=slice-fusion", c.y, c.ref, scale, (size_t)ny, BENCH_TOL);
  err = e > err ? e : err;
  benchFree(scale);

  /* Rows: pbc unfused = --disable=slice-fusion; C 2 passes = the same two
   * passes with the intermediate preallocated; the copies = the floor. */
  BenchImpl impls[] = {{"pbc", runFused, &c},
                       {"pbc unfused", runUnfused, &c},
                       {"C 2 passes (omp)", runC, &c},
                       {"copy x->y (omp)", runCopy, &c},
                       {"copy x->y (omp, NT stores)", runCopyStreaming, &c}};
  enum { kImpls = sizeof impls / sizeof impls[0] };
  BenchResult r[kImpls];
  benchRunInterleaved(impls, kImpls, o.timing, r);
  benchPrintTable(impls, r, kImpls, o.timing.rounds, (double)(nx + ny) * sizeof(float), "GB/s");
  benchResultsFree(r, kImpls);
  return err <= BENCH_TOL ? 0 : 1;
}
