/*===- pbc/isolate.h - Crash containment ---------------------------------===*\
|* MLIR and LLVM abort or segfault on some inputs (see notes). pbc does its   *|
|* work in a child process; the parent reports a crash with the phase it hit *|
|* (the exact pipeline entry) and writes a reproducer: the input plus the    *|
|* pipeline entries that ran up to and including the failing one, replayable *|
|* with `pbc-opt -p`.                                                         *|
|* The child continues the parent's code after fork(), which is only safe   *|
|* in a single-threaded process (another thread may hold a libc lock the    *|
|* child then waits on forever): the drivers use this; libpbc, embedded in  *|
|* threaded hosts, runs the pbc driver as a new process instead.            *|
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
  const char *reproDir;     /* where the reproducer goes (NULL: see
                               pbcReproducerDir) */
  const char *toolName;     /* "pbc" or "pbc-opt" */
} PbcIsolateOptions;

/* Runs fn(arg) (in a child process when enabled) and returns its exit code,
 * or PBC_EXIT_*_CRASH after reporting a crash; 141 (128 + SIGPIPE), quietly,
 * when the child was killed writing into a closed pipe. A child that ends
 * the process from inside fn (exit or _exit, even with status 0) is an
 * internal crash too: only fn's own return counts. */
int pbcRunIsolated(int (*fn)(void *), void *arg, const PbcIsolateOptions *o);

/* The folder for crash reproducers: `explicitDir` if given, else
 * $PBC_REPRODUCER_DIR, else $TMPDIR, else /tmp (never the working folder). */
const char *pbcReproducerDir(const char *explicitDir);

/* Called by the pipeline runner and code generation to say what runs now. */
void pbcCrashContextSetPhase(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
/* Marks that the compiled program (not the compiler) runs from now on. */
void pbcCrashContextSetRunningProgram(bool running);
/* Records a pipeline entry, so the reproducer can replay the passes. */
void pbcCrashContextAppendReplay(const char *entryText);

#endif
