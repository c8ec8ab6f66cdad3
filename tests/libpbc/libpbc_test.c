/* libpbc from C, as an embedding program uses it: compile a program, look up
 * its entries, call them on fresh random non-zero inputs, compare with a
 * naive C reference, check every output element was written; errors come
 * back as located messages; the second compile is a cache hit; the packed
 * and direct calls agree; checked calls refuse mismatches; a plugin folder
 * full of bad entries does not stop it. argv[1]: the cpu plugin file;
 * argv[2...]: plugins that crash while loading. */
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "pbc/libpbc.h"


typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
} Desc2;

enum { M = 37, K = 53, N = 29 };

static const char kProgram[] =
    "func.func @affine(%x: tensor<37x53xf32>, %w: tensor<53x29xf32>,\n"
    "                  %b: tensor<37x29xf32>) -> tensor<37x29xf32> {\n"
    "  %z = tensor.empty() : tensor<37x29xf32>\n"
    "  %c = arith.constant 0.0 : f32\n"
    "  %f = linalg.fill ins(%c : f32) outs(%z : tensor<37x29xf32>) -> tensor<37x29xf32>\n"
    "  %m = linalg.matmul ins(%x, %w : tensor<37x53xf32>, tensor<53x29xf32>)\n"
    "                     outs(%f : tensor<37x29xf32>) -> tensor<37x29xf32>\n"
    "  %r = linalg.add ins(%m, %b : tensor<37x29xf32>, tensor<37x29xf32>)\n"
    "                  outs(%z : tensor<37x29xf32>) -> tensor<37x29xf32>\n"
    "  return %r : tensor<37x29xf32>\n"
    "}\n"
    "func.func @twice(%x: tensor<37x29xf32>) -> tensor<37x29xf32> {\n"
    "  %z = tensor.empty() : tensor<37x29xf32>\n"
    "  %r = linalg.add ins(%x, %x : tensor<37x29xf32>, tensor<37x29xf32>)\n"
    "                  outs(%z : tensor<37x29xf32>) -> tensor<37x29xf32>\n"
    "  return %r : tensor<37x29xf32>\n"
    "}\n";

static Desc2 matrix(int64_t rows, int64_t cols, float *data) {
  return (Desc2){data, data, 0, {rows, cols}, {cols, 1}};
}

static double elapsedMs(struct timespec a, struct timespec b) {
  return (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: libpbc_test CPU_PLUGIN.so [CRASHING_PLUGIN.so...]\n");
    return 2;
  }
  char pluginDir[4096], cacheDir[4096];
  testFolders(argv[1], "libpbc-cache", pluginDir, cacheDir);
  PbcCompileOptions o = {.pluginDir = pluginDir, .optLevel = 3,
                         .cacheDir = cacheDir};

  /* Compile (a miss), then again (a hit: the same library, much faster). */
  char *err = NULL;
  struct timespec t0, t1, t2;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  PbcProgram *p = pbcProgramCompile(kProgram, "test.mlir", &o, &err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  CHECK(p, "compile failed: %s", err ? err : "(no message)");
  if (!p)
    return 1;
  PbcProgram *again = pbcProgramCompile(kProgram, "test.mlir", &o, &err);
  clock_gettime(CLOCK_MONOTONIC, &t2);
  CHECK(again, "second compile failed: %s", err ? err : "");
  CHECK(again && strcmp(pbcProgramLibraryPath(p), pbcProgramLibraryPath(again)) == 0,
        "the second compile is not the cached library");
  CHECK(elapsedMs(t1, t2) * 5 < elapsedMs(t0, t1),
        "cache hit not faster: %.1f ms vs %.1f ms", elapsedMs(t1, t2), elapsedMs(t0, t1));
  pbcProgramDestroy(again);

  /* Entries and signatures. */
  CHECK(pbcProgramNumEntries(p) == 2, "entries: %d", pbcProgramNumEntries(p));
  int e = pbcProgramFindEntry(p, "affine");
  CHECK(e >= 0 && strcmp(pbcProgramEntryName(p, e), "affine") == 0, "no @affine");
  CHECK(pbcProgramFindEntry(p, "nope") == -1, "found a missing entry");
  CHECK(pbcProgramEntryNumInputs(p, e) == 3 && pbcProgramEntryNumOutputs(p, e) == 1,
        "arity %d/%d", pbcProgramEntryNumInputs(p, e), pbcProgramEntryNumOutputs(p, e));
  PbcArgInfo a;
  CHECK(pbcProgramEntryArg(p, e, 1, &a) && strcmp(a.elem, "f32") == 0 && a.rank == 2 &&
            a.shape[0] == K && a.shape[1] == N,
        "arg 1 type");
  CHECK(!pbcProgramEntryArg(p, e, 4, &a), "arg 4 exists");

  /* Call it (packed) and compare with the naive reference. */
  float *x = randomNonZero(M * K), *w = randomNonZero(K * N), *b = randomNonZero(M * N);
  float *y = malloc(M * N * sizeof(float)), *y2 = malloc(M * N * sizeof(float));
  for (int i = 0; i < M * N; ++i)
    y[i] = y2[i] = NAN;
  Desc2 dx = matrix(M, K, x), dw = matrix(K, N, w), db = matrix(M, N, b),
        dy = matrix(M, N, y), dy2 = matrix(M, N, y2);
  void *args[] = {&dx, &dw, &db, &dy};
  CHECK(pbcProgramInvoke(p, e, args, 4, &err), "invoke: %s", err ? err : "");
  int bad = 0, unwritten = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double ref = b[i * N + j];
      for (int k = 0; k < K; ++k)
        ref += (double)x[i * K + k] * w[k * N + j];
      float got = y[i * N + j];
      unwritten += isnan(got);
      bad += !(fabs(got - ref) <= 1e-4 * (1 + fabs(ref)));
    }
  CHECK(!unwritten && !bad, "@affine: %d unwritten, %d wrong of %d", unwritten, bad, M * N);

  /* The direct C-interface function gives the same result. */
  void (*direct)(void *, void *, void *, void *) =
      (void (*)(void *, void *, void *, void *))pbcProgramEntryFunction(p, e);
  direct(&dx, &dw, &db, &dy2);
  CHECK(memcmp(y, y2, M * N * sizeof(float)) == 0, "direct and packed calls differ");
  /* So does the unchecked packed function (one array of descriptors). */
  for (int i = 0; i < M * N; ++i)
    y2[i] = NAN;
  void (*packed)(void **) = (void (*)(void **))pbcProgramEntryPackedFunction(p, e);
  void *pargs[] = {&dx, &dw, &db, &dy2};
  CHECK(packed && !pbcProgramEntryPackedFunction(p, 7), "packed function lookup");
  packed(pargs);
  CHECK(memcmp(y, y2, M * N * sizeof(float)) == 0, "unchecked packed call differs");

  /* A second entry of the same program. */
  int t = pbcProgramFindEntry(p, "twice");
  void *targs[] = {&dy, &dy2};
  CHECK(pbcProgramInvoke(p, t, targs, 2, &err), "invoke twice");
  for (int i = 0; i < M * N; ++i)
    bad += y2[i] != 2 * y[i];
  CHECK(!bad, "@twice wrong");
  CHECK(!pbcProgramInvoke(p, 7, targs, 2, &err) && err, "bad entry index accepted");
  pbcMessageDestroy(err);
  err = NULL;

  /* Checked calls: the typed form computes the same; every mismatch is an
   * error naming the argument, and nothing runs. */
  const int64_t sx[2] = {M, K}, sw[2] = {K, N}, sb[2] = {M, N};
  for (int i = 0; i < M * N; ++i)
    y2[i] = NAN;
  PbcTensor ta[4] = {{"f32", 2, sx, NULL, x}, {"f32", 2, sw, NULL, w},
                     {"f32", 2, sb, NULL, b}, {"f32", 2, sb, NULL, y2}};
  CHECK(pbcProgramCall(p, e, ta, 4, &err), "call: %s", err ? err : "");
  CHECK(memcmp(y, y2, M * N * sizeof(float)) == 0, "typed and packed calls differ");
  struct {
    const char *what, *expect;
    int arg, count;
    PbcTensor t;
  } bad_calls[] = {
      {"count", "takes 4 tensors", 0, 3, ta[0]},
      {"dtype", "input 1: expected 53x29xf32", 1, 4, {"f16", 2, sw, NULL, w}},
      {"rank", "input 0: expected 37x53xf32, got a rank-1", 0, 4, {"f32", 1, sx, NULL, x}},
      {"shape", "input 1: expected 53x29xf32", 1, 4, {"f32", 2, sb, NULL, w}},
      {"no type", "(no type)", 1, 4, {NULL, 2, sw, NULL, w}},
      {"NULL data", "input 2: no data", 2, 4, {"f32", 2, sb, NULL, NULL}},
      {"overlap", "output 0 overlaps input 2", 3, 4, {"f32", 2, sb, NULL, b}},
  };
  for (size_t c = 0; c < sizeof(bad_calls) / sizeof(bad_calls[0]); ++c) {
    PbcTensor tb[4] = {ta[0], ta[1], ta[2], ta[3]};
    tb[bad_calls[c].arg] = bad_calls[c].t;
    for (int i = 0; i < M * N; ++i)
      y2[i] = NAN;
    bool ok = pbcProgramCall(p, e, tb, bad_calls[c].count, &err);
    CHECK(!ok && err && strstr(err, bad_calls[c].expect), "%s: %s", bad_calls[c].what,
          err ? err : "(accepted)");
    CHECK(isnan(y2[0]) && isnan(y2[M * N - 1]), "%s: the entry ran", bad_calls[c].what);
    pbcMessageDestroy(err);
    err = NULL;
  }
  /* Raw descriptors: count, NULL descriptor, sizes, NULL data. */
  Desc2 wrong = matrix(M, N + 1, y2), nodata = matrix(M, N, NULL);
  void *few[] = {&dx, &dw, &db};
  void *nulls[] = {&dx, NULL, &db, &dy};
  void *sizes[] = {&dx, &dw, &db, &wrong};
  void *empty[] = {&dx, &dw, &nodata, &dy};
  CHECK(!pbcProgramInvoke(p, e, few, 3, &err) && err && strstr(err, "takes 4"), "count");
  pbcMessageDestroy(err);
  CHECK(!pbcProgramInvoke(p, e, nulls, 4, &err) && err && strstr(err, "input 1: no descriptor"),
        "NULL descriptor");
  pbcMessageDestroy(err);
  CHECK(!pbcProgramInvoke(p, e, sizes, 4, &err) && err && strstr(err, "output 0: wrong sizes"),
        "sizes");
  pbcMessageDestroy(err);
  CHECK(!pbcProgramInvoke(p, e, empty, 4, &err) && err && strstr(err, "input 2: no data"),
        "NULL data");
  pbcMessageDestroy(err);
  CHECK(!pbcProgramInvoke(p, e, NULL, 4, &err) && err, "NULL descriptor array");
  pbcMessageDestroy(err);
  /* Layouts the code does not read: an offset, a transposed stride (a
   * descriptor); a column-major tensor (pbcProgramCall). */
  Desc2 shifted = dx, transposed = dx;
  shifted.offset = 3;
  transposed.strides[0] = 1;
  transposed.strides[1] = M;
  void *shiftedArgs[] = {&shifted, &dw, &db, &dy}, *transposedArgs[] = {&transposed, &dw, &db, &dy};
  CHECK(!pbcProgramInvoke(p, e, shiftedArgs, 4, &err) && err &&
            strstr(err, "input 0: an offset or strides other than row-major"),
        "an offset: %s", err ? err : "accepted");
  pbcMessageDestroy(err);
  CHECK(!pbcProgramInvoke(p, e, transposedArgs, 4, &err) && err &&
            strstr(err, "input 0: an offset or strides other than row-major"),
        "transposed strides: %s", err ? err : "accepted");
  pbcMessageDestroy(err);
  int64_t xs[2] = {M, K}, colMajor[2] = {1, M}, ws[2] = {K, N}, bs[2] = {M, N};
  PbcTensor strided[4] = {{"f32", 2, xs, colMajor, x}, {"f32", 2, ws, NULL, w},
                          {"f32", 2, bs, NULL, b}, {"f32", 2, bs, NULL, y2}};
  CHECK(!pbcProgramCall(p, e, strided, 4, &err) && err &&
            strstr(err, "input 0: its strides are not row-major"),
        "column-major tensor: %s", err ? err : "accepted");
  pbcMessageDestroy(err);
  err = NULL;
  pbcProgramDestroy(p);

  /* Options out of range: errors, before anything is compiled. */
  PbcCompileOptions badOpt = o;
  badOpt.optLevel = 99;
  CHECK(!pbcProgramCompile(kProgram, "x", &badOpt, &err) && err && strstr(err, "optLevel 99"),
        "optLevel 99: %s", err ? err : "accepted");
  pbcMessageDestroy(err);
  badOpt.optLevel = -7;
  CHECK(!pbcProgramCompile(kProgram, "x", &badOpt, &err) && err && strstr(err, "optLevel -7"),
        "optLevel -7: %s", err ? err : "accepted");
  pbcMessageDestroy(err);
  static char longDir[5001];
  memset(longDir, 'd', 5000);
  longDir[0] = '/';
  badOpt = o;
  badOpt.cacheDir = longDir;
  CHECK(!pbcProgramCompile(kProgram, "x", &badOpt, &err) && err &&
            strstr(err, "cache folder path has 5000 characters"),
        "a 5000-character cache folder: %s", err ? err : "accepted");
  pbcMessageDestroy(err);
  err = NULL;

  /* NULL everywhere: errors and neutral answers, never a crash. */
  CHECK(!pbcProgramCompile(NULL, "x", &o, &err) && err && strstr(err, "no program text"),
        "NULL text");
  pbcMessageDestroy(err);
  err = NULL;
  CHECK(!pbcProgramCompile(NULL, NULL, NULL, NULL), "NULL everything");
  CHECK(pbcProgramNumEntries(NULL) == -1 && !pbcProgramEntryName(NULL, 0) &&
            pbcProgramFindEntry(NULL, "affine") == -1 && pbcProgramEntryNumInputs(NULL, 0) == -1 &&
            pbcProgramEntryNumOutputs(NULL, 0) == -1 && !pbcProgramEntryArg(NULL, 0, 0, &a) &&
            !pbcProgramEntryFunction(NULL, 0) && !pbcProgramEntryPackedFunction(NULL, 0) &&
            !pbcProgramLibraryPath(NULL),
        "queries on NULL");
  CHECK(!pbcProgramInvoke(NULL, 0, args, 4, &err) && err && strstr(err, "no program"),
        "invoke NULL program");
  pbcMessageDestroy(err);
  CHECK(!pbcProgramCall(NULL, 0, ta, 4, NULL), "call NULL program");
  pbcProgramDestroy(NULL);
  pbcMessageDestroy(NULL);

  /* Errors are values with locations; the caller's stderr stays quiet. */
  const char *broken = "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                       "  %y = arith.addf %x, %q : tensor<4xf32>\n"
                       "  return %y : tensor<4xf32>\n}\n";
  PbcProgram *q = pbcProgramCompile(broken, "broken.mlir", &o, &err);
  CHECK(!q && err && strstr(err, "broken.mlir:2"), "no located error: %s", err ? err : "");
  pbcMessageDestroy(err);
  err = NULL;
  /* Alias definitions before several top-level ops stay outside the module
   * the ops are wrapped in; lines still count from the text's first line. */
  const char *aliased = "// a comment\n#id = affine_map<(d0) ->\n (d0)>\n"
                        "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                        "  %y = arith.addf %x, %q : tensor<4xf32>\n"
                        "  return %y : tensor<4xf32>\n}\n"
                        "func.func @g() { return }\n";
  q = pbcProgramCompile(aliased, "aliased.mlir", &o, &err);
  CHECK(!q && err && strstr(err, "aliased.mlir:5:23"), "aliases: %s", err ? err : "");
  pbcMessageDestroy(err);
  err = NULL;
  /* A dynamic size that is not a leading batch: one compile with the size
   * as a symbol, called at sizes 1, 7 and 300 against a reference; an
   * output of another size and a size of 0 are refused. */
  const char *dynamic =
      "func.func @f(%x: tensor<3x?xf32>) -> tensor<3x?xf32> {\n"
      "  %c1 = arith.constant 1 : index\n"
      "  %n = tensor.dim %x, %c1 : tensor<3x?xf32>\n"
      "  %e = tensor.empty(%n) : tensor<3x?xf32>\n"
      "  %y = linalg.add ins(%x, %x : tensor<3x?xf32>, tensor<3x?xf32>) outs(%e : tensor<3x?xf32>)"
      " -> tensor<3x?xf32>\n"
      "  return %y : tensor<3x?xf32>\n}\n";
  q = pbcProgramCompile(dynamic, "dyn.mlir", &o, &err);
  CHECK(q, "symbolic compile: %s", err ? err : "");
  pbcMessageDestroy(err);
  err = NULL;
  PbcArgInfo sin, sout;
  CHECK(q && pbcProgramEntryArg(q, 0, 0, &sin) && sin.rank == 2 && sin.shape[0] == 3 &&
            sin.shape[1] == PBC_ARG_SYMBOL(0) && pbcProgramEntryArg(q, 0, 1, &sout) &&
            sout.rank == 2 && sout.shape[1] == PBC_ARG_SYMBOL(0),
        "the size symbol in the signature");
  static float symIn[900], symOut[903];
  const int64_t symSizes[3] = {1, 7, 300};
  for (int i = 0; i < 3 && q; ++i) {
    int64_t n = symSizes[i];
    for (int k = 0; k < 3 * n; ++k)
      symIn[k] = (float)((rand() % 200) - 100) / 7.f + 0.5f;
    for (int k = 0; k < 903; ++k)
      symOut[k] = 12345.f;
    int64_t sx[2] = {3, n};
    PbcTensor args[2] = {{"f32", 2, sx, NULL, symIn}, {"f32", 2, sx, NULL, symOut}};
    CHECK(pbcProgramCall(q, 0, args, 2, &err), "size %lld: %s", (long long)n, err ? err : "");
    pbcMessageDestroy(err);
    err = NULL;
    for (int k = 0; k < 903; ++k) {
      float want = k < 3 * n ? 2 * symIn[k] : 12345.f;
      CHECK(symOut[k] == want, "size %lld element %d: %g, want %g", (long long)n, k, symOut[k],
            want);
    }
    int64_t other[2] = {3, n + 1};
    PbcTensor wrong[2] = {{"f32", 2, sx, NULL, symIn}, {"f32", 2, other, NULL, symOut}};
    CHECK(!pbcProgramCall(q, 0, wrong, 2, &err) && err && strstr(err, "(s0 is"),
          "size %lld took an output of another: %s", (long long)n, err ? err : "");
    pbcMessageDestroy(err);
    err = NULL;
  }
  int64_t zeroSize[2] = {3, 0};
  PbcTensor none[2] = {{"f32", 2, zeroSize, NULL, symIn}, {"f32", 2, zeroSize, NULL, symOut}};
  CHECK(!q || (!pbcProgramCall(q, 0, none, 2, &err) && err), "a symbolic size of 0 was taken");
  pbcMessageDestroy(err);
  err = NULL;
  pbcProgramDestroy(q);
  /* A slice of an 8-entry table by the size: at most 8, refused past it. */
  const char *bounded =
      "func.func @f(%ids: tensor<?xi64>) -> tensor<?xi64> {\n"
      "  %c0 = arith.constant 0 : index\n"
      "  %t = arith.constant dense<[1, 2, 3, 4, 5, 6, 7, 8]> : tensor<8xi64>\n"
      "  %n = tensor.dim %ids, %c0 : tensor<?xi64>\n"
      "  %s = tensor.extract_slice %t[0] [%n] [1] : tensor<8xi64> to tensor<?xi64>\n"
      "  %e = tensor.empty(%n) : tensor<?xi64>\n"
      "  %r = linalg.add ins(%s, %ids : tensor<?xi64>, tensor<?xi64>) outs(%e : tensor<?xi64>)"
      " -> tensor<?xi64>\n"
      "  return %r : tensor<?xi64>\n}\n";
  q = pbcProgramCompile(bounded, "bounded.mlir", &o, &err);
  CHECK(q, "bounded symbolic compile: %s", err ? err : "");
  pbcMessageDestroy(err);
  err = NULL;
  for (int64_t n = 1; q && n <= 9; ++n) {
    int64_t ids[9], sum[9], shape[1] = {n};
    for (int k = 0; k < n; ++k)
      ids[k] = 100 * k, sum[k] = -1;
    PbcTensor args[2] = {{"i64", 1, shape, NULL, ids}, {"i64", 1, shape, NULL, sum}};
    bool called = pbcProgramCall(q, 0, args, 2, &err);
    if (n <= 8) {
      CHECK(called, "bounded size %lld: %s", (long long)n, err ? err : "");
      for (int k = 0; called && k < n; ++k)
        CHECK(sum[k] == 100 * k + k + 1, "bounded size %lld element %d: %lld", (long long)n, k,
              (long long)sum[k]);
    } else {
      CHECK(!called && err && strstr(err, "(s0 from 1 to 8)"), "size 9 past the table: %s",
            err ? err : "(taken)");
    }
    pbcMessageDestroy(err);
    err = NULL;
  }
  pbcProgramDestroy(q);
  /* A result whose size is computed from the input's: no one compile. */
  const char *flatten = "func.func @f(%x: tensor<?x8xf32>) -> tensor<?xf32> {\n"
                        "  %c = tensor.collapse_shape %x [[0, 1]] : tensor<?x8xf32> into tensor<?xf32>\n"
                        "  return %c : tensor<?xf32>\n}\n";
  q = pbcProgramCompile(flatten, "flat.mlir", &o, &err);
  CHECK(!q && err && strstr(err, "flat.mlir:1") && strstr(err, "cannot be compiled with symbolic sizes"),
        "a computed result size not reported: %s", err ? err : "");
  pbcMessageDestroy(err);
  err = NULL;
  /* The same program for given sizes: a batch x 3 input, rows summed into
   * a batch-sized result; two sizes, two programs, each computing its own
   * (not the other's) shape, and each refusing the other's tensors. */
  const char *rowSums =
      "func.func @f(%x: tensor<?x3xf32>) -> tensor<?xf32> {\n"
      "  %c0 = arith.constant 0 : index\n"
      "  %b = tensor.dim %x, %c0 : tensor<?x3xf32>\n"
      "  %z = tensor.empty(%b) : tensor<?xf32>\n"
      "  %zero = arith.constant 0.0 : f32\n"
      "  %f = linalg.fill ins(%zero : f32) outs(%z : tensor<?xf32>) -> tensor<?xf32>\n"
      "  %s = linalg.reduce ins(%x : tensor<?x3xf32>) outs(%f : tensor<?xf32>) dimensions = [1]\n"
      "    (%a: f32, %acc: f32) {\n"
      "      %t = arith.addf %a, %acc : f32\n"
      "      linalg.yield %t : f32\n"
      "    }\n"
      "  return %s : tensor<?xf32>\n}\n";
  const int64_t batches[2] = {5, 2};
  PbcProgram *sized[2] = {NULL, NULL};
  for (int i = 0; i < 2; ++i) {
    char shapes[32];
    snprintf(shapes, sizeof(shapes), "0=%lldx3", (long long)batches[i]);
    sized[i] = pbcProgramCompileShaped(rowSums, "rows.mlir", &o, shapes, &err);
    CHECK(sized[i], "shaped compile %s: %s", shapes, err ? err : "");
    pbcMessageDestroy(err);
    err = NULL;
  }
  for (int i = 0; i < 2 && sized[0] && sized[1]; ++i) {
    PbcArgInfo in, out;
    CHECK(pbcProgramEntryArg(sized[i], 0, 0, &in) && in.rank == 2 && in.shape[0] == batches[i] &&
              in.shape[1] == 3 && pbcProgramEntryArg(sized[i], 0, 1, &out) && out.rank == 1 &&
              out.shape[0] == batches[i],
          "shaped signature %d", i);
    float xs[15], sums[5] = {0}, sentinel = 12345.f;
    for (int k = 0; k < 15; ++k)
      xs[k] = (float)((rand() % 200) - 100) / 7.f + 0.5f;
    for (int k = 0; k < 5; ++k)
      sums[k] = sentinel;
    int64_t sx[2] = {batches[i], 3}, ss[1] = {batches[i]};
    PbcTensor args[2] = {{"f32", 2, sx, NULL, xs}, {"f32", 1, ss, NULL, sums}};
    CHECK(pbcProgramCall(sized[i], 0, args, 2, &err), "shaped call %d: %s", i, err ? err : "");
    pbcMessageDestroy(err);
    err = NULL;
    for (int r = 0; r < 5; ++r) {
      float want = r < batches[i] ? xs[3 * r] + xs[3 * r + 1] + xs[3 * r + 2] : sentinel;
      CHECK(fabsf(sums[r] - want) <= 1e-4f * (1 + fabsf(want)), "shaped %d row %d: %g, want %g",
            i, r, sums[r], want);
    }
    int64_t other[2] = {batches[1 - i], 3}, otherOut[1] = {batches[1 - i]};
    PbcTensor wrong[2] = {{"f32", 2, other, NULL, xs}, {"f32", 1, otherOut, NULL, sums}};
    CHECK(!pbcProgramCall(sized[i], 0, wrong, 2, &err) && err, "shaped %d took the other size", i);
    pbcMessageDestroy(err);
    err = NULL;
  }
  pbcProgramDestroy(sized[0]);
  pbcProgramDestroy(sized[1]);
  /* Without sizes: one program for every batch (its rows are summed each
   * on its own), called at batches 5, 1, 0 and 2; one call's batch is one
   * size (an output of another batch is refused). */
  q = pbcProgramCompile(rowSums, "rows.mlir", &o, &err);
  CHECK(q, "compile for every batch: %s", err ? err : "");
  pbcMessageDestroy(err);
  err = NULL;
  PbcArgInfo bin, bout;
  CHECK(q && pbcProgramEntryArg(q, 0, 0, &bin) && bin.rank == 2 && bin.shape[0] == PBC_ARG_BATCH &&
            bin.shape[1] == 3 && pbcProgramEntryArg(q, 0, 1, &bout) && bout.rank == 1 &&
            bout.shape[0] == PBC_ARG_BATCH,
        "the batch in the signature");
  const int64_t every[4] = {5, 1, 0, 2};
  for (int i = 0; i < 4 && q; ++i) {
    float xs[15], sums[6];
    for (int k = 0; k < 15; ++k)
      xs[k] = (float)((rand() % 200) - 100) / 7.f + 0.5f;
    for (int k = 0; k < 6; ++k)
      sums[k] = 12345.f;
    int64_t sx[2] = {every[i], 3}, ss[1] = {every[i]};
    PbcTensor args[2] = {{"f32", 2, sx, NULL, xs}, {"f32", 1, ss, NULL, sums}};
    CHECK(pbcProgramCall(q, 0, args, 2, &err), "batch %lld: %s", (long long)every[i],
          err ? err : "");
    pbcMessageDestroy(err);
    err = NULL;
    for (int r = 0; r < 6; ++r) {
      float want = r < every[i] ? xs[3 * r] + xs[3 * r + 1] + xs[3 * r + 2] : 12345.f;
      CHECK(fabsf(sums[r] - want) <= 1e-4f * (1 + fabsf(want)), "batch %lld row %d: %g, want %g",
            (long long)every[i], r, sums[r], want);
    }
    int64_t other[1] = {every[i] + 1};
    PbcTensor wrong[2] = {{"f32", 2, sx, NULL, xs}, {"f32", 1, other, NULL, sums}};
    CHECK(!pbcProgramCall(q, 0, wrong, 2, &err) && err && strstr(err, "the batch is"),
          "batch %lld took an output of another: %s", (long long)every[i], err ? err : "");
    pbcMessageDestroy(err);
    err = NULL;
  }
  pbcProgramDestroy(q);
  q = pbcProgramCompileShaped(rowSums, "rows.mlir", &o, "0=5x4", &err);
  CHECK(!q && err && strstr(err, "rows.mlir:1") && strstr(err, "dimension 1 the size 4"),
        "contradicting shape not reported: %s", err ? err : "");
  pbcMessageDestroy(err);
  err = NULL;
  PbcCompileOptions bad_target = o;
  bad_target.target = "no-such-target";
  q = pbcProgramCompile(kProgram, "t.mlir", &bad_target, &err);
  CHECK(!q && err && strstr(err, "no-such-target"), "bad target: %s", err ? err : "");
  pbcMessageDestroy(err);
  /* 50 MB of garbage: a bounded message that keeps the first diagnostic. */
  size_t big = 50u << 20;
  char *garbage = malloc(big + 1);
  for (size_t i = 0; i < big; ++i)
    garbage[i] = (char)('a' + i % 26);
  garbage[big] = 0;
  err = NULL;
  q = pbcProgramCompile(garbage, "garbage.mlir", &o, &err);
  CHECK(!q && err && strlen(err) <= 8192 && strstr(err, "garbage.mlir:1:"),
        "garbage: %zu bytes: %.200s", err ? strlen(err) : 0, err ? err : "");
  pbcMessageDestroy(err);
  free(garbage);
  /* A cache folder that is a file is an error naming it. */
  char fileDir[4200];
  snprintf(fileDir, sizeof(fileDir), "%s/not-a-folder", cacheDir);
  FILE *nf = fopen(fileDir, "w");
  if (nf)
    fclose(nf);
  PbcCompileOptions fileCache = o;
  fileCache.cacheDir = fileDir;
  err = NULL;
  q = pbcProgramCompile(kProgram, "t.mlir", &fileCache, &err);
  CHECK(!q && err && strstr(err, "not-a-folder") && strstr(err, "not a directory"),
        "cache folder a file: %s", err ? err : "(accepted)");
  pbcMessageDestroy(err);

  /* A plugin folder full of bad entries (a FIFO, a symlink loop, 100
   * garbage files, plugins that crash or exit while loading: argv[2...]):
   * libpbc still compiles for cpu, found on PBC_PLUGIN_PATH. */
  char abuse[4300], path[4400];
  snprintf(abuse, sizeof(abuse), "%s/abuse", cacheDir);
  mkdir(abuse, 0755);
  snprintf(path, sizeof(path), "%s/libpbc_target_fifo.so", abuse);
  mkfifo(path, 0644);
  snprintf(path, sizeof(path), "%s/libpbc_target_loop.so", abuse);
  if (symlink("libpbc_target_loop.so", path) != 0)
    CHECK(0, "symlink");
  for (int i = 0; i < 100; ++i) {
    snprintf(path, sizeof(path), "%s/libpbc_target_bad%03d.so", abuse, i);
    FILE *g = fopen(path, "w");
    if (g)
      fputs("garbage\n", g), fclose(g);
  }
  for (int i = 2; i < argc; ++i) {
    char copy[4096];
    snprintf(copy, sizeof(copy), "%s", argv[i]);
    snprintf(path, sizeof(path), "%s/%s", abuse, basename(copy));
    if (symlink(argv[i][0] == '/' ? argv[i] : realpath(argv[i], NULL), path) != 0)
      CHECK(0, "symlink %s", argv[i]);
  }
  setenv("PBC_PLUGIN_PATH", pluginDir, 1);
  PbcCompileOptions abused = o;
  abused.pluginDir = abuse;
  err = NULL;
  q = pbcProgramCompile(kProgram, "abuse.mlir", &abused, &err);
  CHECK(q && pbcProgramNumEntries(q) == 2, "abused plugin folder: %s", err ? err : "");
  pbcProgramDestroy(q);
  pbcMessageDestroy(err);

  free(x), free(w), free(b), free(y), free(y2);
  if (failures)
    fprintf(stderr, "%d failures\n", failures);
  else
    printf("libpbc: all checks passed\n");
  return failures != 0;
}
