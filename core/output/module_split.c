/* Splitting an LLVM module for parallel code generation: see
 * output/module_split.h. */
#include "output/module_split.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llvm-c/Comdat.h"
#include "llvm-c/Core.h"
#include "pbc-ext/split_module.h"
#include "pbc/ptr_map.h"

typedef struct Split {
  LLVMValueRef *globals; /* defined functions first, then defined variables */
  int numFunctions, numGlobals;
  PbcPtrMap index;       /* global -> position in globals[] */
  int *parent;           /* union-find over functions (direct calls) */
  int *part;             /* global -> part */
  int currentPart;       /* for the clone filter */
} Split;

int pbcUnionFindRoot(int *parent, int i) {
  while (parent[i] != i)
    i = parent[i] = parent[parent[i]];
  return i;
}

static bool isDefinedGlobal(LLVMValueRef v) {
  return LLVMIsAGlobalValue(v) && !LLVMIsDeclaration(v);
}

bool pbcLlvmIsLocal(LLVMValueRef gv) {
  LLVMLinkage l = LLVMGetLinkage(gv);
  return l == LLVMInternalLinkage || l == LLVMPrivateLinkage;
}

/* Adds to *mask the parts of the functions and variables that use v,
 * looking through constant expressions. */
static void collectUserParts(const Split *s, LLVMValueRef v, uint64_t *mask, int depth) {
  for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u)) {
    LLVMValueRef user = LLVMGetUser(u);
    if (LLVMIsAInstruction(user)) {
      LLVMValueRef f = LLVMGetBasicBlockParent(LLVMGetInstructionParent(user));
      int g = pbcPtrMapGet(&s->index, f);
      if (g >= 0)
        *mask |= 1ull << s->part[g];
    } else if (LLVMIsAGlobalValue(user)) {
      int g = pbcPtrMapGet(&s->index, user);
      if (g >= 0)
        *mask |= 1ull << s->part[g];
    } else if (LLVMIsAConstant(user) && depth < 64) {
      collectUserParts(s, user, mask, depth + 1);
    }
  }
}

static int firstPart(uint64_t mask) {
  for (int p = 0; p < 64; ++p)
    if (mask >> p & 1)
      return p;
  return 0;
}

static bool keepDefinition(void *user, LLVMValueRef gv) {
  const Split *s = user;
  int g = pbcPtrMapGet(&s->index, gv);
  return g >= 0 && s->part[g] == s->currentPart;
}

static long instructionCount(LLVMValueRef f) {
  long n = 0;
  for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b))
    for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i))
      ++n;
  return n;
}

typedef struct Cluster {
  int root;
  long size;
} Cluster;

static int largerFirst(const void *a, const void *b) {
  long x = ((const Cluster *)a)->size, y = ((const Cluster *)b)->size;
  if (x != y)
    return x > y ? -1 : 1;
  return ((const Cluster *)a)->root - ((const Cluster *)b)->root; /* deterministic */
}

static bool splittable(LLVMModuleRef m) {
  if (LLVMGetFirstGlobalAlias(m) || LLVMGetFirstGlobalIFunc(m))
    return false;
  int functions = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    if (LLVMIsDeclaration(f))
      continue;
    if (LLVMGetComdat(f))
      return false;
    ++functions;
  }
  for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g))
    if (!LLVMIsDeclaration(g) && LLVMGetComdat(g))
      return false;
  return functions >= 2;
}

static bool hasFnAttr(LLVMValueRef f, const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  return LLVMGetEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, kind) != NULL;
}

static bool isNoInline(LLVMValueRef f) { return hasFnAttr(f, "noinline"); }

bool pbcLlvmFunctionIsOptNone(LLVMValueRef f) { return hasFnAttr(f, "optnone"); }

/* Functions joined by direct calls (other than to noinline functions), balanced over the parts by compile cost. */
static void assignFunctions(Split *s, int maxParts) {
  for (int i = 0; i < s->numFunctions; ++i)
    s->parent[i] = i;
  for (int i = 0; i < s->numFunctions; ++i)
    for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(s->globals[i]); b; b = LLVMGetNextBasicBlock(b))
      for (LLVMValueRef in = LLVMGetFirstInstruction(b); in; in = LLVMGetNextInstruction(in)) {
        if (!LLVMIsACallInst(in) && !LLVMIsAInvokeInst(in))
          continue;
        int callee = pbcPtrMapGet(&s->index, LLVMGetCalledValue(in));
        if (callee >= 0 && callee < s->numFunctions && !isNoInline(s->globals[callee]))
          s->parent[pbcUnionFindRoot(s->parent, callee)] = pbcUnionFindRoot(s->parent, i);
      }
  Cluster *clusters = calloc((size_t)s->numFunctions, sizeof(Cluster));
  for (int i = 0; i < s->numFunctions; ++i)
    clusters[i].root = i;
  /* optnone functions (a model's entry: allocations and calls) go to a part
   * of their own, compiled without optimization (codegen.c): in a part with
   * loops they would get -O3's register allocator, which took 4.5 s on a
   * 5,000-op chain's entry (fast allocation: under 2 s). */
  for (int i = 0; i < s->numFunctions; ++i)
    if (pbcLlvmFunctionIsOptNone(s->globals[i]) && pbcUnionFindRoot(s->parent, i) == i)
      clusters[i].size = -1;
  for (int i = 0; i < s->numFunctions; ++i)
    if (clusters[pbcUnionFindRoot(s->parent, i)].size >= 0)
      clusters[pbcUnionFindRoot(s->parent, i)].size += instructionCount(s->globals[i]) + 1;
  qsort(clusters, (size_t)s->numFunctions, sizeof(Cluster), largerFirst);
  long load[PBC_MAX_CODEGEN_PARTS] = {0};
  int *partOfRoot = calloc((size_t)s->numFunctions, sizeof(int));
  for (int c = 0; c < s->numFunctions && clusters[c].size > 0; ++c) {
    int best = 0;
    for (int p = 1; p < maxParts; ++p)
      if (load[p] < load[best])
        best = p;
    load[best] += clusters[c].size;
    partOfRoot[clusters[c].root] = best;
  }
  for (int i = 0; i < s->numFunctions; ++i) {
    int root = pbcUnionFindRoot(s->parent, i);
    s->part[i] = pbcLlvmFunctionIsOptNone(s->globals[root]) ? maxParts : partOfRoot[root];
  }
  free(partOfRoot);
  free(clusters);
}

int pbcSplitModule(LLVMModuleRef m, int maxParts, LLVMModuleRef *parts) {
  if (maxParts > PBC_MAX_CODEGEN_PARTS - 1)
    maxParts = PBC_MAX_CODEGEN_PARTS - 1; /* and the optnone functions' part */
  if (maxParts < 2 || !splittable(m))
    return 0;
  Split s = {0};
  int cap = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    cap += !LLVMIsDeclaration(f);
  s.numFunctions = cap;
  for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g))
    cap += !LLVMIsDeclaration(g);
  s.globals = calloc((size_t)cap, sizeof(LLVMValueRef));
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f))
      s.globals[s.numGlobals++] = f;
  for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g))
    if (!LLVMIsDeclaration(g))
      s.globals[s.numGlobals++] = g;
  pbcPtrMapInit(&s.index, (size_t)cap);
  for (int g = 0; g < s.numGlobals; ++g)
    pbcPtrMapPut(&s.index, s.globals[g], g);
  s.parent = calloc((size_t)cap, sizeof(int));
  s.part = calloc((size_t)cap, sizeof(int));
  assignFunctions(&s, maxParts);
  /* A variable goes with its first user; one used from several parts, like
   * a function referenced from another part, becomes hidden external. */
  for (int g = s.numFunctions; g < s.numGlobals; ++g) {
    uint64_t mask = 0;
    collectUserParts(&s, s.globals[g], &mask, 0);
    s.part[g] = firstPart(mask);
  }
  for (int g = 0; g < s.numGlobals; ++g) {
    uint64_t mask = 0;
    collectUserParts(&s, s.globals[g], &mask, 0);
    mask &= ~(1ull << s.part[g]);
    if (mask && pbcLlvmIsLocal(s.globals[g])) {
      size_t len = 0;
      LLVMGetValueName2(s.globals[g], &len);
      if (len == 0)
        LLVMSetValueName2(s.globals[g], "pbc_part_shared", strlen("pbc_part_shared"));
      LLVMSetLinkage(s.globals[g], LLVMExternalLinkage);
      LLVMSetVisibility(s.globals[g], LLVMHiddenVisibility);
    }
  }
  int n = 0;
  for (int p = 0; p <= maxParts; ++p) {
    bool any = false;
    for (int g = 0; g < s.numGlobals && !any; ++g)
      any = s.part[g] == p;
    if (!any)
      continue;
    s.currentPart = p;
    parts[n] = pbcExtCloneModuleDefining(m, keepDefinition, &s);
    if (n > 0) /* module-level assembly once */
      LLVMSetModuleInlineAsm2(parts[n], "", 0);
    ++n;
  }
  free(s.part);
  free(s.parent);
  pbcPtrMapDestroy(&s.index);
  free(s.globals);
  return n;
}
