/* The core's passes, registered under the names in their specs (which
 * pipeline files use), in the order `pbc-opt --list-passes` lists them. */
#include "pbc/pass_registry.h"
#include "passes/passes.h"

void pbcRegisterCorePasses(PbcPassRegistry *reg) {
  static const PbcCPassSpec *const kPasses[] = {
      &pbcChannelsLastPass,
      &pbcSinkTransposesPass,
      &pbcFoldConstantTransposesPass,
      &pbcDecomposeAggregatesPass,
      &pbcDistinctResultsPass,
      &pbcDistinctEmptiesPass,
      &pbcClampGatherIndicesPass,
      &pbcShareConcatPrefixesPass,
      &pbcFoldUnitOperandDimsPass,
      &pbcBiasEpiloguePass,
      &pbcFreeAfterLastUsePass,
      &pbcClassifyNestsPass,
      &pbcParallelizePass,
      &pbcCopyToLoopsPass,
      &pbcFusePass,
      &pbcFuseSlicesPass,
      &pbcFuseRowsPass,
      &pbcFuseAttentionPass,
      &pbcFuseEpiloguePass,
      &pbcFillBorderPass,
      &pbcPadGemmPass,
      &pbcTilePass,
      &pbcPackPass,
      &pbcPackOncePass,
      &pbcTransposeCopiesPass,
      &pbcRegisterTilePass,
      &pbcCollapseRowsPass,
      &pbcInterleavePass,
      &pbcVectorizePass,
      &pbcVectorizeReductionsPass,
      &pbcUnrollJamPass,
      &pbcPromoteAccumulatorsPass,
      &pbcAbsorbFillPass,
      &pbcHoistInvariantLoadsPass,
      &pbcFoldConstantLoadsPass,
      &pbcOverlappingLoadsPass,
      &pbcSlidingWindowPass,
      &pbcPanelLayoutPass,
      &pbcStreamingStoresPass,
      &pbcPrefetchPass,
      &pbcApproximateMathPass,
      &pbcExpLdexpPass,
      &pbcFpContractPass,
      &pbcHoistReciprocalsPass,
      &pbcOutlineNestsPass,
      &pbcTestCrashPass,
      &pbcVerifyStagePass,
  };
  for (size_t i = 0; i < sizeof(kPasses) / sizeof(kPasses[0]); ++i)
    pbcPassRegistryAdd(reg, kPasses[i]->name, kPasses[i]->anchorOp, kPasses[i]->summary,
                       kPasses[i]->create);
}
