/* pbc-test-crash: segfaults on purpose. Exists only so tests can prove that
 * a crash inside a pass is contained, reported and gets a reproducer (MLIR
 * and LLVM do crash on some inputs; see the shared notes). */
#include <signal.h>

#include "pbc/c_pass.h"
#include "passes/passes.h"

static bool run(MlirOperation op, void *state) {
  (void)op;
  (void)state;
  raise(SIGSEGV);
  return false;
}

PBC_C_PASS_WITHOUT_OPTIONS(pbcTestCrashPass, "pbc-test-crash", "builtin.module",
                           "Testing only: crash with SIGSEGV", run);
