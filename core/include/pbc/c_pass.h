/*===- pbc/c_pass.h - Passes written in C --------------------------------===*\
|* MLIR's C API can create a pass from C callbacks (mlirCreateExternalPass);  *|
|* this wraps the boilerplate: a stable TypeID per pass name, clone/destroy   *|
|* of per-instance state, and the run callback.                               *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_C_PASS_H
#define PBC_C_PASS_H

#include <stdbool.h>
#include <stddef.h>

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs the pass on `op`; returns false to signal failure (after emitting a
 * diagnostic on the offending op's location). `state` is the instance's. */
typedef bool (*PbcCPassRunFn)(MlirOperation op, void *state);

typedef struct PbcCPassSpec {
  const char *name;     /* registry name, e.g. "pbc-classify-nests" */
  const char *anchorOp; /* "func.func", "builtin.module", or "" for any */
  const char *summary;
  PbcCPassRunFn run;
  size_t stateSize; /* bytes of per-instance state (copied on clone); 0: none */
  /* Checks the options (the text inside `{...}`) and creates an instance
   * (pbcCPassCreate of this spec); on bad options a null pass and a message
   * in err. The registries' PbcPassCreateFn: a pass's name and summary are
   * written once, here, and registered from its spec. */
  MlirPass (*create)(const char *options, char *err, size_t errLen);
} PbcCPassSpec;

/* Creates a pass from `spec` (which must outlive the pass: use a static).
 * `initialState` (stateSize bytes, may be NULL) seeds the instance state. */
MlirPass pbcCPassCreate(const PbcCPassSpec *spec, const void *initialState);
/* The creator of a pass that takes no options and has no state: an
 * instance of `spec`, or, if `options` names any, a null pass and a message
 * in err. */
MlirPass pbcCPassCreateWithoutOptions(const PbcCPassSpec *spec, const char *options, char *err,
                                      size_t errLen);
/* The creator of a pass whose one option is `vector-bits` (default 256) and
 * whose state is that width alone (a struct { int vectorBits; }). */
MlirPass pbcCPassCreateWithVectorBits(const PbcCPassSpec *spec, const char *options, char *err,
                                      size_t errLen);

/* Defines the spec `spec` (declared extern in a header first) of a pass
 * created by one of the two creators above, with a creator of its own that
 * calls it: PBC_C_PASS_WITHOUT_OPTIONS(pbcFusePass, "pbc-fuse", "func.func",
 * "summary", run); */
#define PBC_C_PASS_WITH_CREATOR(spec, name, anchor, summary, run, stateSize, creator)              \
  static MlirPass spec##Create(const char *options, char *err, size_t errLen) {                    \
    return creator(&spec, options, err, errLen);                                                   \
  }                                                                                                \
  const PbcCPassSpec spec = {name, anchor, summary, run, stateSize, spec##Create}
#define PBC_C_PASS_WITHOUT_OPTIONS(spec, name, anchor, summary, run)                               \
  PBC_C_PASS_WITH_CREATOR(spec, name, anchor, summary, run, 0, pbcCPassCreateWithoutOptions)
#define PBC_C_PASS_WITH_VECTOR_BITS(spec, name, anchor, summary, run)                              \
  PBC_C_PASS_WITH_CREATOR(spec, name, anchor, summary, run, sizeof(int),                           \
                          pbcCPassCreateWithVectorBits)

/* Option parsing for passes: `options` is the text inside `{...}`, entries
 * `key=value` separated by spaces. Returns true and copies the value of `key`
 * into out (NUL-terminated) if present. */
bool pbcPassOptionGet(const char *options, const char *key, char *out, size_t outLen);
/* The integer value of `key`, or `fallback` if the key is absent. Call it on
 * options that a count check (pbcPassOptionsCheckSomeCounts) accepted. */
long long pbcPassOptionInt(const char *options, const char *key, long long fallback);
/* A pass option whose value is a count (a size, width or factor), with its
 * value when absent. A pass declares its options once, as a table ending in
 * {NULL, 0}, indexed by an enum of its own. */
typedef struct PbcCountOption {
  const char *key;
  long long fallback;
} PbcCountOption;
/* Checks `options` against the table (every key known, every value a whole
 * non-negative integer, so `l2-bytes=1M` or `vector-bits=` is an error, not
 * a silent 0) and stores each option's value, or its fallback, in values[i]
 * (one per table entry). False with a message in err otherwise. */
bool pbcPassCountOptions(const char *options, const PbcCountOption *table, long long *values,
                         char *err, size_t errLen);
/* Returns false and writes a message into err if `options` names a key that is
 * not in the NULL-terminated list `known`. */
bool pbcPassOptionsCheck(const char *options, const char *const *known, char *err, size_t errLen);
/* As pbcPassOptionsCheck, with the values of the keys in `countKeys` (a
 * NULL-terminated sublist of `known`) checked as pbcPassCountOptions checks
 * all: for passes that also take a word (unit=mma-sync). */
bool pbcPassOptionsCheckSomeCounts(const char *options, const char *const *known,
                                   const char *const *countKeys, char *err, size_t errLen);

/* Emits an error diagnostic at op's location. */
void pbcEmitOpError(MlirOperation op, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Small helpers used by many passes. */
static inline MlirStringRef pbcStr(const char *s) { return mlirStringRefCreateFromCString(s); }
bool pbcOpIsA(MlirOperation op, const char *name);
/* Discardable attributes as marks between passes (pbc.vectorize, ...). */
bool pbcOpHasAttr(MlirOperation op, const char *name);
void pbcOpSetUnitAttr(MlirOperation op, const char *name);
/* Name of op as a NUL-terminated string in buf. */
const char *pbcOpName(MlirOperation op, char *buf, size_t len);
/* Runs a textual pass pipeline (MLIR's syntax, anchored on the module) on
 * module; false if it does not parse or a pass fails (diagnostics emitted). */
bool pbcRunPipelineText(MlirOperation module, const char *pipeline);

#ifdef __cplusplus
}
#endif
#endif
