/* Float conversions LLVM calls instead of inlining on x86-64 chips without
 * a bf16 conversion instruction (x86-64-v3, -v4 without AVX512-BF16, and
 * f64 -> bf16 everywhere). They used to come from MLIR's runner utilities,
 * which bring libMLIR and libLLVM into every process that loads a compiled
 * program. Round to nearest even, NaNs stay (quiet) NaNs, as compiler-rt.
 *
 * ABI: LLVM passes and returns bf16 in the low 16 bits of an XMM register,
 * as it does _Float16, so the result is declared _Float16 and carries the
 * bf16 bits. */
#include <stdint.h>
#include <string.h>

#define PBC_EXPORT __attribute__((visibility("default")))

static _Float16 bits16(uint16_t b) {
  _Float16 h;
  memcpy(&h, &b, sizeof(h));
  return h;
}

static uint16_t floatToBf16Bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((u >> 16) | 0x40); /* NaN: keep sign and payload top, quiet */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

PBC_EXPORT _Float16 __truncsfbf2(float f) { return bits16(floatToBf16Bits(f)); }

/* f64 -> bf16 in one rounding: f64 -> f32 rounded to odd (truncate, then
 * set the last bit when inexact) keeps enough information for the second
 * rounding to be the correct one (f32 has 16 more bits than bf16). */
PBC_EXPORT _Float16 __truncdfbf2(double d) {
  if (d != d)
    return __truncsfbf2((float)d);
  float f = (float)d; /* nearest; step toward zero if it rounded away */
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  double back = (double)f;
  if (back != d) {
    if ((back > d && d > 0) || (back < d && d < 0) || (u & 0x7fffffffu) == 0x7f800000u)
      u -= 1; /* magnitude one step down (from infinity: to the largest float) */
    u |= 1;
  }
  memcpy(&f, &u, sizeof(f));
  return __truncsfbf2(f);
}
