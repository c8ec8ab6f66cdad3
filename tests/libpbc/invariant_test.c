/* Arguments marked pbc.invariant (a model's weights): the compiled code packs
 * their tiles on the first call and keeps them (S3's pbc-pack-once). Checks,
 * against a naive C reference on fresh random non-zero inputs:
 * - the first call, and calls after it (packed tiles reused);
 * - another weight tensor passed (another address): packed again, and the
 *   first one again after it;
 * - two programs compiled from the same text (one cached library) with
 *   different weights, called from two threads at once: each has its own
 *   packed tiles (libpbc loads a private copy of such a library).
 * argv[1]: the cpu plugin file. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pbc/libpbc.h"

enum { H = 7, W = 7, C = 128, KH = 3 }; /* weights 3x3x128x128: packed */

static const char kProgram[] =
    "func.func @conv(%x: tensor<1x9x9x128xf32>,\n"
    "                %w: tensor<3x3x128x128xf32> {pbc.invariant}) -> tensor<1x7x7x128xf32> {\n"
    "  %z = arith.constant 0.0 : f32\n"
    "  %e = tensor.empty() : tensor<1x7x7x128xf32>\n"
    "  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x7x7x128xf32>) -> tensor<1x7x7x128xf32>\n"
    "  %r = linalg.conv_2d_nhwc_hwcf ins(%x, %w : tensor<1x9x9x128xf32>, tensor<3x3x128x128xf32>)\n"
    "       outs(%f : tensor<1x7x7x128xf32>) -> tensor<1x7x7x128xf32>\n"
    "  return %r : tensor<1x7x7x128xf32>\n"
    "}\n";

typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes[4], strides[4];
} Desc4;

static Desc4 tensor4(float *data, int64_t a, int64_t b, int64_t c, int64_t d) {
  return (Desc4){data, data, 0, {a, b, c, d}, {b * c * d, c * d, d, 1}};
}

static const int64_t kX = (H + KH - 1) * (W + KH - 1) * C, kW = KH * KH * C * C, kY = H * W * C;

static void reference(const float *x, const float *w, double *ref) {
  for (int h = 0; h < H; ++h)
    for (int v = 0; v < W; ++v)
      for (int o = 0; o < C; ++o) {
        double s = 0;
        for (int kh = 0; kh < KH; ++kh)
          for (int kw = 0; kw < KH; ++kw)
            for (int i = 0; i < C; ++i)
              s += (double)x[((h + kh) * (W + KH - 1) + v + kw) * C + i] *
                   w[((kh * KH + kw) * C + i) * C + o];
        ref[(h * W + v) * C + o] = s;
      }
}

/* Calls the program on (x, w) and counts the elements that differ from
 * `ref` (or were left unwritten). */
static int wrong(PbcProgram *p, float *x, float *w, const double *ref) {
  float *y = malloc((size_t)kY * sizeof(float));
  for (int64_t i = 0; i < kY; ++i)
    y[i] = NAN;
  Desc4 dx = tensor4(x, 1, H + KH - 1, W + KH - 1, C), dw = tensor4(w, KH, KH, C, C),
        dy = tensor4(y, 1, H, W, C);
  void *args[] = {&dx, &dw, &dy};
  char *err = NULL;
  int bad = 0;
  if (!pbcProgramInvoke(p, 0, args, 3, &err)) {
    fprintf(stderr, "invoke: %s\n", err ? err : "");
    bad = (int)kY;
  }
  pbcMessageDestroy(err);
  for (int64_t i = 0; i < kY && !bad; ++i)
    bad += !(fabs(y[i] - ref[i]) <= 1e-4 * (1 + fabs(ref[i])));
  free(y);
  return bad;
}

typedef struct {
  PbcProgram *p;
  float *x, *w;
  const double *ref;
  int bad;
} Caller;

static void *callMany(void *data) {
  Caller *c = data;
  for (int i = 0; i < 20; ++i)
    c->bad += wrong(c->p, c->x, c->w, c->ref);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: invariant_test CPU_PLUGIN.so\n");
    return 2;
  }
  char pluginDir[4096], cacheDir[4096];
  testFolders(argv[1], "libpbc-invariant", pluginDir, cacheDir);
  PbcCompileOptions o = {.pluginDir = pluginDir, .optLevel = 3, .cacheDir = cacheDir};
  char *err = NULL;
  PbcProgram *p = pbcProgramCompile(kProgram, "invariant.mlir", &o, &err);
  CHECK(p, "compile failed: %s", err ? err : "");
  pbcMessageDestroy(err);
  if (!p)
    return 1;

  float *x = randomNonZero(kX), *w1 = randomNonZero(kW), *w2 = randomNonZero(kW);
  double *ref1 = malloc((size_t)kY * sizeof(double)), *ref2 = malloc((size_t)kY * sizeof(double));
  reference(x, w1, ref1);
  reference(x, w2, ref2);

  CHECK(wrong(p, x, w1, ref1) == 0, "first call (packs w1)");
  CHECK(wrong(p, x, w1, ref1) == 0, "second call (w1's packed tiles reused)");
  CHECK(wrong(p, x, w2, ref2) == 0, "another weight tensor (packed again)");
  CHECK(wrong(p, x, w1, ref1) == 0, "w1 again");

  /* A second program from the same text (the cached library): its own
   * packed tiles, while the first program runs in another thread. */
  err = NULL;
  PbcProgram *q = pbcProgramCompile(kProgram, "invariant.mlir", &o, &err);
  CHECK(q, "second compile failed: %s", err ? err : "");
  pbcMessageDestroy(err);
  if (q) {
    CHECK(strcmp(pbcProgramLibraryPath(p), pbcProgramLibraryPath(q)) == 0,
          "the second compile is not the cached library");
    Caller a = {p, x, w1, ref1, 0}, b = {q, x, w2, ref2, 0};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, callMany, &a);
    pthread_create(&tb, NULL, callMany, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(a.bad == 0 && b.bad == 0, "two programs at once: %d and %d wrong elements", a.bad,
          b.bad);
    pbcProgramDestroy(q);
  }
  pbcProgramDestroy(p);
  free(x), free(w1), free(w2), free(ref1), free(ref2);
  if (failures)
    fprintf(stderr, "%d failures\n", failures);
  else
    printf("invariant_test: all checks passed\n");
  return failures != 0;
}
