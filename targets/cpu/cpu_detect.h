#ifndef PBC_TARGETS_CPU_DETECT_H
#define PBC_TARGETS_CPU_DETECT_H
#include <stddef.h>
/* Writes the host CPU's chip description text into buf; 0 on success. */
int pbcCpuDetectNative(char *buf, size_t len);
#endif
