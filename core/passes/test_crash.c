/* pbc-test-crash: segfaults on purpose. Exists only so tests can prove that
 * a crash inside a pass is contained, reported and gets a reproducer (MLIR
 * and LLVM do crash on some inputs; see the shared notes). */
#include <signal.h>

#include "pbc/c_pass.h"
#include "pbc/passes.h"

static bool run(MlirOperation op, void *state) {
  (void)op;
  (void)state;
  raise(SIGSEGV);
  return false;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcTestCrashPass = {"pbc-test-crash",
                                       "builtin.module",
                                       "Testing only: crash with SIGSEGV",
                                       run,
                                       0,
                                       createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  return pbcCPassCreateWithoutOptions(&pbcTestCrashPass, options, err, errLen);
}
