/*===- pbc/isolate.h - Crash containment ---------------------------------===*\
|* MLIR and LLVM abort or segfault on some inputs (see notes). pbc does its   *|
|* work in a child process; the parent reports a crash with the phase it hit *|
|* (the exact pipeline entry) and writes a reproducer: the input plus the    *|
|* pipeline entries that ran up to and including the failing one, replayable *|
|* with `pbc-opt -p`.                                                         *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_ISOLATE_H
#define PBC_ISOLATE_H

#include <stdbool.h>

/* Exit codes of pbc and pbc-opt. */
enum {
  PBC_EXIT_OK = 0,
  PBC_EXIT_ERROR = 1,          /* bad input, failed compilation */
  PBC_EXIT_USAGE = 2,          /* bad command line */
  PBC_EXIT_CHECK_FAILED = 3,   /* --check found a mismatch */
  PBC_EXIT_COMPILER_CRASH = 70,/* MLIR/LLVM crashed while compiling */
  PBC_EXIT_PROGRAM_CRASH = 71, /* the compiled program crashed when run */
};

typedef struct PbcIsolateOptions {
  bool enabled;             /* false: run fn in this process (debugging) */
  const char *inputText;    /* the program, for the reproducer */
  const char *commandLine;  /* for the reproducer's header */
  const char *reproDir;     /* where the reproducer goes ("." if NULL) */
  const char *toolName;     /* "pbc" or "pbc-opt" */
} PbcIsolateOptions;

/* Runs fn(arg) (in a child process when enabled) and returns its exit code,
 * or PBC_EXIT_*_CRASH after reporting a crash; 141 (128 + SIGPIPE), quietly,
 * when the child was killed writing into a closed pipe. */
int pbcRunIsolated(int (*fn)(void *), void *arg, const PbcIsolateOptions *o);

/* Called by the pipeline runner and code generation to say what runs now. */
void pbcCrashContextSetPhase(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
/* Marks that the compiled program (not the compiler) runs from now on. */
void pbcCrashContextSetRunningProgram(bool running);
/* Records a pipeline entry, so the reproducer can replay the passes. */
void pbcCrashContextAppendReplay(const char *entryText);

#endif
