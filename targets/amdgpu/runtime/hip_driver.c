/* The amdgpu runtime's driver table (targets/gpu/runtime/gpu_driver.h): thin
 * calls into HIP's module API (libamdhip64), resolved with dlsym. */
#include <dlfcn.h>
#include <stdint.h>

#include "gpu_driver.h"

typedef int hipError_t;
typedef void *hipModule_t, *hipFunction_t, *hipStream_t, *hipEvent_t;

#define HIP_STREAM_NON_BLOCKING 1
#define HIP_MEM_ATTACH_GLOBAL 1
#define HIP_MEMCPY_DEFAULT 4 /* direction inferred from the pointers */

#define HIP_FUNCTIONS(X)                                                                      \
  X(hipInit, (unsigned))                                                                      \
  X(hipSetDevice, (int))                                                                      \
  X(hipModuleLoadData, (hipModule_t *, const void *))                                         \
  X(hipModuleUnload, (hipModule_t))                                                           \
  X(hipModuleGetFunction, (hipFunction_t *, hipModule_t, const char *))                       \
  X(hipModuleLaunchKernel, (hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned,  \
                            unsigned, unsigned, hipStream_t, void **, void **))               \
  X(hipStreamCreateWithFlags, (hipStream_t *, unsigned))                                      \
  X(hipStreamDestroy, (hipStream_t))                                                          \
  X(hipStreamSynchronize, (hipStream_t))                                                      \
  X(hipStreamWaitEvent, (hipStream_t, hipEvent_t, unsigned))                                  \
  X(hipEventCreate, (hipEvent_t *))                                                           \
  X(hipEventDestroy, (hipEvent_t))                                                            \
  X(hipEventSynchronize, (hipEvent_t))                                                        \
  X(hipEventRecord, (hipEvent_t, hipStream_t))                                                \
  X(hipEventElapsedTime, (float *, hipEvent_t, hipEvent_t))                                   \
  X(hipMalloc, (void **, size_t))                                                             \
  X(hipMallocManaged, (void **, size_t, unsigned))                                            \
  X(hipFree, (void *))                                                                        \
  X(hipMemcpyAsync, (void *, const void *, size_t, int, hipStream_t))                         \
  X(hipMemsetD32Async, (void *, int, size_t, hipStream_t))                                    \
  X(hipMemsetD16Async, (void *, unsigned short, size_t, hipStream_t))

#define DECLARE(name, params) static hipError_t(*p_##name) params;
HIP_FUNCTIONS(DECLARE)
#undef DECLARE
static const char *(*p_hipGetErrorString)(hipError_t);

static const char *resolve(void *lib) {
#define RESOLVE(name, params)                                                                \
  if (!(p_##name = (hipError_t(*) params)dlsym(lib, #name)))                                 \
    return #name;
  HIP_FUNCTIONS(RESOLVE)
#undef RESOLVE
  if (!(p_hipGetErrorString = (const char *(*)(hipError_t))dlsym(lib, "hipGetErrorString")))
    return "hipGetErrorString";
  return NULL;
}

static int device;

static const char *errorString(int status) {
  return p_hipGetErrorString ? p_hipGetErrorString(status) : NULL;
}

static int init(int dev) {
  device = dev;
  return p_hipInit(0);
}

/* HIP's current device is per thread. */
static int enter(void) { return p_hipSetDevice(device); }
static int moduleLoad(void **m, const void *image) { return p_hipModuleLoadData(m, image); }

/* HSACO is already machine code: nothing to JIT. */
static int moduleLoadJIT(void **m, const void *image, int optLevel) {
  (void)optLevel;
  return p_hipModuleLoadData(m, image);
}

static int moduleUnload(void *m) { return p_hipModuleUnload(m); }
static int moduleGetFunction(void **f, void *m, const char *name) {
  return p_hipModuleGetFunction(f, m, name);
}

static int launch(void *f, const unsigned g[3], const unsigned b[3], unsigned smem, void *stream,
                  void **params, void **extra) {
  return p_hipModuleLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], smem, stream, params,
                                 extra);
}

static int streamCreate(void **s) { return p_hipStreamCreateWithFlags(s, HIP_STREAM_NON_BLOCKING); }
static int streamDestroy(void *s) { return p_hipStreamDestroy(s); }
static int streamSynchronize(void *s) { return p_hipStreamSynchronize(s); }
static int streamWaitEvent(void *s, void *e) { return p_hipStreamWaitEvent(s, e, 0); }
static int eventCreate(void **e) { return p_hipEventCreate(e); }
static int eventDestroy(void *e) { return p_hipEventDestroy(e); }
static int eventSynchronize(void *e) { return p_hipEventSynchronize(e); }
static int eventRecord(void *e, void *s) { return p_hipEventRecord(e, s); }
static int eventElapsed(float *ms, void *a, void *b) { return p_hipEventElapsedTime(ms, a, b); }

static int memAlloc(void **p, size_t bytes, bool hostShared) {
  return hostShared ? p_hipMallocManaged(p, bytes, HIP_MEM_ATTACH_GLOBAL) : p_hipMalloc(p, bytes);
}

static int memFree(void *p) { return p_hipFree(p); }
static int memcpyAsync(void *dst, const void *src, size_t bytes, void *s) {
  return p_hipMemcpyAsync(dst, src, bytes, HIP_MEMCPY_DEFAULT, s);
}
static int memset32Async(void *dst, unsigned v, size_t n, void *s) {
  return p_hipMemsetD32Async(dst, (int)v, n, s);
}
static int memset16Async(void *dst, unsigned short v, size_t n, void *s) {
  return p_hipMemsetD16Async(dst, v, n, s);
}

static const char *const kLibraries[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5",
                                         NULL};

const PbcGpuDriver pbcGpuDriver = {
    .target = "amdgpu",
    .what = "the HIP runtime",
    .libraries = kLibraries,
    .requirement = "an AMD GPU, its kernel driver and the HIP runtime are",
    .shutDownStatus = 4 /* hipErrorDeinitialized */,
    PBC_GPU_DRIVER_FUNCTIONS,
};
