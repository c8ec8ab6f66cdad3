/*===- gpu_driver.h - What a GPU vendor's driver API gives mgpu_runtime ---===*\
|* MLIR's GPU host code calls mgpu* functions (see MLIR's gpu-to-llvm        *|
|* lowering); mgpu_runtime.c implements them once, for every GPU target, on  *|
|* this table. A target's runtime supplies the table (cuda_driver.c for      *|
|* nvgpu, hip_driver.c for amdgpu): thin calls into its vendor library,      *|
|* which mgpu_runtime opens with dlopen on first use, so compiled programs   *|
|* link and load on machines without that driver.                            *|
|*                                                                           *|
|* Every entry returns the vendor's status (0 is success).                   *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_GPU_DRIVER_H
#define PBC_GPU_DRIVER_H

#include <stdbool.h>
#include <stddef.h>

typedef struct PbcGpuDriver {
  const char *target;             /* "nvgpu": prefixes every message */
  const char *what;               /* "the CUDA driver" */
  const char *const *libraries;   /* sonames to try, NULL-terminated */
  const char *requirement;        /* "an NVIDIA GPU and its driver are" */
  /* The status the driver returns once it has shut down at process exit
   * (CUDA_ERROR_DEINITIALIZED, hipErrorDeinitialized): a compiled library's
   * destructor can unload its kernels after that, when the driver has
   * already released them. */
  int shutDownStatus;
  /* Looks up the entry points in the opened library; returns the name of
   * the first one missing, or NULL. */
  const char *(*resolve)(void *library);
  const char *(*errorString)(int status);
  /* Once per process, before anything else. */
  int (*init)(int device);
  /* On every mgpu call: makes the device current on the calling thread. */
  int (*enter)(void);
  int (*moduleLoad)(void **module, const void *image);
  int (*moduleLoadJIT)(void **module, const void *image, int optLevel);
  int (*moduleUnload)(void *module);
  int (*moduleGetFunction)(void **function, void *module, const char *name);
  int (*launch)(void *function, const unsigned grid[3], const unsigned block[3],
                unsigned sharedBytes, void *stream, void **params, void **extra);
  int (*streamCreate)(void **stream);
  int (*streamDestroy)(void *stream);
  int (*streamSynchronize)(void *stream);
  int (*streamWaitEvent)(void *stream, void *event);
  int (*eventCreate)(void **event);
  int (*eventDestroy)(void *event);
  int (*eventSynchronize)(void *event);
  int (*eventRecord)(void *event, void *stream);
  /* Milliseconds between two recorded, completed events. */
  int (*eventElapsed)(float *ms, void *start, void *stop);
  /* hostShared: memory both host and device address (managed). */
  int (*memAlloc)(void **ptr, size_t bytes, bool hostShared);
  int (*memFree)(void *ptr);
  int (*memcpyAsync)(void *dst, const void *src, size_t bytes, void *stream);
  int (*memset32Async)(void *dst, unsigned value, size_t count, void *stream);
  int (*memset16Async)(void *dst, unsigned short value, size_t count, void *stream);
} PbcGpuDriver;

/* The function fields, for a driver file whose static functions are named
 * after them: {.target = ..., .what = ..., .libraries = ...,
 * .requirement = ..., PBC_GPU_DRIVER_FUNCTIONS}. */
#define PBC_GPU_DRIVER_FUNCTIONS                                                            \
  .resolve = resolve, .errorString = errorString, .init = init, .enter = enter,             \
  .moduleLoad = moduleLoad, .moduleLoadJIT = moduleLoadJIT, .moduleUnload = moduleUnload,   \
  .moduleGetFunction = moduleGetFunction, .launch = launch, .streamCreate = streamCreate,   \
  .streamDestroy = streamDestroy, .streamSynchronize = streamSynchronize,                   \
  .streamWaitEvent = streamWaitEvent, .eventCreate = eventCreate,                           \
  .eventDestroy = eventDestroy, .eventSynchronize = eventSynchronize,                       \
  .eventRecord = eventRecord, .eventElapsed = eventElapsed, .memAlloc = memAlloc, .memFree = memFree,                     \
  .memcpyAsync = memcpyAsync, .memset32Async = memset32Async, .memset16Async = memset16Async

/* Defined by the target's runtime. */
extern const PbcGpuDriver pbcGpuDriver;

#endif
