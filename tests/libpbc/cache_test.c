/* libpbc's on-disk cache heals itself: every corruption of an entry
 * (library truncated, emptied, garbage, a byte flipped; signature file
 * empty, garbage, another program's) is detected before anything is
 * loaded, the entry rebuilt, and the compile succeeds with right results.
 * Concurrent processes compiling one program into one cache all succeed;
 * the size bound evicts the least recently used entry, never the new one;
 * another driver keys its own entries.
 * argv[1]: the cpu plugin file. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "pbc/libpbc.h"


enum { N = 29 };
static PbcCompileOptions opts;

static void program(char *buf, size_t len, int k) {
  snprintf(buf, len,
           "func.func @f(%%x: tensor<%dxf32>, %%y: tensor<%dxf32>) -> tensor<%dxf32> {\n"
           "  %%z = tensor.empty() : tensor<%dxf32>\n"
           "  %%r = linalg.%s ins(%%x, %%y : tensor<%dxf32>, tensor<%dxf32>)\n"
           "                  outs(%%z : tensor<%dxf32>) -> tensor<%dxf32>\n"
           "  return %%r : tensor<%dxf32>\n}\n",
           N, N, N, N, k == 0 ? "add" : k == 1 ? "mul" : "sub", N, N, N, N, N);
}

static float expect(int k, float x, float y) { return k == 0 ? x + y : k == 1 ? x * y : x - y; }

/* Compiles program k, runs it on fresh inputs, checks every element;
 * returns the library path (a new string, never freed) or NULL. */
static const char *compileAndCheck(int k, const char *what) {
  char path[4200];
  char text[2048], *err = NULL;
  program(text, sizeof(text), k);
  PbcProgram *p = pbcProgramCompile(text, "cached.mlir", &opts, &err);
  CHECK(p, "%s: compile failed: %s", what, err ? err : "(no message)");
  pbcMessageDestroy(err);
  if (!p)
    return NULL;
  float x[N], y[N], r[N];
  for (int i = 0; i < N; ++i) {
    x[i] = (float)(rand() % 200 - 100) / 4.0f + 0.25f;
    y[i] = (float)(rand() % 200 - 100) / 8.0f + 0.5f;
    r[i] = -12345.0f;
  }
  int64_t shape[1] = {N};
  PbcTensor args[3] = {{"f32", 1, shape, NULL, x}, {"f32", 1, shape, NULL, y},
                       {"f32", 1, shape, NULL, r}};
  err = NULL;
  bool ok = pbcProgramCall(p, 0, args, 3, &err);
  int bad = 0;
  for (int i = 0; i < N; ++i)
    bad += r[i] != expect(k, x[i], y[i]);
  CHECK(ok && !bad, "%s: %d wrong elements %s", what, bad, err ? err : "");
  pbcMessageDestroy(err);
  snprintf(path, sizeof(path), "%s", pbcProgramLibraryPath(p));
  pbcProgramDestroy(p);
  return strdup(path);
}

static void writeFile(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "w");
  if (f) {
    fwrite(data, 1, n, f);
    fclose(f);
  }
}

static long fileSize(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* DIR/pbc-KEY-SUM.so -> DIR/pbc-KEY.sig (see tools/libpbc/cache.h). */
static void sigPath(const char *lib, char *out, size_t len) {
  const char *dash = strrchr(lib, '-');
  snprintf(out, len, "%.*s.sig", dash ? (int)(dash - lib) : 0, lib);
}

static void corrupt(const char *what, const char *lib, const char *sig, const char *otherSig) {
  long size = fileSize(lib);
  if (strcmp(what, "library truncated to half") == 0) {
    if (truncate(lib, size / 2) != 0)
      CHECK(0, "cannot truncate");
  } else if (strcmp(what, "library empty") == 0) {
    writeFile(lib, "", 0);
  } else if (strcmp(what, "library garbage") == 0) {
    writeFile(lib, "garbage, not ELF\n", 17);
  } else if (strcmp(what, "library byte flipped") == 0) {
    int fd = open(lib, O_RDWR);
    unsigned char b;
    if (fd >= 0 && pread(fd, &b, 1, size / 3) == 1) {
      b ^= 0x5a;
      if (pwrite(fd, &b, 1, size / 3) != 1)
        CHECK(0, "cannot flip");
    }
    if (fd >= 0)
      close(fd);
  } else if (strcmp(what, "library missing") == 0) {
    unlink(lib);
  } else if (strcmp(what, "signature empty") == 0) {
    writeFile(sig, "", 0);
  } else if (strcmp(what, "signature garbage") == 0) {
    writeFile(sig, "\x7f\x01 nonsense\n", 12);
  } else if (strcmp(what, "signature of another program") == 0) {
    char buf[1 << 16];
    FILE *f = fopen(otherSig, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
    if (f)
      fclose(f);
    writeFile(sig, buf, n);
  } else if (strcmp(what, "signature a directory") == 0) {
    unlink(sig);
    mkdir(sig, 0755);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: cache_test CPU_PLUGIN.so\n");
    return 2;
  }
  char pluginDir[4096], cacheDir[4096];
  testFolders(argv[1], "libpbc-cache-test", pluginDir, cacheDir);
  opts = (PbcCompileOptions){.pluginDir = pluginDir, .optLevel = 1, .cacheDir = cacheDir};

  /* Another compiler (here: the driver under another path) keys its own
   * entries: a rebuilt pbc never loads the old one's libraries. A child
   * sets the driver before libpbc first looks for it. */
  int fds[2];
  const char *driverEnv = getenv("PBC_DRIVER");
  if (driverEnv && pipe(fds) == 0) {
    char alias[4300], real[4096];
    snprintf(alias, sizeof(alias), "%s-other-pbc", cacheDir);
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      bool linked = realpath(driverEnv, real) && symlink(real, alias) == 0;
      setenv("PBC_DRIVER", alias, 1);
      const char *path = linked ? compileAndCheck(0, "the other driver") : NULL;
      dprintf(fds[1], "%s", path ? path : "");
      _exit(path && !failures ? 0 : 1);
    }
    close(fds[1]);
    char childLib[4300] = "";
    ssize_t got = read(fds[0], childLib, sizeof(childLib) - 1);
    childLib[got > 0 ? got : 0] = 0;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    const char *mine = compileAndCheck(0, "this driver");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0 && childLib[0],
          "compile with another driver path failed");
    CHECK(mine && childLib[0] && strcmp(mine, childLib) != 0,
          "two drivers shared one cache entry: %s", childLib);
  }

  char lib[4200], sig[4200], otherSig[4200];
  const char *other = compileAndCheck(1, "other program");
  if (!other)
    return 1;
  sigPath(other, otherSig, sizeof(otherSig));
  const char *first = compileAndCheck(0, "first compile");
  if (!first)
    return 1;
  snprintf(lib, sizeof(lib), "%s", first);
  sigPath(lib, sig, sizeof(sig));
  const char *cases[] = {"library truncated to half", "library empty", "library garbage",
                         "library byte flipped", "library missing", "signature empty",
                         "signature garbage", "signature of another program",
                         "signature a directory"};
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); ++c) {
    corrupt(cases[c], lib, sig, otherSig);
    const char *again = compileAndCheck(0, cases[c]);
    if (strcmp(cases[c], "signature a directory") == 0) {
      /* Not a file libpbc removes: compiled and loaded without the cache. */
      CHECK(again, "%s: no result", cases[c]);
      rmdir(sig);
      continue;
    }
    CHECK(again && fileSize(again) > 0, "%s: not rebuilt", cases[c]);
    if (!again)
      continue;
    snprintf(lib, sizeof(lib), "%s", again);
    const char *hit = compileAndCheck(0, "the rebuilt entry");
    CHECK(hit && strcmp(hit, lib) == 0, "%s: the rebuilt entry is not a cache hit", cases[c]);
  }

  /* Concurrent processes, one new program, one cache: all succeed. */
  enum { PROCS = 6 };
  pid_t pids[PROCS];
  for (int i = 0; i < PROCS; ++i)
    if ((pids[i] = fork()) == 0) {
      srand((unsigned)getpid());
      failures = 0;
      _exit(compileAndCheck(2, "concurrent writer") && !failures ? 0 : 1);
    }
  for (int i = 0; i < PROCS; ++i) {
    int status = 0;
    waitpid(pids[i], &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "concurrent writer %d failed", i);
  }
  const char *third = compileAndCheck(2, "after the concurrent writers");

  /* A 0 MB bound: the new entry stays, the others go. */
  setenv("PBC_CACHE_MAX_MB", "0", 1);
  unlink(sig); /* forces a rebuild of program 0, which evicts */
  const char *evicting = compileAndCheck(0, "evicting compile");
  unsetenv("PBC_CACHE_MAX_MB");
  CHECK(evicting && fileSize(evicting) > 0, "the new entry was evicted");
  CHECK(fileSize(other) < 0 && fileSize(otherSig) < 0, "the old entry survived the bound");
  CHECK(third && fileSize(third) < 0, "the concurrent writers' entry survived the bound");

  /* The driver keeps compiled kernels in the caller's folder (kernels/). */
  char kernels[4200];
  snprintf(kernels, sizeof(kernels), "%s/kernels", cacheDir);
  DIR *kd = opendir(kernels);
  int entries = 0;
  for (struct dirent *e; kd && (e = readdir(kd));)
    entries += strstr(e->d_name, ".o.pbc") != NULL;
  if (kd)
    closedir(kd);
  CHECK(entries > 0, "no compiled kernels in %s", kernels);

  if (failures)
    fprintf(stderr, "%d failures\n", failures);
  else
    printf("libpbc cache: %zu corruptions rebuilt, %d concurrent writers, eviction: all "
           "checks passed\n",
           sizeof(cases) / sizeof(cases[0]), PROCS);
  return failures != 0;
}
