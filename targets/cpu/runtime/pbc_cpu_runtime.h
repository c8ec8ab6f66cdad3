/* pbc's cpu runtime (libpbc_cpu_runtime.so, next to the cpu plugin; linked
 * into every library `pbc --emit=lib` makes): what a host may call. */
#ifndef PBC_CPU_RUNTIME_H
#define PBC_CPU_RUNTIME_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Frees the buffers the cache keeps for the next call of generated code
 * (for a host done with pbc's code for a while). Thread-safe. */
void pbc_cpu_release_buffers(void);

/* Bytes the cache keeps now. */
size_t pbc_cpu_cached_bytes(void);

#ifdef __cplusplus
}
#endif

#endif /* PBC_CPU_RUNTIME_H */
