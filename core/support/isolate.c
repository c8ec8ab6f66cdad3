/* Crash containment: the work runs in a child process; a shared page says
 * what it was doing (and whether the work returned), so the parent can name
 * the failing pass and write a reproducer. See pbc/isolate.h. */
#include "pbc/isolate.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct CrashContext {
  int runningProgram;
  int finished; /* fn returned; exitCode is its result */
  int exitCode;
  char phase[1024];
  size_t replayLen;
  char replay[60000]; /* entries separated by '\n' */
} CrashContext;

/* The page of the isolated run this process is the child of; NULL in a
 * parent. */
static CrashContext *shared;

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

const char *pbcReproducerDir(const char *explicitDir) {
  if (explicitDir && *explicitDir)
    return explicitDir;
  const char *env = getenv("PBC_REPRODUCER_DIR");
  if (env && *env)
    return env;
  const char *tmp = getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

static void writeReproducer(const CrashContext *ctx, const PbcIsolateOptions *o,
                            const char *what, char *pathOut, size_t pathLen) {
  snprintf(pathOut, pathLen, "%s/%s-crash-XXXXXX.mlir", pbcReproducerDir(o->reproDir),
           o->toolName ? o->toolName : "pbc");
  int fd = mkstemps(pathOut, 5);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    int err = errno;
    if (fd >= 0)
      close(fd);
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", pbcReproducerDir(o->reproDir));
    snprintf(pathOut, pathLen, "(none: cannot write into '%s': %s)", dir, strerror(err));
    return;
  }
  fprintf(f, "// pbc crash reproducer\n// %s during: %s\n", what, ctx->phase);
  if (o->commandLine)
    fprintf(f, "// command: %s\n", o->commandLine);
  /* The replay list runs the same entries, in order, through pbc-opt. */
  fprintf(f, "// replay: pbc-opt THIS_FILE -p '");
  for (const char *c = ctx->replay; *c; ++c) {
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

/* The exit code of a child that did not return from fn normally. */
static int reportAbnormalEnd(const CrashContext *ctx, const PbcIsolateOptions *o,
                             int status) {
  const char *tool = o->toolName ? o->toolName : "pbc";
  char what[128];
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    if (sig == SIGPIPE)
      return 128 + SIGPIPE; /* the reader of our output went away: not a crash */
    snprintf(what, sizeof(what), "signal %d (%s)", sig, strsignal(sig));
  } else if (WIFEXITED(status)) {
    snprintf(what, sizeof(what), "an unexpected process exit (status %d)",
             WEXITSTATUS(status));
  } else {
    snprintf(what, sizeof(what), "an unknown end");
  }
  if (ctx->runningProgram) {
    fprintf(stderr, "%s: error: the compiled program crashed with %s while %s\n", tool, what,
           ctx->phase);
    return PBC_EXIT_PROGRAM_CRASH;
  }
  char path[4200];
  writeReproducer(ctx, o, what, path, sizeof(path));
  fprintf(stderr, "%s: error: internal compiler crash: %s during %s\n"
         "%s: note: reproducer written to %s\n",
         tool, what, ctx->phase, tool, path);
  return PBC_EXIT_COMPILER_CRASH;
}

int pbcRunIsolated(int (*fn)(void *), void *arg, const PbcIsolateOptions *o) {
  if (!o->enabled)
    return fn(arg);
  CrashContext *ctx = mmap(NULL, sizeof(CrashContext), PROT_READ | PROT_WRITE,
                           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (ctx == MAP_FAILED)
    return fn(arg); /* compile unprotected rather than not at all */
  memset(ctx, 0, sizeof(*ctx));
  snprintf(ctx->phase, sizeof(ctx->phase), "start-up");
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    munmap(ctx, sizeof(*ctx));
    return fn(arg);
  }
  if (pid == 0) {
    shared = ctx;
    int code = fn(arg);
    fflush(stdout);
    fflush(stderr);
    ctx->exitCode = code;
    ctx->finished = 1;
    releaseOpenMP();
    _exit(code);
  }
  int status = 0;
  pid_t waited;
  while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
    ;
  int code;
  if (waited < 0) /* SIGCHLD ignored: the page still tells */
    code = ctx->finished ? ctx->exitCode : reportAbnormalEnd(ctx, o, 0x7f);
  else if (ctx->finished && WIFEXITED(status))
    code = WEXITSTATUS(status);
  else
    code = reportAbnormalEnd(ctx, o, status);
  munmap(ctx, sizeof(*ctx));
  return code;
}
