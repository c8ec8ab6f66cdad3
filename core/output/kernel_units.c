/* A model's kernels, one LLVM module each: see output/kernel_units.h. */
#include "output/kernel_units.h"

#include <stdlib.h>
#include <string.h>

#include "llvm-c/BitWriter.h"
#include "output/module_split.h"
#include "pbc-ext/split_module.h"
#include "pbc/ptr_map.h"

typedef struct Units {
  LLVMValueRef *fns; /* defined functions */
  int n;
  PbcPtrMap index; /* function -> position in fns */
  PbcPtrMap vars;  /* the variables the current unit reads */
  int *parent;
  bool *cacheable; /* per root */
  int current;     /* the unit the clone filter keeps */
  int numVars;     /* variables in the module */
} Units;

/* How deep constant expressions and initializers are followed; a kernel
 * reading deeper ones is not cached. */
enum { kMaxConstantDepth = 16 };

/* The constant operands of a function's instructions, one at a time. */
typedef struct ConstantOperands {
  LLVMValueRef fn;
  LLVMBasicBlockRef block;
  LLVMValueRef inst;
  int next;
} ConstantOperands;

static LLVMValueRef nextConstantOperand(ConstantOperands *c) {
  for (;;) {
    if (!c->inst) {
      c->block = c->block ? LLVMGetNextBasicBlock(c->block) : LLVMGetFirstBasicBlock(c->fn);
      if (!c->block)
        return NULL;
      c->inst = LLVMGetFirstInstruction(c->block);
      c->next = 0;
      continue;
    }
    if (c->next >= LLVMGetNumOperands(c->inst)) {
      c->inst = LLVMGetNextInstruction(c->inst);
      c->next = 0;
      continue;
    }
    LLVMValueRef op = LLVMGetOperand(c->inst, c->next++);
    if (op && LLVMIsAConstant(op))
      return op;
  }
}

/* A variable a unit may carry a copy of: a private constant whose address
 * means nothing. */
static bool copyable(LLVMValueRef v) {
  return !LLVMIsDeclaration(v) && pbcLlvmIsLocal(v) && LLVMIsGlobalConstant(v) &&
         LLVMGetUnnamedAddress(v) != LLVMNoUnnamedAddr && !LLVMIsThreadLocal(v);
}

/* Visits the global values `v` refers to, through constant expressions and
 * the initializers of the constants a unit copies. */
static void refsOf(Units *u, int self, LLVMValueRef v, int depth, bool inInitializer) {
  if (depth > kMaxConstantDepth) {
    u->cacheable[self] = false;
  } else if (LLVMIsAFunction(v)) {
    int g = pbcPtrMapGet(&u->index, v);
    if (inInitializer || (g >= 0 && pbcLlvmFunctionIsOptNone(u->fns[g])))
      u->cacheable[self] = false; /* a table of functions, or a kernel calling glue */
    else if (g >= 0)
      u->parent[pbcUnionFindRoot(u->parent, g)] = pbcUnionFindRoot(u->parent, self);
  } else if (LLVMIsAGlobalVariable(v)) {
    if (LLVMIsDeclaration(v))
      return;
    if (!copyable(v))
      u->cacheable[self] = false;
    else
      refsOf(u, self, LLVMGetInitializer(v), depth + 1, true);
  } else if (LLVMIsAGlobalValue(v)) {
    u->cacheable[self] = false; /* an alias or ifunc */
  } else if (LLVMIsAConstant(v)) {
    int n = LLVMGetNumOperands(v);
    for (int i = 0; i < n; ++i)
      refsOf(u, self, LLVMGetOperand(v, i), depth + 1, inInitializer);
  }
}

/* Joins functions that refer to each other; a unit is cacheable if none of
 * its functions is exported, glue, or refers to what it cannot carry. */
static void formUnits(Units *u) {
  for (int i = 0; i < u->n; ++i) {
    u->parent[i] = i;
    u->cacheable[i] = pbcLlvmIsLocal(u->fns[i]) && !pbcLlvmFunctionIsOptNone(u->fns[i]);
  }
  for (int i = 0; i < u->n; ++i) {
    if (pbcLlvmFunctionIsOptNone(u->fns[i]))
      continue;
    ConstantOperands c = {u->fns[i]};
    for (LLVMValueRef op; (op = nextConstantOperand(&c));)
      refsOf(u, i, op, 0, false);
  }
  /* A function used outside instructions (a variable's initializer such as
   * llvm.used, a constant expression) keeps its name and place. */
  for (int i = 0; i < u->n; ++i)
    for (LLVMUseRef use = LLVMGetFirstUse(u->fns[i]); use; use = LLVMGetNextUse(use))
      if (!LLVMIsAInstruction(LLVMGetUser(use)))
        u->cacheable[i] = false;
  for (int i = 0; i < u->n; ++i)
    if (!u->cacheable[i])
      u->cacheable[pbcUnionFindRoot(u->parent, i)] = false;
}

static void collectVars(PbcPtrMap *vars, LLVMValueRef v, int depth) {
  if (LLVMIsAGlobalVariable(v)) {
    if (pbcPtrMapGet(vars, v) >= 0 || LLVMIsDeclaration(v))
      return;
    pbcPtrMapPut(vars, v, 1);
    collectVars(vars, LLVMGetInitializer(v), depth + 1); /* copyable: formUnits checked */
  } else if (LLVMIsAConstant(v) && !LLVMIsAGlobalValue(v) && depth <= kMaxConstantDepth) {
    int n = LLVMGetNumOperands(v);
    for (int i = 0; i < n; ++i)
      collectVars(vars, LLVMGetOperand(v, i), depth + 1);
  }
}

/* The variables the unit rooted at `root` reads, into u->vars. */
static void unitVars(Units *u, int root) {
  pbcPtrMapDestroy(&u->vars);
  pbcPtrMapInit(&u->vars, (size_t)u->numVars);
  for (int g = 0; g < u->n; ++g) {
    if (pbcUnionFindRoot(u->parent, g) != root)
      continue;
    ConstantOperands c = {u->fns[g]};
    for (LLVMValueRef op; (op = nextConstantOperand(&c));)
      collectVars(&u->vars, op, 0);
  }
}

static bool keepUnit(void *user, LLVMValueRef gv) {
  Units *u = user;
  if (LLVMIsAGlobalVariable(gv))
    return pbcPtrMapGet(&u->vars, gv) >= 0;
  int g = pbcPtrMapGet(&u->index, gv);
  return g >= 0 && pbcUnionFindRoot(u->parent, g) == u->current;
}

/* Drops what the unit's module declares or copies without using it. */
static void dropUnused(LLVMModuleRef c) {
  for (LLVMValueRef f = LLVMGetFirstFunction(c); f;) {
    LLVMValueRef next = LLVMGetNextFunction(f);
    if (LLVMIsDeclaration(f) && !LLVMGetFirstUse(f))
      LLVMDeleteFunction(f);
    f = next;
  }
  for (LLVMValueRef g = LLVMGetFirstGlobal(c); g;) {
    LLVMValueRef next = LLVMGetNextGlobal(g);
    if (!LLVMGetFirstUse(g))
      LLVMDeleteGlobal(g);
    g = next;
  }
}

/* Names the unit's functions prefix0, prefix1, ... in module order (and
 * its variables pbc_kernel_v0, ...): hidden externals when final. */
static void nameUnit(LLVMModuleRef c, const char *prefix, bool final) {
  char name[96];
  int i = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(c); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f)) {
      snprintf(name, sizeof(name), "%s%d", prefix, i++);
      LLVMSetValueName2(f, name, strlen(name));
      if (final) {
        LLVMSetLinkage(f, LLVMExternalLinkage);
        LLVMSetVisibility(f, LLVMHiddenVisibility);
      }
    }
  i = 0;
  for (LLVMValueRef g = LLVMGetFirstGlobal(c); g; g = LLVMGetNextGlobal(g)) {
    if (LLVMIsDeclaration(g))
      continue;
    snprintf(name, sizeof(name), "pbc_kernel_v%d", i++);
    LLVMSetValueName2(g, name, strlen(name));
    LLVMSetLinkage(g, LLVMPrivateLinkage);
  }
}

/* The unit rooted at `root`: keyed, looked up, and (a miss) its final
 * module's bitcode kept; its bodies leave m. False if it stays in m. */
static bool extractUnit(Units *u, int root, LLVMModuleRef m, PbcKernelKey base, const char *dir,
                        PbcKernelUnit *out) {
  u->current = root;
  unitVars(u, root);
  LLVMModuleRef c = pbcExtCloneModuleDefining(m, keepUnit, u);
  dropUnused(c);
  LLVMSetModuleIdentifier(c, "pbc-kernel", strlen("pbc-kernel"));
  LLVMSetSourceFileName(c, "pbc-kernel", strlen("pbc-kernel"));
  LLVMSetModuleInlineAsm2(c, "", 0);
  nameUnit(c, "pbc_kernel_f", false);
  LLVMMemoryBufferRef canon = LLVMWriteBitcodeToMemoryBuffer(c);
  PbcKernelKey key = base;
  pbcKernelKeyAdd(&key, LLVMGetBufferStart(canon), LLVMGetBufferSize(canon));
  LLVMDisposeMemoryBuffer(canon);
  char hex[33], prefix[48], first[64];
  pbcKernelKeyHex(&key, hex);
  snprintf(prefix, sizeof(prefix), "pbc_k%s_", hex);
  snprintf(first, sizeof(first), "%s0", prefix);
  if (LLVMGetNamedFunction(m, first)) { /* the same kernel twice in m */
    LLVMDisposeModule(c);
    return false;
  }
  memset(out, 0, sizeof(*out));
  out->key = key;
  out->hit = dir && pbcKernelCacheGet(dir, &key, &out->obj);
  if (!out->hit) {
    nameUnit(c, prefix, true);
    out->bitcode = LLVMWriteBitcodeToMemoryBuffer(c);
  }
  LLVMDisposeModule(c);
  /* In m: the same names, bodies gone (the objects define them). */
  char name[96];
  int i = 0;
  for (int g = 0; g < u->n; ++g)
    if (pbcUnionFindRoot(u->parent, g) == root) {
      snprintf(name, sizeof(name), "%s%d", prefix, i++);
      LLVMSetValueName2(u->fns[g], name, strlen(name));
      pbcExtDeleteFunctionBody(u->fns[g]);
      LLVMSetLinkage(u->fns[g], LLVMExternalLinkage);
      LLVMSetVisibility(u->fns[g], LLVMHiddenVisibility);
    }
  return true;
}

int pbcKernelUnitsExtract(LLVMModuleRef m, PbcKernelKey base, const char *dir,
                          PbcKernelUnit **units) {
  *units = NULL;
  Units u = {0};
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    u.n += !LLVMIsDeclaration(f);
  if (u.n == 0)
    return 0;
  u.fns = calloc((size_t)u.n, sizeof(LLVMValueRef));
  u.parent = calloc((size_t)u.n, sizeof(int));
  u.cacheable = calloc((size_t)u.n, sizeof(bool));
  pbcPtrMapInit(&u.index, (size_t)u.n);
  pbcPtrMapInit(&u.vars, 1);
  for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g))
    ++u.numVars;
  int k = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f)) {
      pbcPtrMapPut(&u.index, f, k);
      u.fns[k++] = f;
    }
  formUnits(&u);
  /* Function order in a unit's module is m's order: the same in both. */
  int n = 0;
  PbcKernelUnit *out = calloc((size_t)u.n, sizeof(PbcKernelUnit));
  for (int i = 0; i < u.n; ++i)
    if (pbcUnionFindRoot(u.parent, i) == i && u.cacheable[i] && extractUnit(&u, i, m, base, dir, &out[n]))
      ++n;
  /* Constants only the extracted kernels read. */
  for (LLVMValueRef g = LLVMGetFirstGlobal(m); g;) {
    LLVMValueRef next = LLVMGetNextGlobal(g);
    if (pbcLlvmIsLocal(g) && !LLVMGetFirstUse(g))
      LLVMDeleteGlobal(g);
    g = next;
  }
  pbcPtrMapDestroy(&u.index);
  pbcPtrMapDestroy(&u.vars);
  free(u.fns);
  free(u.parent);
  free(u.cacheable);
  *units = out;
  return n;
}
