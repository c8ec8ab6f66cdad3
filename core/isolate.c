/* Crash containment: the work runs in a child process; a shared page says
 * what it was doing, so the parent can name the failing pass and write a
 * reproducer. See pbc/isolate.h. */
#include "pbc/isolate.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct CrashContext {
  int runningProgram;
  char phase[1024];
  size_t replayLen;
  char replay[60000]; /* entries separated by '\n' */
} CrashContext;

static CrashContext *shared; /* NULL outside an isolated run */

void pbcCrashContextSetPhase(const char *fmt, ...) {
  if (!shared)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(shared->phase, sizeof(shared->phase), fmt, ap);
  va_end(ap);
}

void pbcCrashContextSetRunningProgram(bool running) {
  if (shared)
    shared->runningProgram = running;
}

void pbcCrashContextAppendReplay(const char *entryText) {
  if (!shared)
    return;
  size_t n = strlen(entryText);
  if (shared->replayLen + n + 2 >= sizeof(shared->replay))
    return;
  memcpy(shared->replay + shared->replayLen, entryText, n);
  shared->replayLen += n;
  shared->replay[shared->replayLen++] = '\n';
  shared->replay[shared->replayLen] = 0;
}

static void writeReproducer(const PbcIsolateOptions *o, const char *sigName,
                            char *pathOut, size_t pathLen) {
  snprintf(pathOut, pathLen, "%s/%s-crash-%ld.mlir",
           o->reproDir ? o->reproDir : ".", o->toolName ? o->toolName : "pbc",
           (long)time(NULL));
  FILE *f = fopen(pathOut, "w");
  if (!f) {
    snprintf(pathOut, pathLen, "(could not write a reproducer)");
    return;
  }
  fprintf(f, "// pbc crash reproducer\n// %s during: %s\n", sigName,
          shared->phase);
  if (o->commandLine)
    fprintf(f, "// command: %s\n", o->commandLine);
  /* The replay list runs the same entries, in order, through pbc-opt. */
  fprintf(f, "// replay: pbc-opt THIS_FILE -p '");
  for (const char *c = shared->replay; *c; ++c) {
    if (*c == '\n')
      fputs(c[1] ? ";" : "", f);
    else if (*c == '\'')
      fputs("'\\''", f);
    else
      fputc(*c, f);
  }
  fprintf(f, "'\n");
  if (o->inputText)
    fputs(o->inputText, f);
  fclose(f);
}

/* An OpenMP runtime that the compiled program loaded (LLVM's libomp)
 * registers itself in a file under /dev/shm named by the process id, which
 * its destructor removes and _exit skips. A later process given the same
 * id (they wrap at 32768 here) then refused to start its own runtime ("OMP:
 * Error #15: ... unknown library already initialized"; CI's torch tests
 * failed so). A hard pause shuts the runtime down and removes the file. A
 * child that crashes still leaves its file for a later holder of its pid. */
static void releaseOpenMP(void) {
  int (*pauseAll)(int) =
      (int (*)(int))dlsym(RTLD_DEFAULT, "omp_pause_resource_all");
  if (pauseAll)
    pauseAll(2 /* omp_pause_hard */);
}

int pbcRunIsolated(int (*fn)(void *), void *arg, const PbcIsolateOptions *o) {
  if (!o->enabled)
    return fn(arg);
  shared = mmap(NULL, sizeof(CrashContext), PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    shared = NULL;
    return fn(arg);
  }
  memset(shared, 0, sizeof(*shared));
  snprintf(shared->phase, sizeof(shared->phase), "start-up");
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    perror("pbc: fork");
    return fn(arg);
  }
  if (pid == 0) {
    int code = fn(arg);
    fflush(stdout);
    fflush(stderr);
    releaseOpenMP();
    _exit(code);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    ;
  int code;
  if (WIFEXITED(status)) {
    code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGPIPE) {
    /* The reader of our output went away (e.g. `pbc ... | head`): not a
     * crash; exit the way a shell expects of a killed writer. */
    code = 128 + SIGPIPE;
  } else {
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    char sigName[64];
    snprintf(sigName, sizeof(sigName), "signal %d (%s)", sig, strsignal(sig));
    if (shared->runningProgram) {
      fprintf(stderr,
              "%s: error: the compiled program crashed with %s while %s\n",
              o->toolName ? o->toolName : "pbc", sigName, shared->phase);
      code = PBC_EXIT_PROGRAM_CRASH;
    } else {
      char path[4200];
      writeReproducer(o, sigName, path, sizeof(path));
      fprintf(stderr,
              "%s: error: internal compiler crash: %s during %s\n"
              "%s: note: reproducer written to %s\n",
              o->toolName ? o->toolName : "pbc", sigName, shared->phase,
              o->toolName ? o->toolName : "pbc", path);
      code = PBC_EXIT_COMPILER_CRASH;
    }
  }
  munmap(shared, sizeof(CrashContext));
  shared = NULL;
  return code;
}
