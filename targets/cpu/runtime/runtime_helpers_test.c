/* The runtime's conversion and copy helpers against independent references:
 * f32 -> bf16 and f64 -> bf16 on edge values and random bit patterns (the
 * reference searches the bf16 neighbours of the value in double arithmetic
 * and rounds half to even), and memrefCopy between random strided views
 * (the reference indexes element by element). */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Float16 __truncsfbf2(float f);
_Float16 __truncdfbf2(double d);
typedef struct {
  int64_t rank;
  void *descriptor;
} UnrankedMemRef;
void memrefCopy(int64_t elemSize, UnrankedMemRef *src, UnrankedMemRef *dst);

static int failures;

static uint16_t bits(_Float16 h) {
  uint16_t b;
  memcpy(&b, &h, sizeof(b));
  return b;
}

/* The value of a non-negative bf16 pattern; 0x7f80 (infinity) counts as
 * 2^128, where rounding overflows to it. */
static double bf16Value(uint16_t b) {
  if (b >= 0x7f80)
    return ldexp(1.0, 128);
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

static uint16_t referenceBf16(double d) {
  if (isnan(d))
    return 0x7fc0;
  uint16_t sign = signbit(d) ? 0x8000 : 0;
  double a = fabs(d);
  uint16_t lo = 0, hi = 0x7f80; /* largest pattern with value <= a */
  while (lo < hi) {
    uint16_t mid = (uint16_t)((lo + hi + 1) / 2);
    if (bf16Value(mid) <= a)
      lo = mid;
    else
      hi = (uint16_t)(mid - 1);
  }
  if (lo == 0x7f80 || bf16Value(lo) == a)
    return sign | lo;
  double below = a - bf16Value(lo), above = bf16Value((uint16_t)(lo + 1)) - a;
  uint16_t r = below < above ? lo : above < below ? (uint16_t)(lo + 1) : (lo & 1) ? lo + 1 : lo;
  return sign | r;
}

static void checkBf16(double d, bool fromFloat) {
  uint16_t got = bits(fromFloat ? __truncsfbf2((float)d) : __truncdfbf2(d));
  uint16_t want = referenceBf16(d);
  bool same = isnan(d) ? (got & 0x7fff) > 0x7f80 : got == want;
  if (!same && failures++ < 10)
    fprintf(stderr, "FAIL %s(%a) = 0x%04x, expected 0x%04x\n",
            fromFloat ? "__truncsfbf2" : "__truncdfbf2", d, got, want);
}

static void checkCopy(void) {
  enum { R = 3 };
  int64_t sizes[R], srcStrides[R], dstStrides[R];
  for (int d = 0; d < R; ++d)
    sizes[d] = 1 + rand() % 7;
  /* Random layouts: a permutation of contiguous strides, padded. */
  int64_t s = 1 + rand() % 2, t = 1;
  for (int d = R - 1; d >= 0; --d) {
    srcStrides[d] = s;
    s *= sizes[d] + rand() % 3;
    dstStrides[d] = t;
    t *= sizes[d] + rand() % 2;
  }
  float *src = malloc((size_t)(s + 8) * sizeof(float)), *dst = malloc((size_t)(t + 8) * sizeof(float));
  for (int64_t i = 0; i < s + 8; ++i)
    src[i] = (float)rand() / 7.0f + 1.0f;
  for (int64_t i = 0; i < t + 8; ++i)
    dst[i] = -1.0f;
  int64_t srcOffset = rand() % 4, dstOffset = rand() % 4;
  struct {
    float *allocated, *aligned;
    int64_t offset, sizes[R], strides[R];
  } sd = {src, src, srcOffset, {0}, {0}}, dd = {dst, dst, dstOffset, {0}, {0}};
  memcpy(sd.sizes, sizes, sizeof(sizes));
  memcpy(dd.sizes, sizes, sizeof(sizes));
  memcpy(sd.strides, srcStrides, sizeof(sizes));
  memcpy(dd.strides, dstStrides, sizeof(sizes));
  UnrankedMemRef us = {R, &sd}, ud = {R, &dd};
  memrefCopy(sizeof(float), &us, &ud);
  for (int64_t i = 0; i < sizes[0]; ++i)
    for (int64_t j = 0; j < sizes[1]; ++j)
      for (int64_t k = 0; k < sizes[2]; ++k) {
        float want = src[srcOffset + i * srcStrides[0] + j * srcStrides[1] + k * srcStrides[2]];
        float got = dst[dstOffset + i * dstStrides[0] + j * dstStrides[1] + k * dstStrides[2]];
        if (got != want && failures++ < 10)
          fprintf(stderr, "FAIL memrefCopy at (%ld,%ld,%ld)\n", (long)i, (long)j, (long)k);
      }
  free(src);
  free(dst);
}

int main(void) {
  srand((unsigned)time(NULL));
  double edges[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, 3.0e38, 3.3961e38,
                    3.3962e38, 3.3895313892515355e38, 3.4e38, 1e-45, 1.2e-38, 1e-40,
                    1.00390625, 1.005859375, 1.0078125 + 0x1p-30, 1.00390625 - 0x1p-40,
                    1e300, -1e300, 1e-300};
  for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); ++i) {
    checkBf16(edges[i], true);
    checkBf16(edges[i], false);
  }
  for (int i = 0; i < 1000000; ++i) {
    uint32_t u = (uint32_t)rand() << 16 ^ (uint32_t)rand();
    float f;
    memcpy(&f, &u, sizeof(f));
    checkBf16(f, true);
    uint64_t v = (uint64_t)u << 32 ^ (uint64_t)rand() << 8 ^ (uint64_t)rand();
    double d;
    memcpy(&d, &v, sizeof(d));
    checkBf16(ldexp(d / (fabs(d) + 1e-300), rand() % 300 - 150), false);
    /* Near bf16 halfway points, where double rounding would go wrong. */
    checkBf16((double)f * (1.0 + ldexp((double)(rand() % 5) - 2.0, -40)), false);
  }
  for (int i = 0; i < 2000; ++i)
    checkCopy();
  if (failures)
    fprintf(stderr, "%d failures\n", failures);
  else
    printf("runtime helpers: all checks passed\n");
  return failures != 0;
}
