/* The entry's glue in LLVM IR: what is left to do on `optnone` functions. */
#include "output/glue.h"

#include <stdbool.h>
#include <string.h>

#include "output/module_split.h"

/* Instructions that may go when unused: no effects, no traps. */
static bool erasableWhenUnused(LLVMValueRef in) {
  switch (LLVMGetInstructionOpcode(in)) {
  case LLVMExtractValue: case LLVMInsertValue: case LLVMGetElementPtr: case LLVMPtrToInt:
  case LLVMIntToPtr: case LLVMBitCast: case LLVMAdd: case LLVMSub: case LLVMMul:
  case LLVMAnd: case LLVMOr: case LLVMXor: case LLVMShl: case LLVMLShr: case LLVMAShr:
  case LLVMICmp: case LLVMSelect: case LLVMTrunc: case LLVMZExt: case LLVMSExt:
    return true;
  case LLVMLoad:
    return !LLVMGetVolatile(in) && LLVMGetOrdering(in) == LLVMAtomicOrderingNotAtomic;
  default:
    return false;
  }
}

/* The scalar an extractvalue reads, found through the chain of insertvalues
 * that built its aggregate; NULL if it is not one of theirs. */
static LLVMValueRef insertedValue(LLVMValueRef extract) {
  unsigned n = LLVMGetNumIndices(extract);
  const unsigned *want = LLVMGetIndices(extract);
  LLVMValueRef agg = LLVMGetOperand(extract, 0);
  while (LLVMIsAInsertValueInst(agg)) {
    unsigned k = LLVMGetNumIndices(agg);
    const unsigned *at = LLVMGetIndices(agg);
    unsigned common = 0;
    while (common < k && common < n && at[common] == want[common])
      ++common;
    if (common == n && k == n)
      return LLVMGetOperand(agg, 1);
    if (common == k || common == n)
      return NULL; /* one path is a prefix of the other: an aggregate moves */
    agg = LLVMGetOperand(agg, 0);
  }
  return NULL;
}

/* extractvalue (load {aggregate} %p), i, j  ->  load (gep %p, 0, i, j),
 * placed where the aggregate was loaded. NULL if the aggregate is not a
 * load. */
static LLVMValueRef fieldLoad(LLVMBuilderRef b, LLVMValueRef extract) {
  LLVMValueRef load = LLVMGetOperand(extract, 0);
  if (!LLVMIsALoadInst(load) || LLVMGetVolatile(load) ||
      LLVMGetOrdering(load) != LLVMAtomicOrderingNotAtomic)
    return NULL;
  unsigned n = LLVMGetNumIndices(extract);
  const unsigned *idx = LLVMGetIndices(extract);
  LLVMTypeRef aggTy = LLVMTypeOf(load), t = aggTy;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(aggTy));
  LLVMValueRef gepIdx[9];
  if (n + 1 > sizeof(gepIdx) / sizeof(gepIdx[0]))
    return NULL;
  gepIdx[0] = LLVMConstInt(i32, 0, false);
  for (unsigned i = 0; i < n; ++i) {
    LLVMTypeKind kind = LLVMGetTypeKind(t);
    if (kind == LLVMStructTypeKind)
      t = LLVMStructGetTypeAtIndex(t, idx[i]);
    else if (kind == LLVMArrayTypeKind)
      t = LLVMGetElementType(t);
    else
      return NULL;
    gepIdx[i + 1] = LLVMConstInt(i32, idx[i], false);
  }
  LLVMValueRef next = LLVMGetNextInstruction(load);
  LLVMPositionBuilder(b, LLVMGetInstructionParent(load), next);
  LLVMValueRef gep = LLVMBuildInBoundsGEP2(b, aggTy, LLVMGetOperand(load, 0), gepIdx, n + 1, "");
  return LLVMBuildLoad2(b, t, gep, "");
}

static void simplifyFunction(LLVMBuilderRef b, LLVMValueRef f) {
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in;) {
      LLVMValueRef next = LLVMGetNextInstruction(in);
      if (LLVMGetInstructionOpcode(in) == LLVMExtractValue) {
        LLVMValueRef v = insertedValue(in);
        if (!v)
          v = fieldLoad(b, in);
        if (v) {
          LLVMReplaceAllUsesWith(in, v);
          LLVMInstructionEraseFromParent(in);
        }
      }
      in = next;
    }
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef in = LLVMGetLastInstruction(bb); in;) {
      LLVMValueRef prev = LLVMGetPreviousInstruction(in);
      if (!LLVMGetFirstUse(in) && erasableWhenUnused(in))
        LLVMInstructionEraseFromParent(in);
      in = prev;
    }
}

void pbcSimplifyGlue(LLVMModuleRef mod) {
  LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod));
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f) && pbcLlvmFunctionIsOptNone(f))
      simplifyFunction(b, f);
  LLVMDisposeBuilder(b);
}
