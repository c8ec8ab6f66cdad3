/* The nvgpu runtime: the mgpu* functions MLIR's GPU host code calls (see
 * MLIR's gpu-to-llvm lowering), implemented in C on the CUDA driver API.
 *
 * libcuda is opened with dlopen on first use, so pbc builds, and compiled
 * programs link and load, on machines without an NVIDIA driver; running one
 * there fails with a message that says so. Every driver call's status is
 * checked: a failure prints the call, the driver's message and the mgpu
 * function, then exits (the host code MLIR generates has no error path);
 * with _exit, because the first call can come from the constructor that
 * loads the kernels, while the dynamic loader holds its lock. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream, *CUevent;
typedef unsigned long long CUdeviceptr;

#define CU_STREAM_NON_BLOCKING 1
#define CU_MEM_ATTACH_GLOBAL 1
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#define CU_EVENT_DEFAULT 0

/* The driver entry points used, resolved once. */
#define CUDA_FUNCTIONS(X)                                                                     \
  X(cuInit, (unsigned))                                                                       \
  X(cuDeviceGet, (CUdevice *, int))                                                           \
  X(cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))                                        \
  X(cuCtxSetCurrent, (CUcontext))                                                             \
  X(cuModuleLoadData, (CUmodule *, const void *))                                             \
  X(cuModuleLoadDataEx, (CUmodule *, const void *, unsigned, int *, void **))                 \
  X(cuModuleUnload, (CUmodule))                                                               \
  X(cuModuleGetFunction, (CUfunction *, CUmodule, const char *))                              \
  X(cuFuncSetAttribute, (CUfunction, int, int))                                               \
  X(cuLaunchKernel, (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, \
                     unsigned, CUstream, void **, void **))                                   \
  X(cuStreamCreate, (CUstream *, unsigned))                                                   \
  X(cuStreamDestroy_v2, (CUstream))                                                           \
  X(cuStreamSynchronize, (CUstream))                                                          \
  X(cuStreamWaitEvent, (CUstream, CUevent, unsigned))                                         \
  X(cuEventCreate, (CUevent *, unsigned))                                                     \
  X(cuEventDestroy_v2, (CUevent))                                                             \
  X(cuEventSynchronize, (CUevent))                                                            \
  X(cuEventRecord, (CUevent, CUstream))                                                       \
  X(cuMemAlloc_v2, (CUdeviceptr *, size_t))                                                   \
  X(cuMemAllocManaged, (CUdeviceptr *, size_t, unsigned))                                     \
  X(cuMemFree_v2, (CUdeviceptr))                                                              \
  X(cuMemcpyAsync, (CUdeviceptr, CUdeviceptr, size_t, CUstream))                              \
  X(cuMemsetD32Async, (CUdeviceptr, unsigned, size_t, CUstream))                              \
  X(cuMemsetD16Async, (CUdeviceptr, unsigned short, size_t, CUstream))                        \
  X(cuGetErrorString, (CUresult, const char **))

#define DECLARE(name, params) static CUresult(*p_##name) params;
CUDA_FUNCTIONS(DECLARE)
#undef DECLARE

static pthread_once_t initOnce = PTHREAD_ONCE_INIT;
static CUcontext primaryContext;
static int defaultDevice;

static void fail(const char *what, CUresult r, const char *where) {
  const char *msg = NULL;
  if (p_cuGetErrorString)
    p_cuGetErrorString(r, &msg);
  fprintf(stderr, "pbc nvgpu runtime: %s failed in %s: %s (CUresult %d)\n", what, where,
          msg ? msg : "unknown error", r);
  fflush(NULL);
  _exit(1);
}

#define CHECK(call, where)                                                                   \
  do {                                                                                       \
    CUresult r_ = (call);                                                                    \
    if (r_ != 0)                                                                             \
      fail(#call, r_, where);                                                                \
  } while (0)

static void loadDriver(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    fprintf(stderr,
            "pbc nvgpu runtime: cannot load the CUDA driver: %s.\n"
            "Code compiled for --target=nvgpu runs only where an NVIDIA GPU and its driver "
            "are installed.\n",
            dlerror());
    fflush(NULL);
    _exit(1);
  }
#define RESOLVE(name, params)                                                                \
  p_##name = (CUresult(*) params)dlsym(lib, #name);                                          \
  if (!p_##name) {                                                                           \
    fprintf(stderr, "pbc nvgpu runtime: the CUDA driver lacks %s\n", #name);                \
    fflush(NULL);                                                                            \
    _exit(1);                                                                                \
  }
  CUDA_FUNCTIONS(RESOLVE)
#undef RESOLVE
  CUdevice dev;
  CHECK(p_cuInit(0), "initialization");
  CHECK(p_cuDeviceGet(&dev, defaultDevice), "initialization");
  CHECK(p_cuDevicePrimaryCtxRetain(&primaryContext, dev), "initialization");
}

/* Every entry point makes the primary context current on the calling thread. */
static void enter(const char *where) {
  pthread_once(&initOnce, loadDriver);
  CHECK(p_cuCtxSetCurrent(primaryContext), where);
}

void mgpuSetDefaultDevice(int32_t device) { defaultDevice = device; }

void *mgpuModuleLoad(void *data, size_t size) {
  (void)size;
  enter("mgpuModuleLoad");
  CUmodule m = NULL;
  CHECK(p_cuModuleLoadData(&m, data), "mgpuModuleLoad");
  return m;
}

void *mgpuModuleLoadJIT(void *data, int optLevel, size_t size) {
  (void)size;
  enter("mgpuModuleLoadJIT");
  int keys[1] = {7 /* CU_JIT_OPTIMIZATION_LEVEL */};
  void *values[1] = {(void *)(intptr_t)optLevel};
  CUmodule m = NULL;
  CHECK(p_cuModuleLoadDataEx(&m, data, 1, keys, values), "mgpuModuleLoadJIT");
  return m;
}

void mgpuModuleUnload(void *module) {
  enter("mgpuModuleUnload");
  CHECK(p_cuModuleUnload(module), "mgpuModuleUnload");
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  enter("mgpuModuleGetFunction");
  CUfunction f = NULL;
  CHECK(p_cuModuleGetFunction(&f, module, name), "mgpuModuleGetFunction");
  return f;
}

void mgpuLaunchKernel(void *function, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx,
                      intptr_t by, intptr_t bz, int32_t smem, void *stream, void **params,
                      void **extra, size_t paramsCount) {
  (void)paramsCount;
  enter("mgpuLaunchKernel");
  if (smem > 48 * 1024) /* beyond the default needs an opt-in per kernel */
    CHECK(p_cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
          "mgpuLaunchKernel");
  CHECK(p_cuLaunchKernel(function, (unsigned)gx, (unsigned)gy, (unsigned)gz, (unsigned)bx,
                         (unsigned)by, (unsigned)bz, (unsigned)smem, stream, params, extra),
        "mgpuLaunchKernel");
}

void *mgpuStreamCreate(void) {
  enter("mgpuStreamCreate");
  CUstream s = NULL;
  CHECK(p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "mgpuStreamCreate");
  return s;
}

void mgpuStreamDestroy(void *stream) {
  enter("mgpuStreamDestroy");
  CHECK(p_cuStreamDestroy_v2(stream), "mgpuStreamDestroy");
}

void mgpuStreamSynchronize(void *stream) {
  enter("mgpuStreamSynchronize");
  CHECK(p_cuStreamSynchronize(stream), "mgpuStreamSynchronize");
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  enter("mgpuStreamWaitEvent");
  CHECK(p_cuStreamWaitEvent(stream, event, 0), "mgpuStreamWaitEvent");
}

void *mgpuEventCreate(void) {
  enter("mgpuEventCreate");
  CUevent e = NULL;
  CHECK(p_cuEventCreate(&e, CU_EVENT_DEFAULT), "mgpuEventCreate");
  return e;
}

void mgpuEventDestroy(void *event) {
  enter("mgpuEventDestroy");
  CHECK(p_cuEventDestroy_v2(event), "mgpuEventDestroy");
}

void mgpuEventSynchronize(void *event) {
  enter("mgpuEventSynchronize");
  CHECK(p_cuEventSynchronize(event), "mgpuEventSynchronize");
}

void mgpuEventRecord(void *event, void *stream) {
  enter("mgpuEventRecord");
  CHECK(p_cuEventRecord(event, stream), "mgpuEventRecord");
}

void *mgpuMemAlloc(uint64_t bytes, void *stream, bool hostShared) {
  (void)stream;
  enter("mgpuMemAlloc");
  CUdeviceptr p = 0;
  if (bytes == 0)
    return NULL;
  if (hostShared)
    CHECK(p_cuMemAllocManaged(&p, bytes, CU_MEM_ATTACH_GLOBAL), "mgpuMemAlloc");
  else
    CHECK(p_cuMemAlloc_v2(&p, bytes), "mgpuMemAlloc");
  return (void *)(uintptr_t)p;
}

void mgpuMemFree(void *ptr, void *stream) {
  enter("mgpuMemFree");
  if (stream) /* freeing under a running kernel would be a use after free */
    CHECK(p_cuStreamSynchronize(stream), "mgpuMemFree");
  if (ptr)
    CHECK(p_cuMemFree_v2((CUdeviceptr)(uintptr_t)ptr), "mgpuMemFree");
}

/* Copies complete before returning: pbc's host code issues synchronous
 * gpu.memcpy ops (stream null) between kernels on their own streams. */
void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  enter("mgpuMemcpy");
  CHECK(p_cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes, stream),
        "mgpuMemcpy");
  CHECK(p_cuStreamSynchronize(stream), "mgpuMemcpy");
}

void mgpuMemset32(void *dst, unsigned value, size_t count, void *stream) {
  enter("mgpuMemset32");
  CHECK(p_cuMemsetD32Async((CUdeviceptr)(uintptr_t)dst, value, count, stream), "mgpuMemset32");
  CHECK(p_cuStreamSynchronize(stream), "mgpuMemset32");
}

void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream) {
  enter("mgpuMemset16");
  CHECK(p_cuMemsetD16Async((CUdeviceptr)(uintptr_t)dst, value, count, stream), "mgpuMemset16");
  CHECK(p_cuStreamSynchronize(stream), "mgpuMemset16");
}
