/* Calling a loaded program's entries with their arguments checked against
 * the entry's signature first. See pbc/libpbc.h. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbc/libpbc.h"
#include "program.h"

static const PbcEntrySig *entrySig(const PbcProgram *p, int e, char **error) {
  if (!p) {
    pbcLibSetError(error, pbcLibMessage("libpbc: no program (NULL)"));
    return NULL;
  }
  if (e < 0 || e >= p->numEntries) {
    pbcLibSetError(error, pbcLibMessage("libpbc: no entry point %d (the program has %d)", e,
                                        p->numEntries));
    return NULL;
  }
  return &p->sigs[e];
}

static void describe(const PbcTensorType *t, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = 0;
  for (int d = 0; d < t->rank && used < len; ++d)
    used += t->shape[d] == PBC_DYNAMIC_SIZE
                ? (size_t)snprintf(buf + used, len - used, "?x")
            : PBC_SIZE_IS_SYMBOL(t->shape[d])
                ? (size_t)snprintf(buf + used, len - used, "s%dx", PBC_SYMBOL_OF_SIZE(t->shape[d]))
                : (size_t)snprintf(buf + used, len - used, "%lldx", (long long)t->shape[d]);
  if (used < len)
    snprintf(buf + used, len - used, "%s", pbcElemName(t->elem));
}

/* Whether size `have` fits `want`: equal, or any size for the batch
 * (PBC_DYNAMIC_SIZE) or a size symbol (PBC_SIZE_SYMBOL(s)), which every
 * such dimension of one call shares (given[0]: the batch's, given[1 + s]:
 * symbol s's; -1 until the first). A symbol's size is at least 1, and at
 * most its largest (g->symbolMax) where it has one. */
_Static_assert(PBC_ARG_BATCH == PBC_DYNAMIC_SIZE, "libpbc.h and entry_sig.h name one batch size");
_Static_assert(PBC_ARG_SYMBOL(3) == PBC_SIZE_SYMBOL(3), "libpbc.h and entry_sig.h name symbols alike");

typedef int64_t GivenSizes[1 + PBC_MAX_SIZE_SYMBOLS];

static void givenSizesInit(GivenSizes given) {
  for (int i = 0; i < 1 + PBC_MAX_SIZE_SYMBOLS; ++i)
    given[i] = -1;
}

static int64_t *givenSlot(GivenSizes given, int64_t want) {
  if (want == PBC_DYNAMIC_SIZE)
    return &given[0];
  return PBC_SIZE_IS_SYMBOL(want) ? &given[1 + PBC_SYMBOL_OF_SIZE(want)] : NULL;
}

static bool sizeFits(const PbcEntrySig *g, int64_t want, int64_t have, GivenSizes given) {
  int64_t *slot = givenSlot(given, want);
  if (!slot)
    return have == want;
  bool symbol = PBC_SIZE_IS_SYMBOL(want);
  int64_t most = symbol ? g->symbolMax[PBC_SYMBOL_OF_SIZE(want)] : 0;
  if (have < (symbol ? 1 : 0) || (most > 0 && have > most) || (*slot >= 0 && have != *slot))
    return false;
  *slot = have;
  return true;
}

/* Whether strides[0..rank) lay out `shape` row-major, as every entry
 * reads and writes its arguments (the code has the layout built in and
 * does not read a descriptor's strides): a dimension of size 1 may have
 * any stride, and a batch's (PBC_DYNAMIC_SIZE) leading stride is the
 * glue's to follow. */
static bool rowMajor(const PbcTensorType *t, const int64_t *shape, const int64_t *strides) {
  int64_t want = 1;
  for (int d = t->rank - 1; d >= 0; --d) {
    if (shape[d] == 0)
      return true; /* no elements */
    if (shape[d] != 1 && strides[d] != want && !(d == 0 && t->shape[0] == PBC_DYNAMIC_SIZE))
      return false;
    want *= shape[d];
  }
  return true;
}

static const char *argName(const PbcEntrySig *g, int i, char *buf, size_t len) {
  snprintf(buf, len, "%s %d", i < g->numInputs ? "input" : "output",
           i < g->numInputs ? i : i - g->numInputs);
  return buf;
}

/* The byte range [lo, hi) a tensor's elements occupy. */
static void extent(const PbcTensor *t, size_t elemSize, uintptr_t *lo, uintptr_t *hi) {
  intptr_t min = 0, max = 0;
  int64_t stride = 1;
  for (int d = t->rank - 1; d >= 0; --d) {
    int64_t s = t->strides ? t->strides[d] : stride;
    if (t->shape[d] == 0) {
      *lo = *hi = (uintptr_t)t->data;
      return;
    }
    if (s >= 0)
      max += (intptr_t)(s * (t->shape[d] - 1));
    else
      min += (intptr_t)(s * (t->shape[d] - 1));
    stride *= t->shape[d];
  }
  *lo = (uintptr_t)t->data + (uintptr_t)(min * (intptr_t)elemSize);
  *hi = (uintptr_t)t->data + (uintptr_t)((max + 1) * (intptr_t)elemSize);
}

bool pbcProgramCall(const PbcProgram *p, int e, const PbcTensor *args, int numArgs,
                    char **error) {
  const PbcEntrySig *g = entrySig(p, e, error);
  if (!g)
    return false;
  int n = g->numInputs + g->numOutputs;
  if (numArgs != n || (n && !args)) {
    pbcLibSetError(error, pbcLibMessage("libpbc: @%s takes %d tensors (%d inputs, %d outputs), "
                                        "not %d", g->name, n, g->numInputs, g->numOutputs,
                                        args ? numArgs : 0));
    return false;
  }
  char name[32], want[256];
  GivenSizes given;
  givenSizesInit(given);
  for (int i = 0; i < n; ++i) {
    const PbcTensorType *t = pbcEntrySigArg(g, i);
    const PbcTensor *a = &args[i];
    describe(t, want, sizeof(want));
    bool same = a->elem && strcmp(a->elem, pbcElemName(t->elem)) == 0 && a->rank == t->rank &&
                (a->rank == 0 || a->shape);
    GivenSizes before;
    memcpy(before, given, sizeof(GivenSizes));
    int bad = -1;
    for (int d = 0; same && d < t->rank; ++d)
      if (!(same = sizeFits(g, t->shape[d], a->shape[d], given)))
        bad = d;
    if (!same) {
      char got[64] = "";
      int64_t *slot = bad >= 0 ? givenSlot(before, t->shape[bad]) : NULL;
      if (slot && *slot >= 0 && t->shape[bad] == PBC_DYNAMIC_SIZE)
        snprintf(got, sizeof(got), " (the batch is %lld)", (long long)*slot);
      else if (slot && *slot >= 0)
        snprintf(got, sizeof(got), " (s%d is %lld)", PBC_SYMBOL_OF_SIZE(t->shape[bad]),
                 (long long)*slot);
      else if (slot && PBC_SIZE_IS_SYMBOL(t->shape[bad]) &&
               g->symbolMax[PBC_SYMBOL_OF_SIZE(t->shape[bad])] > 0)
        snprintf(got, sizeof(got), " (s%d from 1 to %lld)", PBC_SYMBOL_OF_SIZE(t->shape[bad]),
                 (long long)g->symbolMax[PBC_SYMBOL_OF_SIZE(t->shape[bad])]);
      pbcLibSetError(error, pbcLibMessage("libpbc: @%s %s: expected %s%s, got a rank-%d %s tensor",
                                          g->name, argName(g, i, name, sizeof(name)), want, got,
                                          a->rank, a->elem ? a->elem : "(no type)"));
      return false;
    }
    if (a->strides && !rowMajor(t, a->shape, a->strides)) {
      pbcLibSetError(error, pbcLibMessage("libpbc: @%s %s: its strides are not row-major; pbc's "
                                          "code reads and writes row-major memory (pass a "
                                          "contiguous copy)",
                                          g->name, argName(g, i, name, sizeof(name))));
      return false;
    }
    if (!a->data && pbcTensorNumElements(t) > 0) {
      pbcLibSetError(error, pbcLibMessage("libpbc: @%s %s: no data (NULL)", g->name,
                                          argName(g, i, name, sizeof(name))));
      return false;
    }
  }
  /* An output sharing memory with another argument would be read after it
   * was partly written: a wrong answer, not an error, so refuse it. */
  for (int o = g->numInputs; o < n; ++o) {
    uintptr_t lo, hi;
    extent(&args[o], pbcElemSize(pbcEntrySigArg(g, o)->elem), &lo, &hi);
    for (int i = 0; i < n && lo < hi; ++i) {
      uintptr_t lo2, hi2;
      if (i == o)
        continue;
      extent(&args[i], pbcElemSize(pbcEntrySigArg(g, i)->elem), &lo2, &hi2);
      if (lo2 < hi2 && lo < hi2 && lo2 < hi) {
        char other[32];
        pbcLibSetError(error, pbcLibMessage("libpbc: @%s %s overlaps %s in memory", g->name,
                                            argName(g, o, name, sizeof(name)),
                                            argName(g, i, other, sizeof(other))));
        return false;
      }
    }
  }
  /* Descriptors: {allocated, aligned, offset, sizes[rank], strides[rank]}. */
  int64_t(*desc)[3 + 2 * PBC_MAX_RANK] = malloc((size_t)(n ? n : 1) * sizeof(*desc));
  void **ptrs = malloc((size_t)(n ? n : 1) * sizeof(void *));
  for (int i = 0; i < n; ++i) {
    const PbcTensor *a = &args[i];
    memcpy(&desc[i][0], &a->data, sizeof(void *));
    memcpy(&desc[i][1], &a->data, sizeof(void *));
    desc[i][2] = 0;
    int64_t stride = 1;
    for (int d = a->rank - 1; d >= 0; --d) {
      desc[i][3 + d] = a->shape[d];
      desc[i][3 + a->rank + d] = a->strides ? a->strides[d] : stride;
      stride *= a->shape[d];
    }
    ptrs[i] = desc[i];
  }
  p->packed[e](ptrs);
  free(ptrs);
  free(desc);
  return true;
}

bool pbcProgramInvoke(const PbcProgram *p, int e, void **descriptors, int numDescriptors,
                      char **error) {
  const PbcEntrySig *g = entrySig(p, e, error);
  if (!g)
    return false;
  int n = g->numInputs + g->numOutputs;
  if (numDescriptors != n || (n && !descriptors)) {
    pbcLibSetError(error, pbcLibMessage("libpbc: @%s takes %d descriptors, not %d", g->name, n,
                                        descriptors ? numDescriptors : 0));
    return false;
  }
  char name[32], want[256];
  GivenSizes given;
  givenSizesInit(given);
  for (int i = 0; i < n; ++i) {
    const PbcTensorType *t = pbcEntrySigArg(g, i);
    const int64_t *d = descriptors[i];
    bool ok = d != NULL;
    void *aligned = NULL;
    if (ok)
      memcpy(&aligned, &d[1], sizeof(void *));
    for (int k = 0; ok && k < t->rank; ++k)
      ok = sizeFits(g, t->shape[k], d[3 + k], given);
    /* A static entry's code reads neither offset nor strides: both must
     * be what it assumes (a batch's glue follows them). */
    bool batched = t->rank > 0 && t->shape[0] == PBC_DYNAMIC_SIZE;
    bool laidOut = !ok || ((batched || d[2] == 0) && rowMajor(t, &d[3], &d[3 + t->rank]));
    if (!ok || !laidOut || (!aligned && pbcTensorNumElements(t) > 0)) {
      describe(t, want, sizeof(want));
      pbcLibSetError(error, pbcLibMessage("libpbc: @%s %s: %s; expected a %s memref descriptor%s",
                                          g->name, argName(g, i, name, sizeof(name)),
                                          !d ? "no descriptor (NULL)"
                                          : !ok ? "wrong sizes"
                                          : !laidOut ? "an offset or strides other than "
                                                       "row-major"
                                                     : "no data (NULL)",
                                          want, !laidOut ? " (offset 0, row-major)" : ""));
      return false;
    }
  }
  p->packed[e](descriptors);
  return true;
}
