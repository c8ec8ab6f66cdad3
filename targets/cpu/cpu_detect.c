/* The host CPU as a chip description (--chip=native), read at run time:
 * cores, SIMD width (cpuid), caches (sysfs), clock (/proc/cpuinfo). */
#include "cpu_detect.h"

#include <cpuid.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llvm-c/Core.h"
#include "llvm-c/TargetMachine.h"

static long readCacheBytes(int level, const char *type) {
  for (int i = 0; i < 8; ++i) {
    char path[128], buf[64];
    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    FILE *f = fopen(path, "r");
    if (!f)
      break;
    int lvl = fgets(buf, sizeof(buf), f) ? atoi(buf) : 0;
    fclose(f);
    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
    f = fopen(path, "r");
    char t[32] = "";
    if (f) {
      if (fgets(t, sizeof(t), f))
        t[strcspn(t, "\n")] = 0;
      fclose(f);
    }
    if (lvl != level || (strcmp(t, type) != 0 && strcmp(t, "Unified") != 0))
      continue;
    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    f = fopen(path, "r");
    if (!f)
      continue;
    long kb = fgets(buf, sizeof(buf), f) ? atol(buf) : 0;
    char unit = buf[strspn(buf, "0123456789")];
    fclose(f);
    return unit == 'M' ? kb * 1024 * 1024 : kb * 1024;
  }
  return 0;
}

static double readMhz(void) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f)
    return 0;
  char line[512];
  double mhz = 0;
  while (fgets(line, sizeof(line), f))
    if (strncmp(line, "cpu MHz", 7) == 0) {
      mhz = atof(strchr(line, ':') + 1);
      break;
    }
  fclose(f);
  return mhz;
}

/* AVX-512 VNNI (vpdpbusd): four i8 products per i32 lane (pbc-dot-i8). */
static bool hasAvx512Vnni(void) {
  unsigned a, b, c, d;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX512F) && (c & bit_AVX512VNNI);
}

static int vectorBits(void) {
  unsigned a, b, c, d;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX512F))
    return 512;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX2))
    return 256;
  return 128;
}

int pbcCpuDetectNative(char *buf, size_t len) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int vbits = vectorBits();
  double ghz = readMhz() / 1000.0;
  char *cpu = LLVMGetHostCPUName();
  /* Two FMA pipes per core on current x86 cores; 2 flops per FMA. */
  double peak = (double)cores * ghz * 2 * (vbits / 32) * 2;
  int n = snprintf(buf, len,
                   "# detected at run time on this machine\n"
                   "name = native\nisa = x86-64\nllvm-cpu = %s\nllvm-features = native\n"
                   "cores = %ld\nvector-bits = %d\nvector-lanes-f32 = %d\nvector-registers = %d\n"
                   "warp-size = 1\n"
                   "l1d-bytes = %ld\nl2-bytes = %ld\nl3-bytes = %ld\ncache-line-bytes = 64\n"
                   "ghz = %.2f\npeak-gflops-f32 = %.0f\nfast-memory-space = 0\n"
                   "matrix-units = none\nldexp = %s\nint8-dot = %s\n",
                   cpu, cores, vbits, vbits / 32, vbits == 512 ? 32 : 16, readCacheBytes(1, "Data"),
                   readCacheBytes(2, "Unified"), readCacheBytes(3, "Unified"), ghz, peak,
                   vbits == 512 ? "avx512" : "library", hasAvx512Vnni() ? "avx512-vnni" : "none");
  LLVMDisposeMessage(cpu);
  return n > 0 && (size_t)n < len ? 0 : -1;
}
