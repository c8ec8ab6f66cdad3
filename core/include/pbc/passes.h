/*===- pbc/passes.h - The core's passes ----------------------------------===*\
|* Each creator has the registry's PbcPassCreateFn signature; the names they *|
|* are registered under are in core/passes/register.c.                       *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_PASSES_H
#define PBC_PASSES_H

#include <stddef.h>

#include "mlir-c/Pass.h"

MlirPass pbcCreateDecomposeAggregatesPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateClassifyNestsPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateParallelizePass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateCopyToLoopsPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateFusePass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateFuseSlicesPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateFuseEpiloguePass(const char *options, char *err, size_t errLen);
MlirPass pbcCreatePadGemmPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateTilePass(const char *options, char *err, size_t errLen);
MlirPass pbcCreatePackPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateVectorizePass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateAbsorbFillPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateInterleavePass(const char *options, char *err, size_t errLen);
MlirPass pbcCreatePrefetchPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateHoistInvariantLoadsPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateFoldConstantLoadsPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateOverlappingLoadsPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateSlidingWindowPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateStreamingStoresPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreatePanelLayoutPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateApproximateMathPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateVectorizeReductionsPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateRegisterTilePass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateUnrollJamPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreatePromoteAccumulatorsPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateFpContractPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateTestCrashPass(const char *options, char *err, size_t errLen);
MlirPass pbcCreateVerifyStagePass(const char *options, char *err, size_t errLen);

#endif
