/*===- pbc/libpbc.h - Embedding pbc: compile, load, call ------------------===*\
|* libpbc compiles a tensor program (MLIR text, as `pbc` accepts it) for a   *|
|* target into a shared library, loads it into the calling process and      *|
|* hands out its entry points. Compilation runs the `pbc` driver (beside    *|
|* libpbc, or $PBC_DRIVER) as a new process, so an MLIR/LLVM crash becomes  *|
|* an error message, never a dead caller. Compiled libraries are cached on  *|
|* disk by a hash of the program, the options, the target plugin, the chip, *|
|* the driver, libpbc_core and libpbc; an entry is validated (size,         *|
|* checksum, key) before it is loaded and rebuilt when it is bad.           *|
|*                                                                          *|
|* Errors are returned as values: a function that can fail returns NULL,    *|
|* false or -1 and, when `error` is not NULL, stores a message (the         *|
|* compiler's located diagnostics, at most 64 KiB of them) that the caller  *|
|* frees with pbcMessageDestroy. Nothing is printed; nothing exits; every   *|
|* pointer argument may be NULL (an error, or false/-1/NULL for queries).   *|
|*                                                                          *|
|* Entry points use MLIR's C interface for memrefs: the inputs, then one    *|
|* caller-allocated output per result, each a pointer to a descriptor       *|
|* { T *allocated; T *aligned; int64_t offset; int64_t sizes[R];            *|
|*   int64_t strides[R]; } (sizes and strides in elements).                 *|
|*                                                                          *|
|* Thread safety: every function may be called from any number of threads  *|
|* at once. Each compile collects its own diagnostics (the caller's stderr  *|
|* is never touched); plugins are discovered once per plugin folder and     *|
|* never change after; concurrent compiles of one program in one process   *|
|* wait for the first and share its cache entry. A loaded program may be   *|
|* called from any thread (a program is not destroyed while in use).       *|
|*                                                                          *|
|* Crash reproducers of the compiler go to $PBC_REPRODUCER_DIR, else       *|
|* $TMPDIR, else /tmp; the error message names the file.                    *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_LIBPBC_H
#define PBC_LIBPBC_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct PbcCompileOptions {
  const char *target;    /* NULL: "cpu" */
  const char *chip;      /* NULL: the target's default ("native" on cpu) */
  int optLevel;          /* 0..3; -1: 3; others are an error */
  const char *disable;   /* S3 groups to skip, as pbc --disable; NULL: none */
  const char *pluginDir; /* also search plugins here; NULL: none */
  const char *cacheDir;  /* NULL: $PBC_CACHE_DIR, else $XDG_CACHE_HOME/pbc or
                            ~/.cache/pbc; "": no cache. A folder named here or
                            by $PBC_CACHE_DIR that cannot be used is an error;
                            an unusable default folder means no cache.
                            $PBC_CACHE_MAX_MB bounds it (default 2048). */
} PbcCompileOptions;

/* A compiled program loaded into this process. */
typedef struct PbcProgram PbcProgram;

/* A size in PbcArgInfo.shape given by each call: the batch of an entry
 * compiled once for every batch size. */
#define PBC_ARG_BATCH (-1)
/* A size in PbcArgInfo.shape given by each call, by symbol s (0, 1, ...):
 * every size of one call with symbol s is the same; results' sizes are
 * the inputs' (-2 is symbol 0, -3 symbol 1, ...). */
#define PBC_ARG_SYMBOL(s) (-2 - (int64_t)(s))

/* One argument of an entry point. `elem` is MLIR's spelling (f32, bf16, i64). */
typedef struct PbcArgInfo {
  const char *elem;
  int rank;
  /* rank sizes; PBC_ARG_BATCH: the call's batch; PBC_ARG_SYMBOL(s): the
   * call's size of symbol s */
  const int64_t *shape;
} PbcArgInfo;

/* A tensor handed to pbcProgramCall. */
typedef struct PbcTensor {
  const char *elem;       /* MLIR's spelling, as PbcArgInfo */
  int rank;
  const int64_t *shape;   /* rank sizes */
  const int64_t *strides; /* rank strides in elements; NULL: row-major. Other
                             layouts are refused (the code is row-major),
                             but for dimensions of size 1 and a batch's */
  void *data;             /* the first element */
} PbcTensor;

/* Compiles `text` (MLIR; `name` names it in diagnostics) and loads it. */
PbcProgram *pbcProgramCompile(const char *text, const char *name,
                              const PbcCompileOptions *options, char **error);
/* A program whose entry points take tensors with a dynamic leading size
 * (tensor<?x...>, a batch) and compute each batch element from that
 * element alone is compiled once for every batch size: the entry's
 * signature has PBC_ARG_BATCH where the batch goes, every such size of one
 * call must be the same (pbcProgramCall and pbcProgramInvoke check it),
 * and results take it too. Other dynamic programs are compiled with
 * symbolic sizes: each `?` of the signature is PBC_ARG_SYMBOL(s), the
 * sizes of one symbol in one call must agree (checked), and each result's
 * `?` is an input's symbol. A program whose result sizes are not its
 * inputs' (or that does not fold to static shapes at probe sizes) is an
 * error saying why; pbcProgramCompileShaped compiles it for given sizes. */

/* The same for a program whose entry points take tensors of dynamic shape
 * (tensor<?x...>): compiled for the sizes in `shapes`, one or more
 * `[ENTRY:]ARG=D0xD1x...` separated by ';' (ARG: the input's position from
 * 0; no ENTRY: every entry's input ARG; as `pbc --shape`). The loaded
 * program's signatures are static: the given sizes and the result sizes
 * they imply; each distinct `shapes` is one more compile (and cache
 * entry). NULL or "" shapes: as pbcProgramCompile. */
PbcProgram *pbcProgramCompileShaped(const char *text, const char *name,
                                    const PbcCompileOptions *options, const char *shapes,
                                    char **error);
void pbcProgramDestroy(PbcProgram *p);

/* Entry points: the public functions of the program, in order. */
int pbcProgramNumEntries(const PbcProgram *p);
const char *pbcProgramEntryName(const PbcProgram *p, int entry);
/* The index of the entry named `name`, or -1. */
int pbcProgramFindEntry(const PbcProgram *p, const char *name);
int pbcProgramEntryNumInputs(const PbcProgram *p, int entry);
int pbcProgramEntryNumOutputs(const PbcProgram *p, int entry);
/* Argument `arg` (inputs first, then outputs); false if out of range. */
bool pbcProgramEntryArg(const PbcProgram *p, int entry, int arg, PbcArgInfo *out);
/* The largest size symbol s (PBC_ARG_SYMBOL(s)) of an entry may take: 0
 * for any (from 1), -1 if there is no such entry or symbol. A call past it
 * is refused by pbcProgramCall and pbcProgramInvoke; the raw function
 * traps. */
int64_t pbcProgramEntrySymbolMax(const PbcProgram *p, int entry, int symbol);
/* `void _mlir_ciface_F(void *in0, ..., void *out0, ...)`, for direct calls
 * (nothing is checked on that path). */
void *pbcProgramEntryFunction(const PbcProgram *p, int entry);
/* `void F(void **descriptors)`: the same call with one argument, an array of
 * the descriptors' addresses (inputs, then outputs; nothing is checked).
 * A caller that keeps the array across calls fills in only what changes:
 * one foreign call however many arguments the entry takes. */
void *pbcProgramEntryPackedFunction(const PbcProgram *p, int entry);

/* Calls entry with tensors args[0..numArgs) (inputs, then outputs) after
 * checking the count, each element type, rank and shape against the entry's
 * signature, that the strides are row-major, that data is not NULL, and
 * that no output overlaps another argument. False with a message on a mismatch; nothing is called then. */
bool pbcProgramCall(const PbcProgram *p, int entry, const PbcTensor *args, int numArgs,
                    char **error);
/* Calls entry with memref descriptors[0..numDescriptors) after checking
 * their count, sizes against the entry's shapes, a zero offset and
 * row-major strides (the code has both built in; a batch's glue follows
 * its leading stride and the offset) and aligned pointers (a descriptor
 * carries no element type: that is the caller's promise). */
bool pbcProgramInvoke(const PbcProgram *p, int entry, void **descriptors,
                      int numDescriptors, char **error);

/* The path of the loaded shared library (in the cache, or removed already
 * when there is no cache). */
const char *pbcProgramLibraryPath(const PbcProgram *p);

void pbcMessageDestroy(char *message);
const char *pbcVersion(void);

#ifdef __cplusplus
}
#endif
#endif
