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
  pbcPassRegistryAdd(reg, "pbc-copy-to-loops", "func.func",
                     "memref.copy of static shapes -> affine loop nest", pbcCreateCopyToLoopsPass);
  pbcPassRegistryAdd(reg, "pbc-fuse", "func.func", "Producer-consumer fusion of same-shape nests",
                     pbcCreateFusePass);
  pbcPassRegistryAdd(reg, "pbc-fuse-slices", "func.func",
                     "Slicing fusion of stencil consumers with private buffers",
                     pbcCreateFuseSlicesPass);
  pbcPassRegistryAdd(reg, "pbc-fuse-epilogue", "func.func",
                     "Elementwise consumers into tiled matmul-kind nests",
                     pbcCreateFuseEpiloguePass);
  pbcPassRegistryAdd(reg, "pbc-pad-gemm", "func.func",
                     "GEMMs on buffers padded to whole register tiles", pbcCreatePadGemmPass);
  pbcPassRegistryAdd(reg, "pbc-tile", "func.func",
                     "Register and cache tiling of key (matmul-kind) nests", pbcCreateTilePass);
  pbcPassRegistryAdd(reg, "pbc-pack", "func.func", "Pack input tiles into contiguous fast buffers",
                     pbcCreatePackPass);
  pbcPassRegistryAdd(reg, "pbc-register-tile", "func.func",
                     "Split the register tiles pbc-tile chose", pbcCreateRegisterTilePass);
  pbcPassRegistryAdd(reg, "pbc-interleave", "func.func",
                     "Vectorize a small innermost dimension with its neighbour",
                     pbcCreateInterleavePass);
  pbcPassRegistryAdd(reg, "pbc-vectorize", "func.func", "Contiguity-driven loop vectorization",
                     pbcCreateVectorizePass);
  pbcPassRegistryAdd(reg, "pbc-vectorize-reductions", "func.func",
                     "Vector accumulators for innermost reduction loops",
                     pbcCreateVectorizeReductionsPass);
  pbcPassRegistryAdd(reg, "pbc-unroll-jam", "func.func", "Unroll-and-jam the register-tile loops",
                     pbcCreateUnrollJamPass);
  pbcPassRegistryAdd(reg, "pbc-promote-accumulators", "func.func",
                     "Loop-invariant load/store pairs -> iter_args",
                     pbcCreatePromoteAccumulatorsPass);
  pbcPassRegistryAdd(reg, "pbc-absorb-fill", "func.func",
                     "Accumulator inits read a fill's constant directly", pbcCreateAbsorbFillPass);
  pbcPassRegistryAdd(reg, "pbc-hoist-invariant-loads", "func.func",
                     "Unroll short loops to hoist the loads they make invariant",
                     pbcCreateHoistInvariantLoadsPass);
  pbcPassRegistryAdd(reg, "pbc-fold-constant-loads", "func.func",
                     "Reads of compile-time constants at constant subscripts -> constants",
                     pbcCreateFoldConstantLoadsPass);
  pbcPassRegistryAdd(reg, "pbc-overlapping-loads", "func.func",
                     "Read a row's overlapping vector taps as whole vectors and shuffles",
                     pbcCreateOverlappingLoadsPass);
  pbcPassRegistryAdd(reg, "pbc-sliding-window", "func.func",
                     "Compute a stencil's private buffer row by row as its consumer slides",
                     pbcCreateSlidingWindowPass);
  pbcPassRegistryAdd(reg, "pbc-panel-layout", "func.func", "Store packed B blocks panel by panel",
                     pbcCreatePanelLayoutPass);
  pbcPassRegistryAdd(reg, "pbc-streaming-stores", "func.func",
                     "Non-temporal stores for large write-only results",
                     pbcCreateStreamingStoresPass);
  pbcPassRegistryAdd(
      reg, "pbc-prefetch", "func.func",
      "Prefetch the next register tile's accumulators and the next row of short row runs",
      pbcCreatePrefetchPass);
  pbcPassRegistryAdd(reg, "pbc-approximate-math", "builtin.module",
                     "Math ops -> polynomial approximations", pbcCreateApproximateMathPass);
  pbcPassRegistryAdd(reg, "pbc-fp-contract", "func.func", "Allow fused multiply-add contraction",
                     pbcCreateFpContractPass);
  pbcPassRegistryAdd(reg, "pbc-test-crash", "builtin.module", "Testing only: crash with SIGSEGV",
                     pbcCreateTestCrashPass);
  pbcPassRegistryAdd(reg, "pbc-verify-stage", "builtin.module",
                     "Check a stage's output contract (stage=s1..s5)", pbcCreateVerifyStagePass);
}
