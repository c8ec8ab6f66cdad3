// Thin C wrapper of llvm::CloneModule's filtered form (see pbc-ext/split_module.h).
#include "pbc-ext/split_module.h"

#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

using namespace llvm;

LLVMModuleRef pbcExtCloneModuleDefining(LLVMModuleRef m, PbcExtKeepDefinitionFn keep,
                                        void *user) {
  ValueToValueMapTy vmap;
  std::unique_ptr<Module> clone = CloneModule(*unwrap(m), vmap, [&](const GlobalValue *gv) {
    return keep(user, wrap(const_cast<GlobalValue *>(gv)));
  });
  return wrap(clone.release());
}

void pbcExtDeleteFunctionBody(LLVMValueRef f) { cast<Function>(unwrap(f))->deleteBody(); }
