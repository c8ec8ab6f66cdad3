/* The nvgpu runtime's driver table (targets/gpu/runtime/gpu_driver.h): thin
 * calls into the CUDA driver API (libcuda), resolved with dlsym. */
#include <dlfcn.h>
#include <stdint.h>

#include "gpu_driver.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream, *CUevent;
typedef unsigned long long CUdeviceptr;

#define CU_STREAM_NON_BLOCKING 1
#define CU_MEM_ATTACH_GLOBAL 1
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#define CU_JIT_OPTIMIZATION_LEVEL 7

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
  X(cuEventElapsedTime, (float *, CUevent, CUevent))                                          \
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

static const char *resolve(void *lib) {
#define RESOLVE(name, params)                                                                \
  if (!(p_##name = (CUresult(*) params)dlsym(lib, #name)))                                   \
    return #name;
  CUDA_FUNCTIONS(RESOLVE)
#undef RESOLVE
  return NULL;
}

static CUcontext primaryContext;
#define DPTR(p) ((CUdeviceptr)(uintptr_t)(p))

static const char *errorString(int status) {
  const char *msg = NULL;
  return p_cuGetErrorString && p_cuGetErrorString(status, &msg) == 0 ? msg : NULL;
}

static int init(int device) {
  CUdevice dev;
  int r = p_cuInit(0);
  if (!r)
    r = p_cuDeviceGet(&dev, device);
  return r ? r : p_cuDevicePrimaryCtxRetain(&primaryContext, dev);
}

static int enter(void) { return p_cuCtxSetCurrent(primaryContext); }
static int moduleLoad(void **m, const void *image) { return p_cuModuleLoadData(m, image); }

static int moduleLoadJIT(void **m, const void *image, int optLevel) {
  int keys[1] = {CU_JIT_OPTIMIZATION_LEVEL};
  void *values[1] = {(void *)(intptr_t)optLevel};
  return p_cuModuleLoadDataEx(m, image, 1, keys, values);
}

static int moduleUnload(void *m) { return p_cuModuleUnload(m); }
static int moduleGetFunction(void **f, void *m, const char *name) {
  return p_cuModuleGetFunction(f, m, name);
}

static int launch(void *f, const unsigned g[3], const unsigned b[3], unsigned smem, void *stream,
                  void **params, void **extra) {
  /* Dynamic shared memory beyond 48 KiB, less the kernel's static part,
   * needs an opt-in per kernel; opting in for any amount is harmless. */
  if (smem) {
    int r = p_cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem);
    if (r)
      return r;
  }
  return p_cuLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], smem, stream, params, extra);
}

static int streamCreate(void **s) { return p_cuStreamCreate(s, CU_STREAM_NON_BLOCKING); }
static int streamDestroy(void *s) { return p_cuStreamDestroy_v2(s); }
static int streamSynchronize(void *s) { return p_cuStreamSynchronize(s); }
static int streamWaitEvent(void *s, void *e) { return p_cuStreamWaitEvent(s, e, 0); }
static int eventCreate(void **e) { return p_cuEventCreate(e, 0); }
static int eventDestroy(void *e) { return p_cuEventDestroy_v2(e); }
static int eventSynchronize(void *e) { return p_cuEventSynchronize(e); }
static int eventRecord(void *e, void *s) { return p_cuEventRecord(e, s); }
static int eventElapsed(float *ms, void *a, void *b) { return p_cuEventElapsedTime(ms, a, b); }

static int memAlloc(void **p, size_t bytes, bool hostShared) {
  CUdeviceptr d = 0;
  int r = hostShared ? p_cuMemAllocManaged(&d, bytes, CU_MEM_ATTACH_GLOBAL)
                     : p_cuMemAlloc_v2(&d, bytes);
  *p = (void *)(uintptr_t)d;
  return r;
}

static int memFree(void *p) { return p_cuMemFree_v2(DPTR(p)); }
static int memcpyAsync(void *dst, const void *src, size_t bytes, void *s) {
  return p_cuMemcpyAsync(DPTR(dst), DPTR(src), bytes, s);
}
static int memset32Async(void *dst, unsigned v, size_t n, void *s) {
  return p_cuMemsetD32Async(DPTR(dst), v, n, s);
}
static int memset16Async(void *dst, unsigned short v, size_t n, void *s) {
  return p_cuMemsetD16Async(DPTR(dst), v, n, s);
}

static const char *const kLibraries[] = {"libcuda.so.1", NULL};

const PbcGpuDriver pbcGpuDriver = {
    .target = "nvgpu",
    .what = "the CUDA driver",
    .libraries = kLibraries,
    .requirement = "an NVIDIA GPU and its driver are",
    .shutDownStatus = 4 /* CUDA_ERROR_DEINITIALIZED */,
    PBC_GPU_DRIVER_FUNCTIONS,
};
