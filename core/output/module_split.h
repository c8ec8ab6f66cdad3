/*===- output/module_split.h - One LLVM module as parts for parallel codegen ===*\
|* Code generation of a large model is one LLVM module on one core unless it  *|
|* is split. This splits a module into parts that link together: functions   *|
|* that call each other directly stay in one part (so inlining is unchanged; *|
|* noinline callees such as outlined nests and parallel-region bodies,       *|
|* referenced only by address, may go anywhere), and                         *|
|* the parts are balanced by instruction count (longest first to the least   *|
|* loaded part); optnone functions (the glue of a model's entry) form one    *|
|* more part of their own. A local symbol used from another part becomes a  *|
|* hidden external one; all others stay local.                               *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_OUTPUT_MODULE_SPLIT_H
#define PBC_OUTPUT_MODULE_SPLIT_H

#include <stdbool.h>

#include "llvm-c/Types.h"
#include "pbc/codegen.h"

/* Fills parts[0 .. return value) with new modules in m's context (the
 * caller disposes them), at most maxParts (< PBC_MAX_CODEGEN_PARTS) and the
 * optnone functions' part, none empty. Returns 0, with m untouched, for a
 * module it does not split (aliases, ifuncs, comdats or fewer than two
 * functions); m keeps its definitions but may have had local symbols made
 * external. */
int pbcSplitModule(LLVMModuleRef m, int maxParts, LLVMModuleRef *parts);
/* True if the LLVM function carries the optnone attribute (a model's entry:
 * glue that the split and code generation treat apart). */
bool pbcLlvmFunctionIsOptNone(LLVMValueRef f);
/* Whether a global value has internal or private linkage. */
bool pbcLlvmIsLocal(LLVMValueRef gv);
/* The root of i in a union-find forest, compressing the path. */
int pbcUnionFindRoot(int *parent, int i);

#endif
