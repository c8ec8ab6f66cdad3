/* The text form of entry signatures, which `pbc --emit=lib --signatures=F`
 * writes and libpbc reads back (and keeps in its cache entries):
 *   entries N
 *   NAME NUM_INPUTS NUM_OUTPUTS      (per entry, then one line per argument:)
 *   ELEM_KIND RANK D0 D1 ...       (-1: the call's batch, pbc/batch_loop.h;
 *                                   -2 - s: size symbol s, pbc/symbolic_sizes.h)
 *   symbols K MAX0 ... MAXK-1       (each symbol's largest size; 0: any)
 *   end
 * See pbc/entry_sig.h. */
#include <stdlib.h>
#include <string.h>

#include "pbc/entry_sig.h"

bool pbcEntrySigsWrite(FILE *f, const PbcEntrySig *sigs, int n) {
  fprintf(f, "entries %d\n", n);
  for (int s = 0; s < n; ++s) {
    fprintf(f, "%s %d %d\n", sigs[s].name, sigs[s].numInputs, sigs[s].numOutputs);
    for (int i = 0; i < sigs[s].numInputs + sigs[s].numOutputs; ++i) {
      const PbcTensorType *t = pbcEntrySigArg(&sigs[s], i);
      fprintf(f, "%d %d", (int)t->elem, t->rank);
      for (int d = 0; d < t->rank; ++d)
        fprintf(f, " %lld", (long long)t->shape[d]);
      fprintf(f, "\n");
    }
    int k = PBC_MAX_SIZE_SYMBOLS;
    while (k > 0 && sigs[s].symbolMax[k - 1] == 0)
      --k;
    fprintf(f, "symbols %d", k);
    for (int i = 0; i < k; ++i)
      fprintf(f, " %lld", (long long)sigs[s].symbolMax[i]);
    fprintf(f, "\n");
  }
  fprintf(f, "end\n");
  return !ferror(f);
}

static bool readTensor(FILE *f, PbcTensorType *t) {
  int elem;
  if (fscanf(f, "%d %d", &elem, &t->rank) != 2 || t->rank < 0 || t->rank > PBC_MAX_RANK ||
      elem < 0 || elem > PBC_ELEM_I64)
    return false;
  t->elem = (PbcElemKind)elem;
  for (int d = 0; d < t->rank; ++d) {
    long long v;
    if (fscanf(f, "%lld", &v) != 1 || (v < 0 && v != PBC_DYNAMIC_SIZE && !PBC_SIZE_IS_SYMBOL(v)))
      return false;
    t->shape[d] = v;
  }
  return true;
}

PbcEntrySig *pbcEntrySigsRead(FILE *f, int *n) {
  if (fscanf(f, " entries %d", n) != 1 || *n < 0 || *n > 4096)
    return NULL;
  PbcEntrySig *sigs = calloc((size_t)(*n ? *n : 1), sizeof(PbcEntrySig));
  bool ok = sigs != NULL;
  for (int s = 0; ok && s < *n; ++s) {
    PbcEntrySig *g = &sigs[s];
    ok = fscanf(f, "%1023s %d %d", g->name, &g->numInputs, &g->numOutputs) == 3 &&
         g->numInputs >= 0 && g->numOutputs >= 0 && g->numInputs <= PBC_MAX_ARGS &&
         g->numOutputs <= PBC_MAX_ARGS;
    for (int i = 0; ok && i < g->numInputs + g->numOutputs; ++i)
      ok = readTensor(f, i < g->numInputs ? &g->inputs[i] : &g->outputs[i - g->numInputs]);
    int k = -1;
    ok = ok && fscanf(f, " symbols %d", &k) == 1 && k >= 0 && k <= PBC_MAX_SIZE_SYMBOLS;
    for (int i = 0; ok && i < k; ++i) {
      long long v;
      ok = fscanf(f, "%lld", &v) == 1 && v >= 0;
      g->symbolMax[i] = v;
    }
  }
  char end[8] = "";
  ok = ok && fscanf(f, "%7s", end) == 1 && strcmp(end, "end") == 0;
  if (!ok) {
    free(sigs);
    return NULL;
  }
  return sigs;
}
