#define _DEFAULT_SOURCE /* madvise */
#include "bench_common.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

BenchMemref benchMemrefCreate(float *data, int rank, const int64_t *sizes) {
  if (rank < 0 || rank > BENCH_MAX_RANK) {
    fprintf(stderr, "bench: rank %d unsupported\n", rank);
    exit(2);
  }
  BenchMemref m;
  memset(&m, 0, sizeof m);
  m.allocated = m.aligned = data;
  m.offset = 0;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    m.dims[i] = sizes[i];
    m.dims[rank + i] = stride;
    stride *= sizes[i];
  }
  return m;
}

int64_t benchMemrefNumElements(const BenchMemref *m, int rank) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i)
    n *= m->dims[i];
  return n;
}

/* Whether buffers of 2 MiB and more go on huge pages: PBC_BENCH_PAGES
 * unset or 2m, yes; 4k, no; anything else is an error (a typo must not
 * measure the other setting). */
static int hugePages(void) {
  const char *pages = getenv("PBC_BENCH_PAGES");
  if (!pages || !*pages || !strcmp(pages, "2m"))
    return 1;
  if (!strcmp(pages, "4k"))
    return 0;
  fprintf(stderr, "bench: PBC_BENCH_PAGES=%s: expected 4k or 2m\n", pages);
  exit(2);
}

float *benchAlloc(size_t n) {
  const size_t huge = 2 << 20;
  size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
  int advise = bytes >= huge && hugePages();
  if (advise) /* aligned_alloc wants a multiple of the alignment */
    bytes = (bytes + huge - 1) & ~(huge - 1);
  float *p = aligned_alloc(advise ? huge : 64, bytes ? bytes : 64);
  if (!p) {
    fprintf(stderr, "bench: out of memory (%zu bytes)\n", bytes);
    exit(2);
  }
  if (advise)
    madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

void benchFree(float *p) { free(p); }

/* splitmix64: tiny, seedable, good enough for test data. */
static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void benchFillRandom(float *p, size_t n, uint64_t seed) {
  uint64_t s = seed;
  for (size_t i = 0; i < n; ++i) {
    uint64_t r = splitmix(&s);
    float mag = 0.1f + 0.9f * (float)((r >> 40) * (1.0 / 16777216.0));
    p[i] = (r & 1) ? -mag : mag;
  }
}

void benchFillNaN(float *p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    p[i] = NAN;
}

double benchMaxRelError(const float *got, const float *ref,
                        const float *scale, size_t n) {
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    double d = fabs((double)got[i] - (double)ref[i]) / (double)scale[i];
    if (!(d == d))
      return INFINITY; /* NaN: an element was never written */
    if (d > worst)
      worst = d;
  }
  return worst;
}

void benchAbsCopy(float *dst, const float *src, size_t n) {
  for (size_t i = 0; i < n; ++i)
    dst[i] = fabsf(src[i]);
}

double benchCheck(const char *what, const float *got, const float *ref,
                  const float *scale, size_t n, double tol) {
  double err = benchMaxRelError(got, ref, scale, n);
  if (!(err <= tol)) {
    fflush(stdout); /* keep the report after what was printed so far */
    size_t bad = 0, nbad = 0;
    double worst = -1;
    for (size_t i = 0; i < n; ++i) {
      double d = fabs((double)got[i] - (double)ref[i]) / (double)scale[i];
      if (!(d <= tol))
        ++nbad;
      if (!(d <= worst)) { /* also catches NaN */
        worst = d == d ? d : INFINITY;
        bad = i;
      }
    }
    fprintf(stderr,
            "\n*** MISMATCH: %s: max error %.3g (relative to sum of |terms|)"
            " > tolerance %.3g\n"
            "*** %zu of %zu elements off; worst at flat index %zu: got %.8g,"
            " expected %.8g\n",
            what, err, tol, nbad, n, bad, (double)got[bad], (double)ref[bad]);
    exit(1);
  }
  return err;
}

double benchNowSec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmpDouble(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Sorts v in place. */
static double median(double *v, int n) {
  if (n <= 0)
    return NAN;
  qsort(v, (size_t)n, sizeof(double), cmpDouble);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Growable sample list. */
typedef struct {
  double *v;
  int n, cap;
} Samples;

static void push(Samples *s, double x) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 64;
    s->v = realloc(s->v, sizeof(double) * (size_t)s->cap);
    if (!s->v) {
      fprintf(stderr, "bench: out of memory\n");
      exit(2);
    }
  }
  s->v[s->n++] = x;
}

/* Per round, short calls get at least this much warm-up and timed time:
 * after the settle pause, threads and clocks need a few ms to ramp up, and
 * 0.1 ms kernels need many calls for a stable median. */
#define ROUND_WARM_SEC 0.02
#define ROUND_MIN_SEC 0.05
#define ROUND_MAX_CALLS 20000

void benchRunInterleaved(const BenchImpl *impls, int n, BenchTiming t,
                         BenchResult *out) {
  int rounds = t.rounds > 0 ? t.rounds : 1;
  if (rounds > t.reps)
    rounds = t.reps > 0 ? t.reps : 1;
  int per = (t.reps + rounds - 1) / rounds;
  Samples *all = calloc((size_t)n, sizeof(Samples));
  Samples round = {0};
  double *spent = calloc((size_t)n, sizeof(double));
  double *percall = calloc((size_t)n, sizeof(double));
  for (int i = 0; i < n; ++i) {
    out[i].reps = 0;
    out[i].round_median = malloc(sizeof(double) * (size_t)rounds);
    /* Warm-up (first touch, code paging, pool creation); a slow candidate
     * gets one call, not `warmup` long ones. */
    double w0 = benchNowSec();
    for (int k = 0; k < t.warmup; ++k) {
      double c0 = benchNowSec();
      impls[i].fn(impls[i].ctx);
      percall[i] = benchNowSec() - c0;
      if (t.max_seconds > 0 && benchNowSec() - w0 > 0.2 * t.max_seconds)
        break;
    }
  }
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < n; ++i) {
      BenchResult *o = &out[i];
      o->round_median[r] = NAN;
      if (o->reps >= 3 && t.max_seconds > 0 && spent[i] >= t.max_seconds)
        continue;
      benchSettle();
      /* Re-wake the pool after the pause, unless one call is long enough
       * that the wake-up is noise. */
      if ((o->reps ? spent[i] / o->reps : percall[i]) < 0.25) {
        double w0 = benchNowSec();
        do
          impls[i].fn(impls[i].ctx);
        while (benchNowSec() - w0 < ROUND_WARM_SEC);
      }
      round.n = 0;
      double r0 = benchNowSec();
      for (;;) {
        double t0 = benchNowSec();
        impls[i].fn(impls[i].ctx);
        double t1 = benchNowSec();
        push(&round, t1 - t0);
        push(&all[i], t1 - t0);
        spent[i] += t1 - t0;
        o->reps++;
        if (o->reps >= 3 && t.max_seconds > 0 && spent[i] >= t.max_seconds)
          break;
        if (round.n >= per &&
            (t1 - r0 >= ROUND_MIN_SEC || round.n >= ROUND_MAX_CALLS))
          break;
      }
      o->round_median[r] = median(round.v, round.n);
    }
  }
  for (int i = 0; i < n; ++i) {
    out[i].median = median(all[i].v, all[i].n);
    out[i].min = all[i].n ? all[i].v[0] : NAN; /* sorted by median() */
    free(all[i].v);
  }
  free(all);
  free(round.v);
  free(spent);
  free(percall);
}

void benchResultsFree(BenchResult *r, int n) {
  for (int i = 0; i < n; ++i)
    free(r[i].round_median);
}

double benchPairedRatio(const BenchResult *a, const BenchResult *b,
                        int rounds) {
  double v[256];
  int k = 0;
  for (int r = 0; r < rounds && k < 256; ++r)
    if (a->round_median[r] == a->round_median[r] &&
        b->round_median[r] == b->round_median[r])
      v[k++] = a->round_median[r] / b->round_median[r];
  /* A slow candidate may have sat out all but a round or two; one round's
   * ratio is at the mercy of that round, so use the overall medians. */
  if (k < 3)
    return a->median / b->median;
  return median(v, k);
}

void benchSettle(void) {
  /* > libomp's default KMP_BLOCKTIME (200 ms); libgomp and OpenBLAS idle
   * sooner. */
  struct timespec ts = {0, 250 * 1000 * 1000};
  nanosleep(&ts, NULL);
}

double benchGflops(double flops, double seconds) {
  return seconds > 0 ? flops / seconds * 1e-9 : 0;
}

BenchCiface benchLoadCiface(const char *lib, const char *func) {
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "bench: cannot load %s: %s\n", lib, dlerror());
    exit(2);
  }
  char sym[512];
  snprintf(sym, sizeof sym, "_mlir_ciface_%s", func);
  void *p = dlsym(h, sym);
  if (!p) {
    fprintf(stderr, "bench: %s has no symbol %s: %s\n", lib, sym, dlerror());
    exit(2);
  }
  BenchCiface f; /* POSIX guarantees this conversion; ISO C lacks it */
  memcpy(&f, &p, sizeof f);
  return f;
}

void benchPrintTable(const BenchImpl *impls, const BenchResult *r, int n,
                     int rounds, double work, const char *unit) {
  printf("  %-26s %10s %9s %8s %9s %5s\n", "impl", "median ms", "min ms",
         unit, "pbc/peer", "reps");
  for (int i = 0; i < n; ++i) {
    double ratio = benchPairedRatio(&r[0], &r[i], rounds);
    printf("  %-26s %10.3f %9.3f %8.1f %8.2fx %5d\n", impls[i].name,
           r[i].median * 1e3, r[i].min * 1e3, benchGflops(work, r[i].median),
           ratio, r[i].reps);
  }
}

void benchPrintEnvironment(void) {
  if (getenv("BENCH_NO_ENV_LINE")) /* run.sh prints it once in its header */
    return;
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512], model[256] = "?";
  int cpus = 0;
  if (f) {
    while (fgets(line, sizeof line, f)) {
      if (strncmp(line, "model name", 10))
        continue;
      char *val = strchr(line, ':');
      val = val ? val + 1 : line;
      val += strspn(val, " \t");
      val[strcspn(val, "\n")] = 0;
      snprintf(model, sizeof model, "%s", val);
      ++cpus;
    }
    fclose(f);
  }
  printf("  cpu: %s x%d |", model, cpus);
  const char *vars[] = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                        "OPENBLAS_CORETYPE", "OMP_PROC_BIND", "KMP_BLOCKTIME"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; ++i) {
    const char *v = getenv(vars[i]);
    if (v || i < 3)
      printf(" %s=%s", vars[i], v ? v : "(unset)");
  }
  printf("\n");
}

int benchParseOptions(int argc, char **argv, BenchOptions *o,
                      const char *usage) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* tables appear as rows finish */
  o->lib = NULL;
  o->func = NULL;
  o->timing.warmup = 3;
  o->timing.reps = 30;
  o->timing.rounds = 5;
  o->timing.max_seconds = 10;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    int has = i + 1 < argc;
    if (!strcmp(a, "--lib") && has)
      o->lib = argv[++i];
    else if (!strcmp(a, "--func") && has)
      o->func = argv[++i];
    else if (!strcmp(a, "--reps") && has)
      o->timing.reps = atoi(argv[++i]);
    else if (!strcmp(a, "--rounds") && has)
      o->timing.rounds = atoi(argv[++i]);
    else if (!strcmp(a, "--warmup") && has)
      o->timing.warmup = atoi(argv[++i]);
    else if (!strcmp(a, "--max-seconds") && has)
      o->timing.max_seconds = atof(argv[++i]);
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      printf("%s", usage);
      exit(0);
    } else if (a[0] == '-' && a[1] == '-') {
      fprintf(stderr, "unknown or incomplete option %s\n%s", a, usage);
      exit(2);
    } else
      argv[out++] = argv[i];
  }
  if (!o->lib || !o->func) {
    fprintf(stderr, "--lib and --func are required\n%s", usage);
    exit(2);
  }
  if (o->timing.reps < 1)
    o->timing.reps = 1;
  argv[out] = NULL;
  return out;
}

int benchTakeFlag(int *argc, char **argv, const char *flag) {
  int kept = 1, found = 0;
  for (int i = 1; i < *argc; ++i) {
    if (!strcmp(argv[i], flag))
      found = 1;
    else
      argv[kept++] = argv[i];
  }
  *argc = kept;
  return found;
}
