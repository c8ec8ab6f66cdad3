/* Passes written in C on mlirCreateExternalPass: see pbc/c_pass.h. */
#include "pbc/c_pass.h"

#include "mlir-c/BuiltinAttributes.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/Diagnostics.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"

typedef struct PbcCPassInstance {
  const PbcCPassSpec *spec;
  void *state;
} PbcCPassInstance;

/* One TypeID per pass name, allocated once for the process. */
#define PBC_MAX_C_PASSES 256
static pthread_mutex_t typeIdLock = PTHREAD_MUTEX_INITIALIZER;
static MlirTypeIDAllocator typeIdAllocator;
static const char *typeIdNames[PBC_MAX_C_PASSES];
static MlirTypeID typeIds[PBC_MAX_C_PASSES];
static int numTypeIds;

static MlirTypeID typeIdFor(const char *name) {
  pthread_mutex_lock(&typeIdLock);
  if (!typeIdAllocator.ptr)
    typeIdAllocator = mlirTypeIDAllocatorCreate();
  MlirTypeID id = {NULL};
  for (int i = 0; i < numTypeIds; ++i)
    if (strcmp(typeIdNames[i], name) == 0)
      id = typeIds[i];
  if (!id.ptr) {
    if (numTypeIds == PBC_MAX_C_PASSES) {
      fprintf(stderr, "pbc: internal error: too many C passes\n");
      abort();
    }
    id = mlirTypeIDAllocatorAllocateTypeID(typeIdAllocator);
    typeIdNames[numTypeIds] = name;
    typeIds[numTypeIds++] = id;
  }
  pthread_mutex_unlock(&typeIdLock);
  return id;
}

static PbcCPassInstance *instanceCreate(const PbcCPassSpec *spec, const void *state) {
  PbcCPassInstance *inst = calloc(1, sizeof(*inst));
  inst->spec = spec;
  if (spec->stateSize) {
    inst->state = calloc(1, spec->stateSize);
    if (state)
      memcpy(inst->state, state, spec->stateSize);
  }
  return inst;
}

static void cbConstruct(void *userData) { (void)userData; }
static void cbDestruct(void *userData) {
  PbcCPassInstance *inst = userData;
  free(inst->state);
  free(inst);
}
static MlirLogicalResult cbInitialize(MlirContext ctx, void *userData) {
  (void)ctx;
  (void)userData;
  return mlirLogicalResultSuccess();
}
static void *cbClone(void *userData) {
  PbcCPassInstance *inst = userData;
  return instanceCreate(inst->spec, inst->state);
}
static void cbRun(MlirOperation op, MlirExternalPass pass, void *userData) {
  PbcCPassInstance *inst = userData;
  if (!inst->spec->run(op, inst->state))
    mlirExternalPassSignalFailure(pass);
}

MlirPass pbcCPassCreate(const PbcCPassSpec *spec, const void *initialState) {
  MlirExternalPassCallbacks cb = {cbConstruct, cbDestruct, cbInitialize, cbClone, cbRun};
  PbcCPassInstance *inst = instanceCreate(spec, initialState);
  return mlirCreateExternalPass(typeIdFor(spec->name), mlirStringRefCreateFromCString(spec->name),
                                mlirStringRefCreateFromCString(spec->name),
                                mlirStringRefCreateFromCString(spec->summary),
                                mlirStringRefCreateFromCString(spec->anchorOp), 0, NULL, cb, inst);
}

/* Walks `key=value` entries separated by spaces; calls fn for each. */
static bool forEachOption(const char *options,
                          bool (*fn)(const char *k, size_t kl, const char *v, size_t vl, void *ud),
                          void *ud) {
  const char *p = options ? options : "";
  while (*p) {
    while (*p == ' ')
      ++p;
    if (!*p)
      break;
    const char *k = p;
    while (*p && *p != '=' && *p != ' ')
      ++p;
    size_t kl = (size_t)(p - k);
    const char *v = p;
    size_t vl = 0;
    if (*p == '=') {
      v = ++p;
      while (*p && *p != ' ')
        ++p;
      vl = (size_t)(p - v);
    }
    if (!fn(k, kl, v, vl, ud))
      return false;
  }
  return true;
}

typedef struct {
  const char *key;
  char *out;
  size_t outLen;
  bool found;
} GetCtx;

static bool getFn(const char *k, size_t kl, const char *v, size_t vl, void *ud) {
  GetCtx *g = ud;
  if (strlen(g->key) == kl && strncmp(k, g->key, kl) == 0) {
    size_t n = vl < g->outLen - 1 ? vl : g->outLen - 1;
    memcpy(g->out, v, n);
    g->out[n] = 0;
    g->found = true;
  }
  return true;
}

bool pbcPassOptionGet(const char *options, const char *key, char *out, size_t outLen) {
  GetCtx g = {key, out, outLen, false};
  forEachOption(options, getFn, &g);
  return g.found;
}

/* A whole, non-negative integer (decimal or 0x hex) below 2^31, so that every
 * pass may keep it in an int. */
static bool parseCount(const char *v, size_t vl, long long *out) {
  char buf[32];
  if (vl == 0 || vl >= sizeof(buf) || v[0] == '-' || v[0] == '+')
    return false;
  memcpy(buf, v, vl);
  buf[vl] = 0;
  char *end;
  errno = 0;
  /* decimal, or hex after 0x (base 0 would read a leading 0 as octal) */
  bool hex = buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X');
  long long n = strtoll(buf, &end, hex ? 16 : 10);
  if (errno || *end || n > INT_MAX)
    return false;
  *out = n;
  return true;
}

long long pbcPassOptionInt(const char *options, const char *key, long long fallback) {
  char v[32];
  long long n;
  /* The count check has rejected what does not parse. */
  return pbcPassOptionGet(options, key, v, sizeof(v)) && parseCount(v, strlen(v), &n) ? n
                                                                                      : fallback;
}

typedef struct {
  const char *const *known;
  bool counts;                  /* every value must be a count */
  const char *const *countKeys; /* or these keys' values (NULL: none) */
  char *err;
  size_t errLen;
} CheckCtx;

static bool keyIn(const char *const *list, const char *k, size_t kl) {
  for (const char *const *kn = list; kn && *kn; ++kn)
    if (strlen(*kn) == kl && strncmp(k, *kn, kl) == 0)
      return true;
  return false;
}

static bool checkFn(const char *k, size_t kl, const char *v, size_t vl, void *ud) {
  CheckCtx *c = ud;
  if (!keyIn(c->known, k, kl)) {
    snprintf(c->err, c->errLen, "unknown option '%.*s'", (int)kl, k);
    return false;
  }
  long long n;
  if ((c->counts || keyIn(c->countKeys, k, kl)) && !parseCount(v, vl, &n)) {
    snprintf(c->err, c->errLen, "option '%.*s' takes an integer from 0 to 2^31-1, got '%.*s'",
             (int)kl, k, (int)vl, v);
    return false;
  }
  return true;
}

bool pbcPassOptionsCheck(const char *options, const char *const *known, char *err, size_t errLen) {
  CheckCtx c = {known, false, NULL, err, errLen};
  return forEachOption(options, checkFn, &c);
}

static bool pbcPassOptionsCheckCounts(const char *options, const char *const *known, char *err,
                                      size_t errLen) {
  CheckCtx c = {known, true, NULL, err, errLen};
  return forEachOption(options, checkFn, &c);
}

bool pbcPassCountOptions(const char *options, const PbcCountOption *table, long long *values,
                         char *err, size_t errLen) {
  enum { kMaxOptions = 32 };
  const char *known[kMaxOptions + 1];
  int n = 0;
  while (table[n].key && n < kMaxOptions) {
    known[n] = table[n].key;
    ++n;
  }
  known[n] = NULL;
  if (!pbcPassOptionsCheckCounts(options, known, err, errLen))
    return false;
  for (int i = 0; i < n; ++i)
    values[i] = pbcPassOptionInt(options, table[i].key, table[i].fallback);
  return true;
}

bool pbcPassOptionsCheckSomeCounts(const char *options, const char *const *known,
                                   const char *const *countKeys, char *err, size_t errLen) {
  CheckCtx c = {known, false, countKeys, err, errLen};
  return forEachOption(options, checkFn, &c);
}

void pbcEmitOpError(MlirOperation op, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  mlirEmitError(mlirOperationGetLocation(op), msg);
}

const char *pbcOpName(MlirOperation op, char *buf, size_t len) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  size_t n = s.length < len - 1 ? s.length : len - 1;
  memcpy(buf, s.data, n);
  buf[n] = 0;
  return buf;
}

bool pbcOpIsA(MlirOperation op, const char *name) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  return s.length == strlen(name) && strncmp(s.data, name, s.length) == 0;
}

bool pbcOpHasAttr(MlirOperation op, const char *name) {
  return !mlirAttributeIsNull(
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(name)));
}

void pbcOpSetUnitAttr(MlirOperation op, const char *name) {
  mlirOperationSetAttributeByName(op, mlirStringRefCreateFromCString(name),
                                  mlirUnitAttrGet(mlirOperationGetContext(op)));
}

MlirPass pbcCPassCreateWithoutOptions(const PbcCPassSpec *spec, const char *options, char *err,
                                      size_t errLen) {
  static const char *const none[] = {NULL};
  if (!pbcPassOptionsCheck(options, none, err, errLen))
    return (MlirPass){NULL};
  return pbcCPassCreate(spec, NULL);
}

MlirPass pbcCPassCreateWithVectorBits(const PbcCPassSpec *spec, const char *options, char *err,
                                      size_t errLen) {
  static const PbcCountOption kOptions[] = {{"vector-bits", 256}, {NULL, 0}};
  long long v[1];
  if (!pbcPassCountOptions(options, kOptions, v, err, errLen))
    return (MlirPass){NULL};
  int vectorBits = (int)v[0];
  return pbcCPassCreate(spec, &vectorBits);
}

bool pbcRunPipelineText(MlirOperation module, const char *pipeline) {
  MlirPassManager pm =
      mlirPassManagerCreateOnOperation(mlirOperationGetContext(module), pbcStr("builtin.module"));
  MlirLogicalResult r = mlirOpPassManagerAddPipeline(mlirPassManagerGetAsOpPassManager(pm),
                                                    pbcStr(pipeline), NULL, NULL);
  bool ok = mlirLogicalResultIsSuccess(r) &&
            mlirLogicalResultIsSuccess(mlirPassManagerRunOnOp(pm, module));
  mlirPassManagerDestroy(pm);
  return ok;
}
