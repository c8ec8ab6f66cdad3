/*===- pbc/isolate.h - Crash containment ---------------------------------===*\
|* MLIR and LLVM abort or segfault on some inputs (see notes). pbc does its   *|
|* work in a child process; the parent reports a crash with the phase it hit *|
|* (the exact pipeline entry) and writes a reproducer: the input plus the    *|
|* pipeline entries that ran up to and including the failing one, replayable *|
|* with `pbc-opt -p`.                                                         *|
|*                                                                          *|
|* Thread safety: pbcRunIsolated may run from many threads at once (libpbc). *|
|* Each call has its own crash page and, when `capture` is set, its own      *|
|* pipe for the child's stderr; the caller's stderr is never redirected.     *|
|* Forks are serialized with pbcForkLock, so a child never inherits another  *|
|* call's pipe (which would delay that call's end-of-file).                  *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_ISOLATE_H
#define PBC_ISOLATE_H

#include <stdbool.h>
#include <stddef.h>

#include "pbc/strbuf.h"

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
  PbcStrBuf *capture;       /* not NULL: the child's stderr and the crash
                               report are appended here, not printed */
  size_t captureLimit;      /* bytes kept in capture (0: 64 KiB); the rest
                               is counted and dropped */
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

/* Serializes fork() (and the parent-side set-up around it) across threads. */
void pbcForkLock(void);
void pbcForkUnlock(void);

/* Called by the pipeline runner and code generation to say what runs now. */
void pbcCrashContextSetPhase(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
/* Marks that the compiled program (not the compiler) runs from now on. */
void pbcCrashContextSetRunningProgram(bool running);
/* Records a pipeline entry, so the reproducer can replay the passes. */
void pbcCrashContextAppendReplay(const char *entryText);

#endif
