/* bench_matmul_i8: C[M,N] (i32) = A[M,K] * B[K,N] (or B[N,K] transposed:
 * --transpose-b) on i8 operands, from a pbc-compiled library against
 * oneDNN's dnnl_gemm_s8s8s32 and a naive loop, in one process. Integer sums
 * are exact: every candidate must match the naive loop element for
 * element. */
#include "bench_common.h"

#include <dnnl.h>
#include <dnnl_debug.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *kUsage =
    "usage: bench_matmul_i8 --lib LIB.so --func NAME M N K [--transpose-b]\n"
    "       [--reps N] [--rounds N] [--warmup N] [--max-seconds S]\n"
    "  LIB exports _mlir_ciface_NAME(A[MxK] i8*, B[KxN] i8*, C[MxN] i32*)\n"
    "  (memref descriptors, C caller-allocated; B[NxK] with --transpose-b).\n"
    "  Times it against oneDNN dnnl_gemm_s8s8s32 and a naive loop; checks\n"
    "  that its result is exact.\n";

typedef void (*MatmulFn)(BenchMemref *, BenchMemref *, BenchMemref *);

typedef struct {
  int64_t M, N, K;
  bool transB;
  int8_t *A, *B;
  int32_t *C;
  BenchMemref dA, dB, dC;
  MatmulFn pbc;
} Ctx;

static void runPbc(void *p) {
  Ctx *c = p;
  c->pbc(&c->dA, &c->dB, &c->dC);
}

static void runDnnl(void *p) {
  Ctx *c = p;
  const int32_t co = 0;
  dnnl_status_t s = dnnl_gemm_s8s8s32('N', c->transB ? 'T' : 'N', 'F', c->M, c->N, c->K, 1.0f,
                                      c->A, c->K, 0, c->B, c->transB ? c->K : c->N, 0, 0.0f,
                                      c->C, c->N, &co);
  if (s != dnnl_success) {
    fprintf(stderr, "dnnl_gemm_s8s8s32 failed: %d\n", (int)s);
    exit(2);
  }
}

static void runNaive(void *p) {
  Ctx *c = p;
  const int64_t M = c->M, N = c->N, K = c->K;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      int32_t s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += (int32_t)c->A[i * K + k] * (c->transB ? c->B[j * K + k] : c->B[k * N + j]);
      c->C[i * N + j] = s;
    }
}

/* Bytes through benchAlloc (64-byte aligned, huge pages as the others). */
static void *alloc(size_t bytes) { return benchAlloc((bytes + sizeof(float) - 1) / sizeof(float)); }

static void check(const char *what, const int32_t *got, const int32_t *ref, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (got[i] != ref[i]) {
      fprintf(stderr, "%s: element %zu is %d, expected %d\n", what, i, got[i], ref[i]);
      exit(1);
    }
}

int main(int argc, char **argv) {
  BenchOptions o;
  Ctx c;
  c.transB = benchTakeFlag(&argc, argv, "--transpose-b"); /* this harness's own */
  argc = benchParseOptions(argc, argv, &o, kUsage);
  if (argc != 4) {
    fprintf(stderr, "%s", kUsage);
    return 2;
  }
  c.M = atoll(argv[1]);
  c.N = atoll(argv[2]);
  c.K = atoll(argv[3]);
  if (c.M <= 0 || c.N <= 0 || c.K <= 0) {
    fprintf(stderr, "bad shape\n%s", kUsage);
    return 2;
  }
  const size_t nA = (size_t)(c.M * c.K), nB = (size_t)(c.K * c.N), nC = (size_t)(c.M * c.N);
  c.A = alloc(nA);
  c.B = alloc(nB);
  c.C = alloc(4 * nC);
  int32_t *ref = alloc(4 * nC);
  /* Every value from -128 to 127 (the extremes test an unsigned offset's
   * correction), deterministic. */
  uint64_t x = 88172645463325252ull;
  for (size_t i = 0; i < nA + nB; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    (i < nA ? c.A : c.B)[i < nA ? i : i - nA] = (int8_t)(x >> 24);
  }
  c.dA = benchMemrefCreate((float *)c.A, 2, (int64_t[]){c.M, c.K});
  c.dB = c.transB ? benchMemrefCreate((float *)c.B, 2, (int64_t[]){c.N, c.K})
                  : benchMemrefCreate((float *)c.B, 2, (int64_t[]){c.K, c.N});
  c.dC = benchMemrefCreate((float *)c.C, 2, (int64_t[]){c.M, c.N});
  c.pbc = (MatmulFn)benchLoadCiface(o.lib, o.func);

  const dnnl_version_t *v = dnnl_version();
  printf("matmul i8 x i8 -> i32 M=%lld N=%lld K=%lld%s  (%s: %s)\n", (long long)c.M,
         (long long)c.N, (long long)c.K, c.transB ? " B transposed" : "", o.lib, o.func);
  benchPrintEnvironment();
  printf("  oneDNN %d.%d.%d isa=%s\n", v->major, v->minor, v->patch,
         dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa()));
  int32_t *out = c.C;
  c.C = ref;
  runNaive(&c);
  c.C = out;
  BenchImpl impls[] = {{"pbc", runPbc, &c},
                       {"onednn gemm_s8s8s32", runDnnl, &c},
                       {"naive C (omp)", runNaive, &c}};
  enum { kImpls = sizeof impls / sizeof *impls };
  for (int i = 0; i < kImpls; ++i) {
    memset(c.C, 0x5a, 4 * nC); /* an element never written fails */
    impls[i].fn(&c);
    check(impls[i].name, c.C, ref, nC);
  }
  BenchResult res[kImpls];
  benchRunInterleaved(impls, kImpls, o.timing, res);
  benchPrintTable(impls, res, kImpls, o.timing.rounds,
                  2.0 * (double)c.M * (double)c.N * (double)c.K, "GOP/s");
  printf("  check: every candidate exact\n");
  benchResultsFree(res, kImpls);
  benchFree((float *)c.A);
  benchFree((float *)c.B);
  benchFree((float *)c.C);
  benchFree((float *)ref);
  return 0;
}
