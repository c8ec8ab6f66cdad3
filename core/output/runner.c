/* JIT execution of compiled entry points, with inputs, checks and compares. */
#include "pbc/runner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pbc/isolate.h"

bool pbcJitCreate(MlirModule m, int optLevel, const PbcTargetPlugin *plugin,
                  MlirExecutionEngine *out) {
  MlirStringRef libs[16];
  int n = 0;
  for (const char *const *l = plugin ? plugin->runtime_libraries : NULL;
       l && *l && n < 16; ++l)
    libs[n++] = mlirStringRefCreateFromCString(*l);
  pbcCrashContextSetPhase("JIT compilation");
  *out = mlirExecutionEngineCreate(m, optLevel, n, libs, false, false);
  if (mlirExecutionEngineIsNull(*out)) {
    fprintf(stderr, "pbc: error: JIT compilation failed\n");
    return false;
  }
  mlirExecutionEngineInitialize(*out);
  return true;
}

static uint16_t f32ToHalfBits(float f) {
  _Float16 h = (_Float16)f;
  uint16_t u;
  memcpy(&u, &h, 2);
  return u;
}
static float halfBitsToF32(uint16_t u) {
  _Float16 h;
  memcpy(&h, &u, 2);
  return (float)h;
}
static uint16_t f32ToBf16Bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
  return (uint16_t)(u >> 16);
}
static float bf16BitsToF32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

double pbcElemLoad(const void *buf, PbcElemKind k, int64_t i) {
  switch (k) {
  case PBC_ELEM_F32: return ((const float *)buf)[i];
  case PBC_ELEM_F16: return halfBitsToF32(((const uint16_t *)buf)[i]);
  case PBC_ELEM_BF16: return bf16BitsToF32(((const uint16_t *)buf)[i]);
  case PBC_ELEM_F64: return ((const double *)buf)[i];
  case PBC_ELEM_I1: return ((const uint8_t *)buf)[i] & 1;
  case PBC_ELEM_I8: return ((const int8_t *)buf)[i];
  case PBC_ELEM_I16: return ((const int16_t *)buf)[i];
  case PBC_ELEM_I32: return ((const int32_t *)buf)[i];
  case PBC_ELEM_I64: return (double)((const int64_t *)buf)[i];
  }
  return 0;
}

/* splitmix64: small, good enough, reproducible from the printed seed. */
static uint64_t nextRandom(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [-1, -0.1] U [0.1, 1]: never zero, so a dropped term shows. */
static float randomNonZero(uint64_t *s) {
  uint64_t r = nextRandom(s);
  float mag = 0.1f + 0.9f * (float)((r >> 11) & 0xffffff) / (float)0xffffff;
  return (r & 1) ? -mag : mag;
}

static void fillRandom(void *buf, PbcElemKind k, int64_t n, uint64_t *s) {
  for (int64_t i = 0; i < n; ++i) {
    float v = randomNonZero(s);
    int iv = (int)(nextRandom(s) % 7) + 1;
    if (nextRandom(s) & 1)
      iv = -iv;
    switch (k) {
    case PBC_ELEM_F32: ((float *)buf)[i] = v; break;
    case PBC_ELEM_F16: ((uint16_t *)buf)[i] = f32ToHalfBits(v); break;
    case PBC_ELEM_BF16: ((uint16_t *)buf)[i] = f32ToBf16Bits(v); break;
    case PBC_ELEM_F64: ((double *)buf)[i] = v; break;
    case PBC_ELEM_I1: ((uint8_t *)buf)[i] = (uint8_t)(nextRandom(s) & 1); break;
    case PBC_ELEM_I8: ((int8_t *)buf)[i] = (int8_t)iv; break;
    case PBC_ELEM_I16: ((int16_t *)buf)[i] = (int16_t)iv; break;
    case PBC_ELEM_I32: ((int32_t *)buf)[i] = iv; break;
    case PBC_ELEM_I64: ((int64_t *)buf)[i] = iv; break;
    }
  }
}

/* Sentinels: NaNs with a payload computations don't produce, and an
 * unlikely integer pattern. */
static const uint8_t kSentinelByte = 0xA5;
static void fillSentinel(void *buf, PbcElemKind k, int64_t n) {
  size_t es = pbcElemSize(k);
  if (k == PBC_ELEM_F32) {
    for (int64_t i = 0; i < n; ++i)
      ((uint32_t *)buf)[i] = 0x7fa5a5a5u;
  } else if (k == PBC_ELEM_F16) {
    for (int64_t i = 0; i < n; ++i)
      ((uint16_t *)buf)[i] = 0x7da5u;
  } else if (k == PBC_ELEM_BF16) {
    for (int64_t i = 0; i < n; ++i)
      ((uint16_t *)buf)[i] = 0x7fa5u;
  } else {
    memset(buf, kSentinelByte, (size_t)n * es);
  }
}

static bool isSentinel(const void *buf, PbcElemKind k, int64_t i) {
  size_t es = pbcElemSize(k);
  const uint8_t *p = (const uint8_t *)buf + (size_t)i * es;
  if (k == PBC_ELEM_F32)
    return *(const uint32_t *)p == 0x7fa5a5a5u;
  if (k == PBC_ELEM_F16)
    return *(const uint16_t *)p == 0x7da5u;
  if (k == PBC_ELEM_BF16)
    return *(const uint16_t *)p == 0x7fa5u;
  if (k == PBC_ELEM_I1)
    return false; /* one bit cannot carry a sentinel */
  for (size_t b = 0; b < es; ++b)
    if (p[b] != kSentinelByte)
      return false;
  return true;
}

static void *allocBuffer(const PbcTensorType *t) {
  size_t bytes = (size_t)pbcTensorNumElements(t) * pbcElemSize(t->elem);
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes ? bytes : 64)) {
    fprintf(stderr, "pbc: error: cannot allocate %zu bytes for a buffer of the run\n", bytes);
    return NULL;
  }
  return p;
}

/* Buffers a run of sig takes: its inputs, and its outputs twice (the
 * reference run's too). Saturates instead of overflowing. */
static uint64_t runBytes(const PbcEntrySig *sig) {
  uint64_t total = 0;
  for (int k = 0; k < sig->numInputs + 2 * sig->numOutputs; ++k) {
    const PbcTensorType *t = k < sig->numInputs ? &sig->inputs[k]
                                                : &sig->outputs[(k - sig->numInputs) / 2];
    uint64_t n = pbcElemSize(t->elem);
    for (int d = 0; d < t->rank; ++d)
      n = t->shape[d] && n > UINT64_MAX / (uint64_t)t->shape[d] ? UINT64_MAX
                                                                : n * (uint64_t)t->shape[d];
    total = total > UINT64_MAX - n ? UINT64_MAX : total + n;
  }
  return total;
}

bool pbcBuffersCreate(const PbcEntrySig *sig, uint64_t seed, PbcBuffers *b) {
  memset(b, 0, sizeof(*b));
  /* Past half the machine's memory the run would end in the OOM killer's
   * SIGKILL (after minutes of filling inputs), not in a message. */
  uint64_t need = runBytes(sig);
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  uint64_t have = pages > 0 && pageSize > 0 ? (uint64_t)pages * (uint64_t)pageSize : 0;
  if (have && need > have / 2) {
    fprintf(stderr,
            "pbc: error: cannot run @%s: its inputs and outputs take %.3g GiB, more than half "
            "of this machine's %.3g GiB\n",
            sig->name, (double)need / (1 << 30), (double)have / (1 << 30));
    return false;
  }
  uint64_t s = seed;
  b->numInputs = sig->numInputs;
  for (int i = 0; i < sig->numInputs; ++i) {
    b->inputs[i] = allocBuffer(&sig->inputs[i]);
    if (!b->inputs[i]) {
      pbcBuffersDestroy(b, true);
      return false;
    }
    fillRandom(b->inputs[i], sig->inputs[i].elem,
               pbcTensorNumElements(&sig->inputs[i]), &s);
  }
  PbcBuffers tmp;
  if (!pbcBuffersCloneInputs(sig, b, &tmp)) {
    pbcBuffersDestroy(b, true);
    return false;
  }
  *b = tmp;
  return true;
}

bool pbcBuffersCloneInputs(const PbcEntrySig *sig, const PbcBuffers *from,
                           PbcBuffers *b) {
  PbcBuffers r;
  memset(&r, 0, sizeof(r));
  r.numInputs = from->numInputs;
  memcpy(r.inputs, from->inputs, sizeof(r.inputs));
  for (int i = 0; i < sig->numOutputs; ++i) {
    r.outputs[i] = allocBuffer(&sig->outputs[i]);
    if (!r.outputs[i]) {
      pbcBuffersDestroy(&r, false);
      memset(b, 0, sizeof(*b));
      return false;
    }
    r.numOutputs = i + 1;
    fillSentinel(r.outputs[i], sig->outputs[i].elem,
                 pbcTensorNumElements(&sig->outputs[i]));
  }
  *b = r;
  return true;
}

void pbcBuffersDestroy(PbcBuffers *b, bool ownInputs) {
  if (ownInputs)
    for (int i = 0; i < b->numInputs; ++i)
      free(b->inputs[i]);
  for (int i = 0; i < b->numOutputs; ++i)
    free(b->outputs[i]);
  memset(b, 0, sizeof(*b));
}

/* MLIR's memref descriptor for any rank: {ptr, ptr, offset, sizes, strides}. */
typedef struct Descriptor {
  void *allocated, *aligned;
  int64_t offset;
  int64_t sizesAndStrides[2 * PBC_MAX_RANK];
} Descriptor;

static void describe(const PbcTensorType *t, void *data, Descriptor *d) {
  d->allocated = d->aligned = data;
  d->offset = 0;
  int64_t stride = 1;
  for (int i = t->rank - 1; i >= 0; --i) {
    d->sizesAndStrides[i] = t->shape[i];
    d->sizesAndStrides[t->rank + i] = stride;
    stride *= t->shape[i];
  }
}

bool pbcInvoke(MlirExecutionEngine jit, const PbcEntrySig *sig, PbcBuffers *b) {
  Descriptor *descs = calloc(2 * PBC_MAX_ARGS, sizeof(Descriptor));
  void **descPtrs = calloc(2 * PBC_MAX_ARGS, sizeof(void *));
  void **args = calloc(2 * PBC_MAX_ARGS, sizeof(void *));
  int n = 0;
  for (int i = 0; i < sig->numInputs; ++i, ++n)
    describe(&sig->inputs[i], b->inputs[i], &descs[n]);
  for (int i = 0; i < sig->numOutputs; ++i, ++n)
    describe(&sig->outputs[i], b->outputs[i], &descs[n]);
  for (int i = 0; i < n; ++i) {
    descPtrs[i] = &descs[i];
    args[i] = &descPtrs[i];
  }
  /* InvokePacked finds the packed wrapper of _mlir_ciface_<name> itself. */
  pbcCrashContextSetRunningProgram(true);
  MlirLogicalResult r = mlirExecutionEngineInvokePacked(
      jit, mlirStringRefCreateFromCString(sig->name), args);
  pbcCrashContextSetRunningProgram(false);
  free(descs);
  free(descPtrs);
  free(args);
  if (mlirLogicalResultIsFailure(r)) {
    fprintf(stderr, "pbc: error: cannot call '@%s' in the compiled code\n", sig->name);
    return false;
  }
  return true;
}

int64_t pbcCountUnwritten(const PbcEntrySig *sig, const PbcBuffers *b) {
  int64_t n = 0;
  for (int o = 0; o < sig->numOutputs; ++o) {
    int64_t count = pbcTensorNumElements(&sig->outputs[o]);
    for (int64_t i = 0; i < count; ++i)
      n += isSentinel(b->outputs[o], sig->outputs[o].elem, i);
  }
  return n;
}

/* Tolerances per element type: relative to the element and to the output's
 * magnitude (reassociated sums lose absolute, not relative, precision). */
static void tolerances(PbcElemKind k, double *rtol, double *atolScale) {
  switch (k) {
  case PBC_ELEM_F64: *rtol = 1e-9; *atolScale = 1e-10; break;
  case PBC_ELEM_F32: *rtol = 1e-4; *atolScale = 1e-5; break;
  case PBC_ELEM_F16: *rtol = 1e-2; *atolScale = 1e-2; break;
  case PBC_ELEM_BF16: *rtol = 4e-2; *atolScale = 4e-2; break;
  default: *rtol = 0; *atolScale = 0; break;
  }
}

void pbcCompareOutputs(const PbcEntrySig *sig, const PbcBuffers *got,
                       const PbcBuffers *want, PbcCompare *out) {
  memset(out, 0, sizeof(*out));
  out->firstBadIndex = -1;
  for (int o = 0; o < sig->numOutputs; ++o) {
    PbcElemKind k = sig->outputs[o].elem;
    int64_t n = pbcTensorNumElements(&sig->outputs[o]);
    double scale = 0;
    for (int64_t i = 0; i < n; ++i) {
      double w = fabs(pbcElemLoad(want->outputs[o], k, i));
      if (isfinite(w) && w > scale)
        scale = w;
    }
    double rtol, atolScale;
    tolerances(k, &rtol, &atolScale);
    if (rtol > 0) { /* a float output: as exact as the coarsest float it went through */
      double r2, a2;
      tolerances(sig->narrowestFloat, &r2, &a2);
      rtol = rtol > r2 ? rtol : r2;
      atolScale = atolScale > a2 ? atolScale : a2;
    }
    double atol = atolScale * (scale > 1 ? scale : 1);
    for (int64_t i = 0; i < n; ++i) {
      double a = pbcElemLoad(got->outputs[o], k, i);
      double b = pbcElemLoad(want->outputs[o], k, i);
      if (isnan(a) && isnan(b))
        continue;
      /* Non-finite values match only exactly (the same infinity): the
       * tolerance rtol * |b| would accept anything where b is infinite. */
      double d = (!isfinite(a) || !isfinite(b)) ? (a == b ? 0 : INFINITY) : fabs(a - b);
      double rel = d / fmax(fabs(b), 1e-30);
      if (d > out->maxAbsErr)
        out->maxAbsErr = d;
      if (rel > out->maxRelErr)
        out->maxRelErr = rel;
      if (!(d <= atol + rtol * fabs(b))) {
        if (out->mismatches++ == 0) {
          out->firstBadIndex = i;
          out->firstBadOutput = o;
          out->firstBadGot = a;
          out->firstBadWant = b;
        }
      }
    }
  }
}
