/* The mgpu* functions MLIR's GPU host code calls, for every GPU target, on
 * the vendor driver table the target's runtime supplies (gpu_driver.h).
 *
 * The vendor library is opened with dlopen on first use; without it the
 * program fails with a message that says what it needs. Every driver call's
 * status is checked: a failure prints the call, the driver's message and the
 * mgpu function, then exits (the host code MLIR generates has no error
 * path); with _exit, because the first call can come from the constructor
 * that loads the kernels, while the dynamic loader holds its lock. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpu_driver.h"

static const PbcGpuDriver *const D = &pbcGpuDriver;
static pthread_once_t initOnce = PTHREAD_ONCE_INIT;
static int defaultDevice;

static void die(void) {
  fflush(NULL);
  _exit(1);
}

static void fail(const char *what, int status, const char *where) {
  const char *msg = D->errorString ? D->errorString(status) : NULL;
  fprintf(stderr, "pbc %s runtime: %s failed in %s: %s (status %d)\n", D->target, what, where,
          msg ? msg : "unknown error", status);
  die();
}

#define CHECK(call, where)                                                                   \
  do {                                                                                       \
    int r_ = (call);                                                                         \
    if (r_ != 0)                                                                             \
      fail(#call, r_, where);                                                                \
  } while (0)

static void loadDriver(void) {
  void *lib = NULL;
  for (const char *const *name = D->libraries; *name && !lib; ++name)
    lib = dlopen(*name, RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    fprintf(stderr,
            "pbc %s runtime: cannot load %s: %s.\n"
            "Code compiled for --target=%s runs only where %s installed.\n",
            D->target, D->what, dlerror(), D->target, D->requirement);
    die();
  }
  const char *missing = D->resolve(lib);
  if (missing) {
    fprintf(stderr, "pbc %s runtime: %s lacks %s\n", D->target, D->what, missing);
    die();
  }
  CHECK(D->init(defaultDevice), "initialization");
}

/* Every entry point makes the device current on the calling thread. */
static void enter(const char *where) {
  pthread_once(&initOnce, loadDriver);
  CHECK(D->enter(), where);
}

void mgpuSetDefaultDevice(int32_t device) { defaultDevice = device; }

void *mgpuModuleLoad(void *data, size_t size) {
  (void)size;
  enter("mgpuModuleLoad");
  void *m = NULL;
  CHECK(D->moduleLoad(&m, data), "mgpuModuleLoad");
  return m;
}

void *mgpuModuleLoadJIT(void *data, int optLevel, size_t size) {
  (void)size;
  enter("mgpuModuleLoadJIT");
  void *m = NULL;
  CHECK(D->moduleLoadJIT(&m, data, optLevel), "mgpuModuleLoadJIT");
  return m;
}

void mgpuModuleUnload(void *module) {
  pthread_once(&initOnce, loadDriver);
  int r = D->enter();
  if (r == 0)
    r = D->moduleUnload(module);
  if (r != 0 && r != D->shutDownStatus)
    fail("D->moduleUnload(module)", r, "mgpuModuleUnload");
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  enter("mgpuModuleGetFunction");
  void *f = NULL;
  CHECK(D->moduleGetFunction(&f, module, name), "mgpuModuleGetFunction");
  return f;
}

/* Kernel timing for benchmarks (PBC_GPU_KERNEL_TIMING=1): each launch is
 * bracketed by events and waited for, and its time added up, so a caller
 * can tell kernel time from the host<->device copies around it. */
static double kernelMilliseconds;
static int timingKernels = -1;

double pbcGpuKernelMilliseconds(void) { return kernelMilliseconds; }
void pbcGpuKernelTimingReset(void) { kernelMilliseconds = 0; }

void mgpuLaunchKernel(void *function, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx,
                      intptr_t by, intptr_t bz, int32_t smem, void *stream, void **params,
                      void **extra, size_t paramsCount) {
  (void)paramsCount;
  enter("mgpuLaunchKernel");
  if (timingKernels < 0)
    timingKernels = getenv("PBC_GPU_KERNEL_TIMING") != NULL;
  const unsigned grid[3] = {(unsigned)gx, (unsigned)gy, (unsigned)gz};
  const unsigned block[3] = {(unsigned)bx, (unsigned)by, (unsigned)bz};
  void *start = NULL, *stop = NULL;
  if (timingKernels) {
    CHECK(D->eventCreate(&start), "mgpuLaunchKernel (timing)");
    CHECK(D->eventCreate(&stop), "mgpuLaunchKernel (timing)");
    CHECK(D->eventRecord(start, stream), "mgpuLaunchKernel (timing)");
  }
  CHECK(D->launch(function, grid, block, (unsigned)smem, stream, params, extra),
        "mgpuLaunchKernel");
  if (timingKernels) {
    float ms = 0;
    CHECK(D->eventRecord(stop, stream), "mgpuLaunchKernel (timing)");
    CHECK(D->eventSynchronize(stop), "mgpuLaunchKernel (timing)");
    CHECK(D->eventElapsed(&ms, start, stop), "mgpuLaunchKernel (timing)");
    kernelMilliseconds += ms;
    CHECK(D->eventDestroy(start), "mgpuLaunchKernel (timing)");
    CHECK(D->eventDestroy(stop), "mgpuLaunchKernel (timing)");
  }
}

void *mgpuStreamCreate(void) {
  enter("mgpuStreamCreate");
  void *s = NULL;
  CHECK(D->streamCreate(&s), "mgpuStreamCreate");
  return s;
}

void mgpuStreamDestroy(void *stream) {
  enter("mgpuStreamDestroy");
  CHECK(D->streamDestroy(stream), "mgpuStreamDestroy");
}

void mgpuStreamSynchronize(void *stream) {
  enter("mgpuStreamSynchronize");
  CHECK(D->streamSynchronize(stream), "mgpuStreamSynchronize");
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  enter("mgpuStreamWaitEvent");
  CHECK(D->streamWaitEvent(stream, event), "mgpuStreamWaitEvent");
}

void *mgpuEventCreate(void) {
  enter("mgpuEventCreate");
  void *e = NULL;
  CHECK(D->eventCreate(&e), "mgpuEventCreate");
  return e;
}

void mgpuEventDestroy(void *event) {
  enter("mgpuEventDestroy");
  CHECK(D->eventDestroy(event), "mgpuEventDestroy");
}

void mgpuEventSynchronize(void *event) {
  enter("mgpuEventSynchronize");
  CHECK(D->eventSynchronize(event), "mgpuEventSynchronize");
}

void mgpuEventRecord(void *event, void *stream) {
  enter("mgpuEventRecord");
  CHECK(D->eventRecord(event, stream), "mgpuEventRecord");
}

void *mgpuMemAlloc(uint64_t bytes, void *stream, bool hostShared) {
  (void)stream;
  enter("mgpuMemAlloc");
  void *p = NULL;
  if (bytes == 0)
    return NULL;
  CHECK(D->memAlloc(&p, bytes, hostShared), "mgpuMemAlloc");
  return p;
}

void mgpuMemFree(void *ptr, void *stream) {
  enter("mgpuMemFree");
  if (stream) /* freeing under a running kernel would be a use after free */
    CHECK(D->streamSynchronize(stream), "mgpuMemFree");
  if (ptr)
    CHECK(D->memFree(ptr), "mgpuMemFree");
}

/* Copies complete before returning: pbc's host code issues synchronous
 * gpu.memcpy ops (stream null) between kernels on their own streams. */
void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  enter("mgpuMemcpy");
  CHECK(D->memcpyAsync(dst, src, bytes, stream), "mgpuMemcpy");
  CHECK(D->streamSynchronize(stream), "mgpuMemcpy");
}

void mgpuMemset32(void *dst, unsigned value, size_t count, void *stream) {
  enter("mgpuMemset32");
  CHECK(D->memset32Async(dst, value, count, stream), "mgpuMemset32");
  CHECK(D->streamSynchronize(stream), "mgpuMemset32");
}

void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream) {
  enter("mgpuMemset16");
  CHECK(D->memset16Async(dst, value, count, stream), "mgpuMemset16");
  CHECK(D->streamSynchronize(stream), "mgpuMemset16");
}
