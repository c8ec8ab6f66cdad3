/*===- pbc-ext/split_module.h - LLVM module cloning, callable from C -------===*\
|* Thin wrapper of llvm::CloneModule with its definition filter (the LLVM C  *|
|* API clones only whole modules), for code generation split across cores.  *|
|* Which definitions go where is the caller's policy (output/module_split.c).*|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_EXT_SPLIT_MODULE_H
#define PBC_EXT_SPLIT_MODULE_H

#include <stdbool.h>

#include "llvm-c/Types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether the clone keeps global value `gv`'s definition (else: declares it). */
typedef bool (*PbcExtKeepDefinitionFn)(void *user, LLVMValueRef gv);

/* llvm::CloneModule(m, vmap, keep): a copy of m, in m's context, that
 * defines only the global values `keep` accepts and declares the rest. */
LLVMModuleRef pbcExtCloneModuleDefining(LLVMModuleRef m, PbcExtKeepDefinitionFn keep,
                                        void *user);

/* llvm::Function::deleteBody: f becomes an external declaration. */
void pbcExtDeleteFunctionBody(LLVMValueRef f);

#ifdef __cplusplus
}
#endif

#endif
