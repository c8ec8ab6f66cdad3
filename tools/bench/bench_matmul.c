/* bench_matmul: C[M,N] = A[M,K] * B[K,N] (or B[N,K] transposed, a linear
 * layer's weight: --transpose-b) (fp32, row-major) from a
 * pbc-compiled library against oneDNN, OpenBLAS and a naive loop, all in one
 * process so the ratios share the machine's current state. */
#include "bench_common.h"

#include <cblas.h>
#include <dnnl.h>
#include <dnnl_debug.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* OpenBLAS extensions; declared here too in case cblas.h is netlib's. */
char *openblas_get_corename(void);
char *openblas_get_config(void);
int openblas_get_num_threads(void);

static const char *kUsage =
    "usage: bench_matmul --lib LIB.so --func NAME M N K [--transpose-b]\n"
    "       [--reps N] [--rounds N] [--warmup N] [--max-seconds S]\n"
    "  LIB exports _mlir_ciface_NAME(A[MxK]*, B[KxN]*, C[MxN]*) (memref\n"
    "  descriptors, C caller-allocated; B[NxK] with --transpose-b: C = A Bt).\n"
    "  Times it against oneDNN dnnl_sgemm,\n"
    "  OpenBLAS cblas_sgemm and a naive loop; checks its result.\n";

typedef void (*MatmulFn)(BenchMemref *, BenchMemref *, BenchMemref *);

typedef struct {
  int64_t M, N, K;
  bool transB; /* B stored N x K */
  float *A, *B, *C;
  BenchMemref dA, dB, dC;
  MatmulFn pbc;
} Ctx;

static void runPbc(void *p) {
  Ctx *c = p;
  c->pbc(&c->dA, &c->dB, &c->dC);
}

static void runDnnl(void *p) {
  Ctx *c = p;
  dnnl_status_t s =
      dnnl_sgemm('N', c->transB ? 'T' : 'N', c->M, c->N, c->K, 1.0f, c->A,
                 c->K, c->B, c->transB ? c->K : c->N, 0.0f, c->C, c->N);
  if (s != dnnl_success) {
    fprintf(stderr, "dnnl_sgemm failed: %s\n", dnnl_status2str(s));
    exit(2);
  }
}

static void runOpenblas(void *p) {
  Ctx *c = p;
  cblas_sgemm(CblasRowMajor, CblasNoTrans,
              c->transB ? CblasTrans : CblasNoTrans, (int)c->M, (int)c->N,
              (int)c->K, 1.0f, c->A, (int)c->K, c->B,
              (int)(c->transB ? c->K : c->N), 0.0f, c->C, (int)c->N);
}

/* i-k-j: the inner loop streams rows of B and C, so -O3 vectorizes it
 * without reassociating; rows of C are split over threads. With B
 * transposed, i-j-k dot products. */
static void runNaive(void *p) {
  Ctx *c = p;
  const int64_t M = c->M, N = c->N, K = c->K;
  const float *A = c->A, *B = c->B;
  float *C = c->C;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < M; ++i) {
    float *Ci = C + i * N;
    for (int64_t j = 0; j < N; ++j)
      Ci[j] = 0.0f;
    if (c->transB) {
      for (int64_t j = 0; j < N; ++j)
        for (int64_t k = 0; k < K; ++k)
          Ci[j] += A[i * K + k] * B[j * K + k];
      continue;
    }
    for (int64_t k = 0; k < K; ++k) {
      const float a = A[i * K + k];
      const float *Bk = B + k * N;
      for (int64_t j = 0; j < N; ++j)
        Ci[j] += a * Bk[j];
    }
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
  const size_t nA = (size_t)(c.M * c.K), nB = (size_t)(c.K * c.N),
               nC = (size_t)(c.M * c.N);
  c.A = benchAlloc(nA);
  c.B = benchAlloc(nB);
  c.C = benchAlloc(nC);
  float *ref = benchAlloc(nC);
  benchFillRandom(c.A, nA, 1);
  benchFillRandom(c.B, nB, 2);
  c.dA = benchMemrefCreate(c.A, 2, (int64_t[]){c.M, c.K});
  c.dB = c.transB ? benchMemrefCreate(c.B, 2, (int64_t[]){c.N, c.K})
                  : benchMemrefCreate(c.B, 2, (int64_t[]){c.K, c.N});
  c.dC = benchMemrefCreate(c.C, 2, (int64_t[]){c.M, c.N});
  c.pbc = (MatmulFn)benchLoadCiface(o.lib, o.func);

  const double flops = 2.0 * (double)c.M * (double)c.N * (double)c.K;
  const dnnl_version_t *v = dnnl_version();
  printf("matmul M=%lld N=%lld K=%lld%s  (%s: %s)\n", (long long)c.M,
         (long long)c.N, (long long)c.K, c.transB ? " B transposed" : "",
         o.lib, o.func);
  benchPrintEnvironment();
  printf("  oneDNN %d.%d.%d isa=%s | OpenBLAS core=%s threads=%d (%s)\n",
         v->major, v->minor, v->patch,
         dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa()),
         openblas_get_corename(), openblas_get_num_threads(),
         openblas_get_config());

  /* Reference and error scale (|A|*|B|) from the naive loop; every
   * candidate's output is checked against them (peers too, so a
   * misconfigured peer can't report a bogus speed). */
  float *scale = benchAlloc(nC);
  {
    Ctx a = c;
    a.A = benchAlloc(nA);
    a.B = benchAlloc(nB);
    a.C = scale;
    benchAbsCopy(a.A, c.A, nA);
    benchAbsCopy(a.B, c.B, nB);
    runNaive(&a);
    benchFree(a.A);
    benchFree(a.B);
  }
  c.C = ref;
  runNaive(&c);
  c.C = benchAlloc(nC);
  c.dC = benchMemrefCreate(c.C, 2, (int64_t[]){c.M, c.N});
  const double tol = BENCH_TOL;
  BenchImpl impls[] = {{"pbc", runPbc, &c},
                       {"onednn sgemm", runDnnl, &c},
                       {"openblas sgemm", runOpenblas, &c},
                       {"naive C (ikj, omp)", runNaive, &c}};
  enum { kImpls = sizeof impls / sizeof *impls };
  double err[kImpls];
  for (int i = 0; i < kImpls; ++i) {
    benchFillNaN(c.C, nC); /* catches elements a candidate never writes */
    impls[i].fn(&c);
    err[i] = benchCheck(impls[i].name, c.C, ref, scale, nC, tol);
  }
  BenchResult res[kImpls];
  benchRunInterleaved(impls, kImpls, o.timing, res);
  benchPrintTable(impls, res, kImpls, o.timing.rounds, flops, "GFLOP/s");
  printf("  check: pbc max rel err %.2e vs naive (tol %.0e); peers %.1e %.1e"
         " %.1e\n",
         err[0], tol, err[1], err[2], err[3]);
  benchResultsFree(res, kImpls);
  benchFree(c.A);
  benchFree(c.B);
  benchFree(c.C);
  benchFree(ref);
  benchFree(scale);
  return 0;
}
