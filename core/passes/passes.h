/*===- passes/passes.h - The core's passes --------------------------------===*\
|* Each pass is its spec: name, anchor op, summary, run and creator (each   *|
|* registered by core/passes/register.c under the name in its spec).        *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_PASSES_H
#define PBC_PASSES_H

#include "pbc/c_pass.h"

extern const PbcCPassSpec pbcChannelsLastPass;
extern const PbcCPassSpec pbcSinkTransposesPass;
extern const PbcCPassSpec pbcFoldConstantTransposesPass;
extern const PbcCPassSpec pbcDecomposeAggregatesPass;
extern const PbcCPassSpec pbcDistinctResultsPass;
extern const PbcCPassSpec pbcExpandPowiPass;
extern const PbcCPassSpec pbcDistinctEmptiesPass;
extern const PbcCPassSpec pbcClampGatherIndicesPass;
extern const PbcCPassSpec pbcShareConcatPrefixesPass;
extern const PbcCPassSpec pbcFoldUnitOperandDimsPass;
extern const PbcCPassSpec pbcBiasEpiloguePass;
extern const PbcCPassSpec pbcQuantizedMatmulPass;
extern const PbcCPassSpec pbcFreeAfterLastUsePass;
extern const PbcCPassSpec pbcClassifyNestsPass;
extern const PbcCPassSpec pbcParallelizePass;
extern const PbcCPassSpec pbcCopyToLoopsPass;
extern const PbcCPassSpec pbcFusePass;
extern const PbcCPassSpec pbcFuseSlicesPass;
extern const PbcCPassSpec pbcFuseRowsPass;
extern const PbcCPassSpec pbcFuseAttentionPass;
extern const PbcCPassSpec pbcFuseEpiloguePass;
extern const PbcCPassSpec pbcFillBorderPass;
extern const PbcCPassSpec pbcPadGemmPass;
extern const PbcCPassSpec pbcBlockSymbolicPass;
extern const PbcCPassSpec pbcTilePass;
extern const PbcCPassSpec pbcPackPass;
extern const PbcCPassSpec pbcPackOncePass;
extern const PbcCPassSpec pbcTransposeCopiesPass;
extern const PbcCPassSpec pbcVectorizePass;
extern const PbcCPassSpec pbcAbsorbFillPass;
extern const PbcCPassSpec pbcCollapseRowsPass;
extern const PbcCPassSpec pbcInterleavePass;
extern const PbcCPassSpec pbcPrefetchPass;
extern const PbcCPassSpec pbcHoistInvariantLoadsPass;
extern const PbcCPassSpec pbcFoldConstantLoadsPass;
extern const PbcCPassSpec pbcOverlappingLoadsPass;
extern const PbcCPassSpec pbcSlidingWindowPass;
extern const PbcCPassSpec pbcStreamingStoresPass;
extern const PbcCPassSpec pbcPanelLayoutPass;
extern const PbcCPassSpec pbcApproximateMathPass;
extern const PbcCPassSpec pbcExpLdexpPass;
extern const PbcCPassSpec pbcVectorizeReductionsPass;
extern const PbcCPassSpec pbcDotI8Pass;
extern const PbcCPassSpec pbcRegisterTilePass;
extern const PbcCPassSpec pbcUnrollJamPass;
extern const PbcCPassSpec pbcPromoteAccumulatorsPass;
extern const PbcCPassSpec pbcFpContractPass;
extern const PbcCPassSpec pbcHoistReciprocalsPass;
extern const PbcCPassSpec pbcOutlineNestsPass;
extern const PbcCPassSpec pbcTestCrashPass;
extern const PbcCPassSpec pbcVerifyStagePass;

#endif
