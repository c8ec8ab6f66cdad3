#define _POSIX_C_SOURCE 200809L /* strdup */
/* bench_conv: 2-D convolution, N=1, NHWC input, HWCF weights, stride 1,
 * symmetric zero padding, fp32, from a pbc-compiled library against
 * oneDNN's convolution primitive and a naive loop, all in one process. */
#include "bench_common.h"

#include <dnnl.h>
#include <dnnl_debug.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *kUsage =
    "usage: bench_conv --lib LIB.so --func NAME H W C F KH KW PAD [--reps N]\n"
    "       [--rounds N] [--warmup N] [--max-seconds S]\n"
    "  LIB exports _mlir_ciface_NAME(in[1xHxWxC]*, w[KHxKWxCxF]*,\n"
    "  out[1xOHxOWxF]*) with OH = H + 2*PAD - KH + 1 (stride 1; padding is\n"
    "  the function's job). Times it against oneDNN's convolution primitive\n"
    "  and a naive loop; checks its result.\n";

typedef void (*ConvFn)(BenchMemref *, BenchMemref *, BenchMemref *);

typedef struct {
  int64_t H, W, C, F, KH, KW, PAD, OH, OW;
  float *in, *wt, *out;
} Shape;

typedef struct {
  Shape *s;
  BenchMemref dIn, dW, dOut;
  ConvFn fn;
} PbcCtx;

static void runPbc(void *p) {
  PbcCtx *c = p;
  c->fn(&c->dIn, &c->dW, &c->dOut);
}

/* Output pixels over threads; the innermost loop runs over F, contiguous in
 * both the weights and the output, so -O3 vectorizes it. */
static void runNaive(void *p) {
  const Shape *s = p;
  const int64_t H = s->H, W = s->W, C = s->C, F = s->F, KH = s->KH,
                KW = s->KW, PAD = s->PAD, OH = s->OH, OW = s->OW;
  const float *in = s->in, *wt = s->wt;
  float *out = s->out;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t oh = 0; oh < OH; ++oh)
    for (int64_t ow = 0; ow < OW; ++ow) {
      float *o = out + (oh * OW + ow) * F;
      for (int64_t f = 0; f < F; ++f)
        o[f] = 0.0f;
      for (int64_t kh = 0; kh < KH; ++kh) {
        int64_t ih = oh - PAD + kh;
        if (ih < 0 || ih >= H)
          continue;
        for (int64_t kw = 0; kw < KW; ++kw) {
          int64_t iw = ow - PAD + kw;
          if (iw < 0 || iw >= W)
            continue;
          const float *x = in + (ih * W + iw) * C;
          const float *w = wt + (kh * KW + kw) * C * F;
          for (int64_t c = 0; c < C; ++c) {
            const float xv = x[c];
            const float *wr = w + c * F;
            for (int64_t f = 0; f < F; ++f)
              o[f] += xv * wr[f];
          }
        }
      }
    }
}

/* --- oneDNN ------------------------------------------------------------ */

#define DNNL_CHECK(call)                                                      \
  do {                                                                        \
    dnnl_status_t st_ = (call);                                               \
    if (st_ != dnnl_success) {                                                \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,    \
              dnnl_status2str(st_));                                          \
      exit(2);                                                                \
    }                                                                         \
  } while (0)

typedef struct {
  dnnl_engine_t eng;
  dnnl_stream_t stream;
  dnnl_primitive_t conv;
  dnnl_memory_t src, wei, dst; /* in the primitive's chosen formats */
  dnnl_memory_t user_dst;      /* NHWC view of the caller's output */
  dnnl_primitive_t dst_back;   /* reorder dst -> user_dst, or NULL */
  const char *impl;
} DnnlConv;

static void execReorder(dnnl_engine_t eng, dnnl_stream_t stream,
                        dnnl_memory_t from, dnnl_memory_t to) {
  const dnnl_memory_desc_t *fmd, *tmd;
  DNNL_CHECK(dnnl_memory_get_memory_desc(from, &fmd));
  DNNL_CHECK(dnnl_memory_get_memory_desc(to, &tmd));
  dnnl_primitive_desc_t rpd;
  dnnl_primitive_t r;
  DNNL_CHECK(dnnl_reorder_primitive_desc_create(&rpd, fmd, eng, tmd, eng,
                                                NULL));
  DNNL_CHECK(dnnl_primitive_create(&r, rpd));
  dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  DNNL_CHECK(dnnl_primitive_execute(r, stream, 2, args));
  DNNL_CHECK(dnnl_stream_wait(stream));
  dnnl_primitive_destroy(r);
  dnnl_primitive_desc_destroy(rpd);
}

/* Memory in the primitive's format for `what`, filled from `user` (which
 * may be NULL: then only allocated). Reorders here, outside any timing. */
static dnnl_memory_t primMemory(DnnlConv *d, dnnl_primitive_desc_t pd,
                                dnnl_query_t what, dnnl_memory_t user) {
  const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, what, 0);
  const dnnl_memory_desc_t *umd = NULL;
  if (user)
    DNNL_CHECK(dnnl_memory_get_memory_desc(user, &umd));
  if (user && dnnl_memory_desc_equal(md, umd))
    return user; /* already in the wanted format: use the caller's buffer */
  dnnl_memory_t m;
  DNNL_CHECK(dnnl_memory_create(&m, md, d->eng, DNNL_MEMORY_ALLOCATE));
  if (user)
    execReorder(d->eng, d->stream, user, m);
  return m;
}

/* Builds the conv primitive. act_tag: dnnl_format_tag_any lets oneDNN pick
 * the activation layout (usually nChw16c; converting to and from it is left
 * out of the timing), dnnl_nhwc keeps the caller's layout. Weights are
 * always `any`, i.e. pre-packed once, as a deployed model would have them. */
static void dnnlConvCreate(DnnlConv *d, dnnl_engine_t eng,
                           dnnl_stream_t stream, const Shape *s,
                           dnnl_format_tag_t act_tag) {
  memset(d, 0, sizeof *d);
  d->eng = eng;
  d->stream = stream;
  dnnl_dims_t src_dims = {1, s->C, s->H, s->W};
  dnnl_dims_t wei_dims = {s->F, s->C, s->KH, s->KW};
  dnnl_dims_t dst_dims = {1, s->F, s->OH, s->OW};
  dnnl_dims_t strides = {1, 1}, pad = {s->PAD, s->PAD};
  dnnl_memory_desc_t src_u, wei_u, dst_u, src_a, wei_a, dst_a;
  DNNL_CHECK(dnnl_memory_desc_init_by_tag(&src_u, 4, src_dims, dnnl_f32,
                                          dnnl_nhwc));
  DNNL_CHECK(dnnl_memory_desc_init_by_tag(&wei_u, 4, wei_dims, dnnl_f32,
                                          dnnl_hwio));
  DNNL_CHECK(dnnl_memory_desc_init_by_tag(&dst_u, 4, dst_dims, dnnl_f32,
                                          dnnl_nhwc));
  DNNL_CHECK(dnnl_memory_desc_init_by_tag(&src_a, 4, src_dims, dnnl_f32,
                                          act_tag));
  DNNL_CHECK(dnnl_memory_desc_init_by_tag(&wei_a, 4, wei_dims, dnnl_f32,
                                          dnnl_format_tag_any));
  DNNL_CHECK(dnnl_memory_desc_init_by_tag(&dst_a, 4, dst_dims, dnnl_f32,
                                          act_tag));
  dnnl_convolution_desc_t cd;
  /* Direct (not Winograd): the same arithmetic as the other candidates. */
  DNNL_CHECK(dnnl_convolution_forward_desc_init(
      &cd, dnnl_forward_inference, dnnl_convolution_direct, &src_a, &wei_a,
      NULL, &dst_a, strides, pad, pad));
  dnnl_primitive_desc_t pd;
  DNNL_CHECK(dnnl_primitive_desc_create(&pd, &cd, NULL, eng, NULL));
  DNNL_CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0,
                                       &d->impl));
  d->impl = strdup(d->impl); /* owned by pd */

  dnnl_memory_t usrc, uwei;
  DNNL_CHECK(dnnl_memory_create(&usrc, &src_u, eng, s->in));
  DNNL_CHECK(dnnl_memory_create(&uwei, &wei_u, eng, s->wt));
  DNNL_CHECK(dnnl_memory_create(&d->user_dst, &dst_u, eng, s->out));
  d->src = primMemory(d, pd, dnnl_query_src_md, usrc);
  d->wei = primMemory(d, pd, dnnl_query_weights_md, uwei);
  d->dst = primMemory(d, pd, dnnl_query_dst_md, d->user_dst);
  DNNL_CHECK(dnnl_primitive_create(&d->conv, pd));
  dnnl_primitive_desc_destroy(pd);
}

static void runDnnl(void *p) {
  DnnlConv *d = p;
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, d->src},
                            {DNNL_ARG_WEIGHTS, d->wei},
                            {DNNL_ARG_DST, d->dst}};
  DNNL_CHECK(dnnl_primitive_execute(d->conv, d->stream, 3, args));
  DNNL_CHECK(dnnl_stream_wait(d->stream));
}

/* After a run: brings the result into the caller's NHWC buffer (untimed). */
static void dnnlFetchDst(DnnlConv *d) {
  if (d->dst != d->user_dst)
    execReorder(d->eng, d->stream, d->dst, d->user_dst);
}

int main(int argc, char **argv) {
  BenchOptions o;
  argc = benchParseOptions(argc, argv, &o, kUsage);
  if (argc != 8) {
    fprintf(stderr, "%s", kUsage);
    return 2;
  }
  Shape s;
  s.H = atoll(argv[1]);
  s.W = atoll(argv[2]);
  s.C = atoll(argv[3]);
  s.F = atoll(argv[4]);
  s.KH = atoll(argv[5]);
  s.KW = atoll(argv[6]);
  s.PAD = atoll(argv[7]);
  s.OH = s.H + 2 * s.PAD - s.KH + 1;
  s.OW = s.W + 2 * s.PAD - s.KW + 1;
  if (s.H <= 0 || s.W <= 0 || s.C <= 0 || s.F <= 0 || s.KH <= 0 ||
      s.KW <= 0 || s.PAD < 0 || s.OH <= 0 || s.OW <= 0) {
    fprintf(stderr, "bad shape\n%s", kUsage);
    return 2;
  }
  const size_t nIn = (size_t)(s.H * s.W * s.C),
               nW = (size_t)(s.KH * s.KW * s.C * s.F),
               nOut = (size_t)(s.OH * s.OW * s.F);
  s.in = benchAlloc(nIn);
  s.wt = benchAlloc(nW);
  float *ref = benchAlloc(nOut);
  benchFillRandom(s.in, nIn, 1);
  benchFillRandom(s.wt, nW, 2);
  const double flops = 2.0 * (double)(s.OH * s.OW * s.F) *
                       (double)(s.C * s.KH * s.KW);

  /* Reference, and the error scale: the same conv on |in| and |w|. */
  s.out = ref;
  runNaive(&s);
  float *scale = benchAlloc(nOut);
  {
    Shape a = s;
    a.in = benchAlloc(nIn);
    a.wt = benchAlloc(nW);
    a.out = scale;
    benchAbsCopy(a.in, s.in, nIn);
    benchAbsCopy(a.wt, s.wt, nW);
    runNaive(&a);
    benchFree(a.in);
    benchFree(a.wt);
  }

  /* Each candidate writes its own buffer, checked right after setup. */
  PbcCtx pc = {&s, {0}, {0}, {0}, NULL};
  float *pbcOut = benchAlloc(nOut);
  pc.dIn = benchMemrefCreate(s.in, 4, (int64_t[]){1, s.H, s.W, s.C});
  pc.dW = benchMemrefCreate(s.wt, 4, (int64_t[]){s.KH, s.KW, s.C, s.F});
  pc.dOut = benchMemrefCreate(pbcOut, 4, (int64_t[]){1, s.OH, s.OW, s.F});
  pc.fn = (ConvFn)benchLoadCiface(o.lib, o.func);

  dnnl_engine_t eng;
  dnnl_stream_t stream;
  DNNL_CHECK(dnnl_engine_create(&eng, dnnl_cpu, 0));
  DNNL_CHECK(dnnl_stream_create(&stream, eng, dnnl_stream_default_flags));
  DnnlConv dAny, dNhwc;
  float *anyOut = benchAlloc(nOut), *nhwcOut = benchAlloc(nOut);
  Shape sAny = s, sNhwc = s;
  sAny.out = anyOut;
  sNhwc.out = nhwcOut;
  benchFillNaN(anyOut, nOut);
  benchFillNaN(nhwcOut, nOut);
  dnnlConvCreate(&dAny, eng, stream, &sAny, dnnl_format_tag_any);
  dnnlConvCreate(&dNhwc, eng, stream, &sNhwc, dnnl_nhwc);

  Shape sNaive = s;
  float *naiveOut = benchAlloc(nOut);
  sNaive.out = naiveOut;

  const dnnl_version_t *v = dnnl_version();
  printf("conv2d NHWC 1x%lldx%lldx%lld * %lldx%lldx%lldx%lld pad %lld -> "
         "1x%lldx%lldx%lld  (%s: %s)\n",
         (long long)s.H, (long long)s.W, (long long)s.C, (long long)s.KH,
         (long long)s.KW, (long long)s.C, (long long)s.F, (long long)s.PAD,
         (long long)s.OH, (long long)s.OW, (long long)s.F, o.lib, o.func);
  benchPrintEnvironment();
  printf("  oneDNN %d.%d.%d isa=%s | impl any-layout: %s, nhwc: %s\n",
         v->major, v->minor, v->patch,
         dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa()), dAny.impl,
         dNhwc.impl);

  const double tol = BENCH_TOL;
  double err[4];
  benchFillNaN(pbcOut, nOut);
  runPbc(&pc);
  err[0] = benchCheck("pbc", pbcOut, ref, scale, nOut, tol);
  runDnnl(&dAny);
  dnnlFetchDst(&dAny);
  err[1] = benchCheck("onednn (any layout)", anyOut, ref, scale, nOut, tol);
  runDnnl(&dNhwc);
  dnnlFetchDst(&dNhwc);
  err[2] = benchCheck("onednn (nhwc)", nhwcOut, ref, scale, nOut, tol);
  benchFillNaN(naiveOut, nOut);
  runNaive(&sNaive);
  err[3] = benchCheck("naive", naiveOut, ref, scale, nOut, tol);

  BenchImpl impls[] = {{"pbc", runPbc, &pc},
                       {"onednn conv (any layout)", runDnnl, &dAny},
                       {"onednn conv (nhwc act.)", runDnnl, &dNhwc},
                       {"naive C (omp)", runNaive, &sNaive}};
  enum { kImpls = sizeof impls / sizeof *impls };
  BenchResult res[kImpls];
  benchRunInterleaved(impls, kImpls, o.timing, res);
  benchPrintTable(impls, res, kImpls, o.timing.rounds, flops, "GFLOP/s");
  printf("  check: pbc max rel err %.2e vs naive (tol %.0e); peers %.1e %.1e"
         " %.1e\n",
         err[0], tol, err[1], err[2], err[3]);
  benchResultsFree(res, kImpls);
  return 0;
}
