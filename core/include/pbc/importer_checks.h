/*===- pbc/importer_checks.h - The run-time checks importers write ------===*\
|* torch-mlir writes cf.assert for the conditions its ops assume (sizes     *|
|* that agree, indices in range). pbc's code cannot raise: checks that      *|
|* folded to true and checks of gathered indices inside linalg bodies       *|
|* (pbc clamps those indices) are removed; one that folded to false is a    *|
|* located error with its message; the rest stay (the input check rejects   *|
|* them). See importer_checks.c.                                            *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_IMPORTER_CHECKS_H
#define PBC_IMPORTER_CHECKS_H

#include <stdbool.h>

#include "mlir-c/IR.h"

bool pbcResolveImporterChecks(MlirModule m);
/* Whether op lies in a linalg.generic's body (a check of gathered indices,
 * which pbcResolveImporterChecks removes). */
bool pbcOpIsInLinalgBody(MlirOperation op);

#endif
