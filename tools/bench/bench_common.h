/* Shared helpers for the pbc benchmark programs: timing, statistics, data,
 * memref descriptors for the AOT ABI, and loading a pbc-compiled library. */
#ifndef PBC_BENCH_COMMON_H
#define PBC_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define BENCH_MAX_RANK 8

/* Rank-generic memref descriptor. The ABI's descriptor for rank R is
 * { allocated, aligned, offset, sizes[R], strides[R] }: strides follow the
 * sizes directly, so storing them at dims[R..2R) gives the exact layout of any
 * rank-R descriptor, and a pointer to this struct can be passed for it. */
typedef struct {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t dims[2 * BENCH_MAX_RANK];
} BenchMemref;

/* Row-major descriptor over `data` (not owned). */
BenchMemref benchMemrefCreate(float *data, int rank, const int64_t *sizes);
int64_t benchMemrefNumElements(const BenchMemref *m, int rank);

/* 64-byte aligned, exits on failure. Free with benchFree. Buffers of 2 MiB
 * and more are 2 MiB aligned and advised as transparent huge pages (as a
 * host's allocator does for large tensors; the runtime does the same for
 * pbc's own buffers), unless PBC_BENCH_PAGES=4k (2m or unset: huge pages;
 * another value exits with an error). */
float *benchAlloc(size_t n);
void benchFree(float *p);

/* Deterministic uniform values in ±[0.1, 1): never zero, both signs. */
void benchFillRandom(float *p, size_t n, uint64_t seed);
void benchFillNaN(float *p, size_t n);

/* max_i |got_i - ref_i| / scale_i, where scale_i is the sum of the absolute
 * values of the terms summed into element i (e.g. (|A|*|B|)_i for a matmul:
 * the same computation on absolute inputs). fp32 rounding in any summation
 * order stays within a few ulps of that scale, while a plain relative error
 * blows up where mixed-sign sums cancel. NaN in `got` gives +inf. */
double benchMaxRelError(const float *got, const float *ref,
                        const float *scale, size_t n);

/* Elementwise |x|, for computing the scale above. */
void benchAbsCopy(float *dst, const float *src, size_t n);

/* Dies with a message naming `what` if the error exceeds `tol`; else returns
 * the error. */
double benchCheck(const char *what, const float *got, const float *ref,
                  const float *scale, size_t n, double tol);

/* Tolerance for benchCheck: ~170 ulps of the scale; expected rounding error
 * is a few ulps, the bugs it looks for (a missed tile, bad padding, a race,
 * an unwritten element) are far above it. */
#define BENCH_TOL 1e-5

double benchNowSec(void); /* CLOCK_MONOTONIC */

typedef void (*BenchFn)(void *ctx);

typedef struct {
  int warmup;         /* untimed calls per candidate before the first round */
  int reps;           /* timed calls per candidate, in all rounds together */
  int rounds;         /* the candidates take turns this many times */
  double max_seconds; /* per-candidate cap on timed time (slow candidates) */
} BenchTiming;

typedef struct {
  const char *name;
  BenchFn fn;
  void *ctx;
} BenchImpl;

typedef struct {
  double median, min; /* seconds, over all timed calls */
  double *round_median; /* per round; NAN where the candidate sat it out */
  int reps;
} BenchResult;

/* Times the candidates in interleaved rounds: in each round every candidate,
 * after a pause that lets the previous one's thread pool go idle, is
 * re-warmed (>= 20 ms of calls) and gets reps/rounds timed calls (more for
 * short kernels: at least 50 ms of them). Interleaving matters on these
 * VMs: the 2-thread speed halves for seconds at a time (the second vCPU
 * sharing a physical core, or other tenants), so back-to-back blocks per
 * candidate would compare different machines. A candidate whose timed
 * calls exceed max_seconds stops (after at least 3 calls).
 * out[i].round_median is malloc'ed; free with benchResultsFree. */
void benchRunInterleaved(const BenchImpl *impls, int n, BenchTiming t,
                         BenchResult *out);
void benchResultsFree(BenchResult *r, int n);

/* Median over rounds of (a's round median / b's round median): the two were
 * measured seconds apart, so the ratio is robust to the machine's slow
 * drifts and mode switches. Falls back to a.median / b.median when they
 * shared fewer than 3 rounds (a slow candidate stops early). */
double benchPairedRatio(const BenchResult *a, const BenchResult *b,
                        int rounds);

/* Lets spinning worker threads of the previous candidate's thread pool
 * (libgomp, libomp's 200 ms KMP_BLOCKTIME, OpenBLAS) go idle so they don't
 * steal the next candidate's cores on a 2-core machine. */
void benchSettle(void);

double benchGflops(double flops, double seconds);

/* dlopen()s lib and returns _mlir_ciface_<func>, to be cast to its real
 * type; dies with dlerror() text. */
typedef void (*BenchCiface)(void);
BenchCiface benchLoadCiface(const char *lib, const char *func);

/* The result table: one row per candidate, the first being pbc.
 * pbc/peer = paired ratio of pbc's time to the peer's (2.0: pbc takes twice
 * as long; <1: pbc is faster). The rate column is `work` (flops, or bytes)
 * per median time, in units of 1e9 per second, headed `unit` ("GFLOP/s",
 * "GB/s"). */
void benchPrintTable(const BenchImpl *impls, const BenchResult *r, int n,
                     int rounds, double work, const char *unit);

/* One line: CPU model and count, thread settings. Silent when
 * BENCH_NO_ENV_LINE is set. */
void benchPrintEnvironment(void);

/* Parses common flags (--lib, --func, --reps, --rounds, --warmup,
 * --max-seconds) out of argv, compacting the remaining arguments; returns
 * the new argc. */
typedef struct {
  const char *lib;
  const char *func;
  BenchTiming timing;
} BenchOptions;
int benchParseOptions(int argc, char **argv, BenchOptions *o,
                      const char *usage);
/* Whether `flag` (a harness's own switch, e.g. --transpose-b) is among the
 * arguments; removes it, compacting argv and *argc. */
int benchTakeFlag(int *argc, char **argv, const char *flag);

#endif
