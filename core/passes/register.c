/* Names under which pipeline files find the core's passes. */
#include "pbc/pass_registry.h"
#include "pbc/passes.h"

void pbcRegisterCorePasses(PbcPassRegistry *reg) {
  pbcPassRegistryAdd(reg, "pbc-decompose-aggregates", "builtin.module",
                     "Decompose linalg.softmax for loop lowering",
                     pbcCreateDecomposeAggregatesPass);
  pbcPassRegistryAdd(reg, "pbc-classify-nests", "func.func",
                     "Tag each root affine nest with its kind (pbc.kind)",
                     pbcCreateClassifyNestsPass);
  pbcPassRegistryAdd(reg, "pbc-parallelize", "func.func",
                     "Outermost parallel loop of each nest -> affine.parallel",
                     pbcCreateParallelizePass);
  pbcPassRegistryAdd(reg, "pbc-test-crash", "builtin.module",
                     "Testing only: crash with SIGSEGV", pbcCreateTestCrashPass);
  pbcPassRegistryAdd(reg, "pbc-verify-stage", "builtin.module",
                     "Check a stage's output contract (stage=s1..s5)",
                     pbcCreateVerifyStagePass);
}
