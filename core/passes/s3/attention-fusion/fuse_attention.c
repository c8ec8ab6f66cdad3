/* pbc-fuse-attention{vector-bits= vector-registers=}: attention as one nest
 * (PolyBlocks' reduce-reduce fusion, §4.4, on CPUs). The chain
 * softmax(f(Q Kᵀ)) V (analysis/attention_chain.h) becomes, per batch and
 * block of R query rows (one parallel loop over both):
 *   - the block's scores, R x N, in a row buffer of its own (L1/L2-sized:
 *     the score matrix never reaches memory): Q Kᵀ on an R x (Cq vectors) register
 *     tile per step of the key dim, the score nests (scale, masks) applied
 *     to the tile in registers, padded keys set to -inf;
 *   - per row the max, exp(x - max) in place and its sum;
 *   - P V on an R x (Cg vectors) register tile per column group of V, the
 *     division by the sum folded into the tile's one store.
 * The whole row fits the buffer, so one max per row serves every key: no
 * running-max rescaling is needed (what a streamed, flash-style kernel
 * pays for keys that do not fit). K is read as Kᵀ ([b, d, key], keys
 * contiguous: the score tile's vector loads); where the program has K by
 * rows, or the keys do not fill whole vectors, a transposing copy padded
 * with zero keys comes first (a plain copy nest the later passes vectorize
 * and parallelize).
 *
 * The nest is written as MLIR text and parsed (scf loops and vector ops
 * inside one affine.for of kind `attention`, marked pbc.parallel): S3's
 * other passes rewrite affine nests of the kinds they know and leave it
 * alone; pbc-parallelize makes its loop parallel. GPU targets replace this
 * pass's group with their matrix-unit kernel. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/attention_chain.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc/affine_access.h"
#include "pbc/c_pass.h"
#include "pbc/chain_match.h"
#include "pbc/ir_build.h"
#include "pbc/marks.h"
#include "pbc/strbuf.h"
#include "passes/passes.h"

typedef struct {
  int vectorBits, vectorRegisters;
} State;

enum { kMaxExtras = 16, kMaxMap = 64, kMaxRows = 8, kMaxCols = 4 };

/* Values from outside the chain the kernel takes as arguments after
 * q, k, v, o and O's start: float constants and masks' buffers. */
typedef struct {
  MlirValue values[kMaxExtras];
  int n;
} Extras;

typedef struct {
  const PbcAttentionChain *at;
  PbcStrBuf *s;
  Extras ex;
  int next;         /* SSA counter */
  int w, wv;        /* lanes of score vectors, of V's columns */
  int rows, cq, cg; /* register tile: rows, score vectors, V vectors */
  int sub;          /* register tiles of rows per block */
  long long np;     /* keys padded to whole score vectors */
  bool pack;        /* K copied into Kᵀ padded */
  bool oZero;       /* O starts at 0.0 */
  bool ok;
  char vf[32], vb[32], vv[32], vi[32]; /* vector<W x f32|i1|index>, <Wv x f32> */
} Gen;

static int extraIndex(Gen *g, MlirValue v) {
  for (int i = 0; i < g->ex.n; ++i)
    if (g->ex.values[i].ptr == v.ptr)
      return i;
  if (g->ex.n == kMaxExtras) {
    g->ok = false;
    return 0;
  }
  g->ex.values[g->ex.n] = v;
  return g->ex.n++;
}

static void typeText(MlirType t, PbcStrBuf *s) { mlirTypePrint(t, pbcStrBufCallback, s); }

static void putType(Gen *g, MlirValue v) { typeText(mlirValueGetType(v), g->s); }

static int fresh(Gen *g) { return g->next++; }

#define P(...) pbcStrBufPrintf(g->s, __VA_ARGS__)

/* %v<id> = arith.constant c : index */
static int idxConst(Gen *g, long long c) {
  int id = fresh(g);
  P("%%v%d = arith.constant %lld : index\n", id, c);
  return id;
}

/* %v<id> = base + c (index) */
static int idxAdd(Gen *g, const char *base, long long c) {
  if (c == 0) {
    int id = fresh(g);
    P("%%v%d = arith.addi %s, %%c0 : index\n", id, base);
    return id;
  }
  int k = idxConst(g, c), id = fresh(g);
  P("%%v%d = arith.addi %s, %%v%d : index\n", id, base, k);
  return id;
}

/* ---- The score nests, on one W-lane vector of scores. ---- */

typedef struct {
  const void *from[kMaxMap];
  int to[kMaxMap];
  int n;
} IdMap;

static int mapGet(const IdMap *m, MlirValue v) {
  for (int i = 0; i < m->n; ++i)
    if (m->from[i] == v.ptr)
      return m->to[i];
  return -1;
}

static void mapPut(Gen *g, IdMap *m, MlirValue v, int id) {
  if (m->n == kMaxMap) {
    g->ok = false;
    return;
  }
  m->from[m->n] = v.ptr;
  m->to[m->n++] = id;
}

static const char *const kCmpf[] = {"false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
                                    "ueq",   "ugt", "uge", "ult", "ule", "une", "uno", "true"};

/* The operand of a score-nest op as text: a value of the body, or an
 * outside float constant broadcast once (%eb<i>). */
static void operandText(Gen *g, IdMap *m, MlirValue v, char *out, size_t len) {
  int id = mapGet(m, v);
  if (id >= 0)
    snprintf(out, len, "%%v%d", id);
  else
    snprintf(out, len, "%%eb%d", extraIndex(g, v));
}

/* The band's indices as vectors of index: the key index per lane (col +
 * lane), the row's and the batch's broadcast. */
static void mapBandIndices(Gen *g, IdMap *m, MlirOperation nest, const char *row,
                           const char *col) {
  MlirOperation band[PBC_MAX_BAND];
  int depth = pbcLoopBand(nest, band, PBC_MAX_BAND);
  for (int l = 0; l < depth; ++l) {
    MlirValue iv = pbcLoopIv(band[l]);
    int b = fresh(g);
    const char *what = l == depth - 1 ? col : l == depth - 2 ? row : "%b";
    P("%%v%d = vector.broadcast %s : index to %s\n", b, what, g->vi);
    if (l == depth - 1) {
      int k = fresh(g);
      P("%%v%d = arith.addi %%v%d, %%lanes : %s\n", k, b, g->vi);
      b = k;
    }
    mapPut(g, m, iv, b);
  }
}

/* The vector type of a score-nest value. */
static const char *vectorOf(const Gen *g, MlirValue v) {
  MlirType t = mlirValueGetType(v);
  return mlirTypeIsAIndex(t) ? g->vi : mlirTypeIsAInteger(t) ? g->vb : g->vf;
}

static bool isBinaryFloat(const char *name) {
  static const char *const k[] = {"arith.addf",     "arith.subf",    "arith.mulf",
                                  "arith.divf",     "arith.maximumf", "arith.minimumf",
                                  "arith.maxnumf",  "arith.minnumf",  "math.powf",
                                  "math.copysign",  NULL};
  for (int i = 0; k[i]; ++i)
    if (!strcmp(name, k[i]))
      return true;
  return false;
}

static bool isUnaryFloat(const char *name) {
  static const char *const k[] = {"arith.negf", "math.exp",  "math.exp2", "math.log",
                                  "math.tanh",  "math.sqrt", "math.rsqrt", "math.absf",
                                  "math.erf",   "math.log2", "math.floor", "math.ceil", NULL};
  for (int i = 0; k[i]; ++i)
    if (!strcmp(name, k[i]))
      return true;
  return false;
}

/* A load of a buffer other than the scores, as a vector along the keys
 * (or a broadcast scalar if no subscript is the key index). `tailLanes`:
 * 0 for a whole vector, else the lanes in bounds. */
static int emitOtherLoad(Gen *g, MlirOperation nest, const PbcAccess *acc, const char *b,
                         const char *row, const char *col, int tailLanes) {
  MlirOperation band[PBC_MAX_BAND];
  int depth = pbcLoopBand(nest, band, PBC_MAX_BAND);
  int e = extraIndex(g, acc->memref);
  bool alongKeys = false;
  PbcStrBuf sub = {0};
  for (int d = 0; d < acc->rank; ++d) {
    const PbcLinearForm *f = &acc->subscripts[d];
    if (d)
      pbcStrBufPuts(&sub, ", ");
    if (f->nTerms == 0) {
      int c = idxConst(g, f->constant);
      pbcStrBufPrintf(&sub, "%%v%d", c);
      continue;
    }
    int l = 0;
    while (l < depth && f->values[0].ptr != pbcLoopIv(band[l]).ptr)
      ++l;
    bool isKey = l == depth - 1, isRow = l == depth - 2;
    alongKeys |= isKey;
    pbcStrBufPuts(&sub, isKey ? col : isRow ? row : b);
  }
  int id = fresh(g);
  char mt[256] = "";
  PbcStrBuf t = {0};
  typeText(mlirValueGetType(acc->memref), &t);
  snprintf(mt, sizeof mt, "%s", pbcStrBufGet(&t));
  pbcStrBufDestroy(&t);
  if (!alongKeys) {
    int sc = fresh(g);
    P("%%v%d = memref.load %%e%d[%s] : %s\n", sc, e, pbcStrBufGet(&sub), mt);
    P("%%v%d = vector.broadcast %%v%d : f32 to %s\n", id, sc, g->vf);
  } else if (tailLanes) {
    int mk = fresh(g);
    P("%%v%d = vector.constant_mask [%d] : %s\n", mk, tailLanes, g->vb);
    P("%%v%d = vector.maskedload %%e%d[%s], %%v%d, %%zero : %s, %s, %s into %s\n", id, e,
      pbcStrBufGet(&sub), mk, mt, g->vb, g->vf,
      g->vf);
  } else {
    P("%%v%d = vector.load %%e%d[%s] : %s, %s\n", id, e, pbcStrBufGet(&sub), mt,
      g->vf);
  }
  pbcStrBufDestroy(&sub);
  return id;
}

/* The score nests on vector `sv` of row `row` (index value), keys from
 * column `col`; returns the final vector's id. */
static int emitScoreNests(Gen *g, int sv, const char *row, const char *col, int tailLanes) {
  const PbcAttentionChain *at = g->at;
  for (int k = 0; k < at->nScore && g->ok; ++k) {
    MlirOperation nest = at->scoreNests[k], band[PBC_MAX_BAND];
    int depth = pbcLoopBand(nest, band, PBC_MAX_BAND);
    IdMap m = {.n = 0};
    int stored = -1;
    mapBandIndices(g, &m, nest, row, col);
    for (MlirOperation op = mlirBlockGetFirstOperation(pbcLoopBody(band[depth - 1]));
         !mlirOperationIsNull(op) && g->ok; op = mlirOperationGetNextInBlock(op)) {
      char name[64], a[32], b2[32], c3[32];
      pbcOpName(op, name, sizeof name);
      PbcAccess acc;
      if (pbcOpIsA(op, "affine.yield"))
        continue;
      if (pbcOpIsA(op, "affine.store")) {
        stored = mapGet(&m, mlirOperationGetOperand(op, 0));
        continue;
      }
      MlirValue r = mlirOperationGetResult(op, 0);
      if (pbcOpIsA(op, "affine.load") && pbcAccessGet(op, &acc)) {
        mapPut(g, &m, r,
               acc.memref.ptr == at->scoreIn[k].ptr
                   ? sv
                   : emitOtherLoad(g, nest, &acc, "%b", row, col, tailLanes));
        continue;
      }
      int id = fresh(g);
      const char *vf = g->vf;
      bool isBool = mlirTypeIsAInteger(mlirValueGetType(r));
      operandText(g, &m, mlirOperationGetOperand(op, 0), a, sizeof a);
      if (isUnaryFloat(name)) {
        P("%%v%d = %s %s : %s\n", id, name, a, vf);
      } else if (isBinaryFloat(name)) {
        operandText(g, &m, mlirOperationGetOperand(op, 1), b2, sizeof b2);
        P("%%v%d = %s %s, %s : %s\n", id, name, a, b2, vf);
      } else if (!strcmp(name, "arith.cmpi") || !strcmp(name, "arith.addi") ||
                 !strcmp(name, "arith.subi") || !strcmp(name, "arith.muli")) {
        static const char *const kCmpi[] = {"eq", "ne", "slt", "sle", "sgt",
                                            "sge", "ult", "ule", "ugt", "uge"};
        operandText(g, &m, mlirOperationGetOperand(op, 1), b2, sizeof b2);
        const char *ty = vectorOf(g, mlirOperationGetOperand(op, 0));
        if (!strcmp(name, "arith.cmpi")) {
          long long pv =
              mlirIntegerAttrGetValueInt(mlirOperationGetAttributeByName(op, pbcStr("predicate")));
          if (pv < 0 || pv > 9)
            g->ok = false;
          else
            P("%%v%d = arith.cmpi %s, %s, %s : %s\n", id, kCmpi[pv], a, b2, ty);
        } else {
          P("%%v%d = %s %s, %s : %s\n", id, name, a, b2, ty);
        }
      } else if (!strcmp(name, "arith.cmpf") && isBool) {
        MlirAttribute pred = mlirOperationGetAttributeByName(op, pbcStr("predicate"));
        long long pv = mlirIntegerAttrGetValueInt(pred);
        operandText(g, &m, mlirOperationGetOperand(op, 1), b2, sizeof b2);
        if (pv < 0 || pv > 15)
          g->ok = false;
        else
          P("%%v%d = arith.cmpf %s, %s, %s : %s\n", id, kCmpf[pv], a, b2, vf);
      } else if (!strcmp(name, "arith.select") && !isBool) {
        operandText(g, &m, mlirOperationGetOperand(op, 1), b2, sizeof b2);
        operandText(g, &m, mlirOperationGetOperand(op, 2), c3, sizeof c3);
        P("%%v%d = arith.select %s, %s, %s : %s, %s\n", id, a, b2, c3, g->vb, vf);
      } else {
        g->ok = false;
      }
      mapPut(g, &m, r, id);
    }
    if (stored < 0)
      g->ok = false;
    sv = stored;
  }
  if (tailLanes) {
    int mk = fresh(g), id = fresh(g);
    P("%%v%d = vector.constant_mask [%d] : %s\n", mk, tailLanes, g->vb);
    P("%%v%d = arith.select %%v%d, %%v%d, %%ninf : %s, %s\n", id, mk, sv, g->vb,
      g->vf);
    sv = id;
  }
  return sv;
}

/* ---- One block of `rows` query rows from %i0. ---- */

/* A register tile of rows x cols vector accumulators, from 0, over a
 * loop: per step `cols` vectors of b at [b, ]iv, cidx[c] and each row's
 * scalar of a (Q at [b, ]row, iv, or the row buffer at its row, iv)
 * broadcast into fmas. Returns the id of the first of the loop's
 * results (row-major). */
typedef struct {
  const char *iv, *ub, *zero, *vt; /* the loop's index and bound, the start, vector type */
  const char *b, *bType;           /* the vectors' buffer */
  const char *a, *aType;           /* the scalars' buffer */
  bool aIsQ;                       /* a is Q ([b, ]row, iv), else the row buffer */
} TileLoop;

static int emitTileLoop(Gen *g, const TileLoop *t, int row0, int rows, int cols,
                        const int cidx[]) {
  const char *bp = g->at->batched ? "%b, " : "";
  int n = rows * cols, acc0 = g->next;
  g->next += n;
  int res = g->next;
  g->next += n;
  for (int i = 0; i < n; ++i)
    P("%s%%v%d", i ? ", " : "", res + i);
  P(" = scf.for %s = %%c0 to %s step %%c1 iter_args(", t->iv, t->ub);
  for (int i = 0; i < n; ++i)
    P("%s%%v%d = %s", i ? ", " : "", acc0 + i, t->zero);
  P(") -> (");
  for (int i = 0; i < n; ++i)
    P("%s%s", i ? ", " : "", t->vt);
  P(") {\n");
  int bv[kMaxCols];
  for (int c = 0; c < cols; ++c) {
    bv[c] = fresh(g);
    P("%%v%d = vector.load %s[%s%s, %%v%d] : %s, %s\n", bv[c], t->b, bp, t->iv, cidx[c], t->bType,
      t->vt);
  }
  int out0 = g->next;
  g->next += n;
  for (int r = 0; r < rows; ++r) {
    int a = fresh(g), ab = fresh(g);
    if (t->aIsQ)
      P("%%v%d = memref.load %s[%s%%r%d, %s] : %s\n", a, t->a, bp, row0 + r, t->iv, t->aType);
    else
      P("%%v%d = memref.load %s[%%c%d, %s] : %s\n", a, t->a, row0 + r, t->iv, t->aType);
    P("%%v%d = vector.broadcast %%v%d : f32 to %s\n", ab, a, t->vt);
    for (int c = 0; c < cols; ++c)
      P("%%v%d = vector.fma %%v%d, %%v%d, %%v%d : %s\n", out0 + r * cols + c, ab, bv[c],
        acc0 + r * cols + c, t->vt);
  }
  P("scf.yield ");
  for (int i = 0; i < n; ++i)
    P("%s%%v%d", i ? ", " : "", out0 + i);
  P(" : ");
  for (int i = 0; i < n; ++i)
    P("%s%s", i ? ", " : "", t->vt);
  P("\n}\n");
  return res;
}

/* Scores of rows x cols vectors from key column `col` (an index value):
 * the register tile over the head dim, then the score nests, stored into
 * the row buffer %s. `tailLanes`: lanes of the last vector in bounds (0:
 * all). */
static void emitScoreTile(Gen *g, int row0, int rows, int cols, const char *col, int tailLanes) {
  int cidx[kMaxCols];
  for (int c = 0; c < cols; ++c)
    cidx[c] = idxAdd(g, col, (long long)c * g->w);
  TileLoop t = {"%d", "%cD", "%zero", g->vf, "%kt", g->pack ? "!ktp" : "!kt", "%q", "!q", true};
  int res = emitTileLoop(g, &t, row0, rows, cols, cidx);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      char row[16], cc[16];
      snprintf(row, sizeof row, "%%r%d", row0 + r);
      snprintf(cc, sizeof cc, "%%v%d", cidx[c]);
      int out = emitScoreNests(g, res + r * cols + c, row, cc, c == cols - 1 ? tailLanes : 0);
      P("vector.store %%v%d, %%s[%%c%d, %s] : !s, %s\n", out, row0 + r, cc, g->vf);
    }
}

/* Row r's softmax on %s: max, exp(x - max) in place, sum; the sum's
 * reciprocal in %inv<r>. */
static void emitRowSoftmax(Gen *g, int r) {
  const PbcAttentionChain *at = g->at;
  const char *vf = g->vf;
  const char *mx = at->maxNum ? "maxnumf" : "maximumf";
  int mv = fresh(g), x = fresh(g), m2 = fresh(g), mred = fresh(g), mb = fresh(g);
  P("%%v%d = scf.for %%j = %%c0 to %%cNp step %%cW iter_args(%%a = %%minit) -> (%s) {\n", mv,
    vf);
  P("%%v%d = vector.load %%s[%%c%d, %%j] : !s, %s\n", x, r, vf);
  P("%%v%d = arith.%s %%v%d, %%a : %s\nscf.yield %%v%d : %s\n}\n", m2, mx, x, vf, m2, vf);
  P("%%v%d = vector.reduction <%s>, %%v%d : %s into f32\n", mred, mx, mv, vf);
  P("%%v%d = vector.broadcast %%v%d : f32 to %s\n", mb, mred, vf);
  int lv = fresh(g), y = fresh(g), dlt = fresh(g), ex = fresh(g), l2 = fresh(g), lred = fresh(g);
  P("%%v%d = scf.for %%j = %%c0 to %%cNp step %%cW iter_args(%%a = %%zero) -> (%s) {\n", lv, vf);
  P("%%v%d = vector.load %%s[%%c%d, %%j] : !s, %s\n", y, r, vf);
  P("%%v%d = arith.subf %%v%d, %%v%d : %s\n", dlt, y, mb, vf);
  P("%%v%d = math.exp %%v%d : %s\n", ex, dlt, vf);
  P("vector.store %%v%d, %%s[%%c%d, %%j] : !s, %s\n", ex, r, vf);
  P("%%v%d = arith.addf %%a, %%v%d : %s\nscf.yield %%v%d : %s\n}\n", l2, ex, vf, l2, vf);
  P("%%v%d = vector.reduction <add>, %%v%d : %s into f32\n", lred, lv, vf);
  P("%%inv%d = arith.divf %%one, %%v%d : f32\n", r, lred);
}

/* O's rows += P V for V columns [col, col + cols * wv), then scaled by the
 * rows' reciprocal sums (and O's start added) and stored. */
static void emitPvTile(Gen *g, int row0, int rows, int cols, long long col) {
  const char *bp = g->at->batched ? "%b, " : "";
  const char *vv = g->vv;
  int cidx[kMaxCols];
  for (int c = 0; c < cols; ++c)
    cidx[c] = idxConst(g, col + (long long)c * g->wv);
  TileLoop t = {"%j", "%cN", "%zv", vv, "%v", "!v", "%s", "!s", false};
  int res = emitTileLoop(g, &t, row0, rows, cols, cidx);
  for (int r = 0; r < rows; ++r) {
    int ib = fresh(g);
    P("%%v%d = vector.broadcast %%inv%d : f32 to %s\n", ib, row0 + r, vv);
    for (int c = 0; c < cols; ++c) {
      int o = fresh(g);
      P("%%v%d = arith.mulf %%v%d, %%v%d : %s\n", o, res + r * cols + c, ib, vv);
      if (!g->oZero) {
        int o2 = fresh(g);
        P("%%v%d = arith.addf %%v%d, %%oib : %s\n", o2, o, vv);
        o = o2;
      }
      P("vector.store %%v%d, %%o[%s%%r%d, %%v%d] : !o, %s\n", o, bp, row0 + r, cidx[c], vv);
    }
  }
}

/* `rows` query rows from %i0 (g->rows * g->sub at most), in register
 * tiles of g->rows: each tile of keys of Kᵀ is read from L1 by all of
 * them. */
static void emitBlock(Gen *g, int rows) {
  const PbcAttentionChain *at = g->at;
  for (int r = 0; r < rows; ++r)
    P("%%r%d = arith.addi %%i0, %%c%d : index\n", r, r);
  /* Scores: whole tiles of cq vectors, then what remains of the keys. */
  long long tile = (long long)g->cq * g->w, whole = at->n / tile;
  if (whole > 0) {
    int ub = idxConst(g, whole * tile), st = idxConst(g, tile);
    P("scf.for %%jt = %%c0 to %%v%d step %%v%d {\n", ub, st);
    for (int r0 = 0; r0 < rows; r0 += g->rows)
      emitScoreTile(g, r0, rows - r0 < g->rows ? rows - r0 : g->rows, g->cq, "%jt", 0);
    P("}\n");
  }
  long long rest = at->n - whole * tile;
  if (rest > 0) {
    int cols = (int)((rest + g->w - 1) / g->w);
    char col[24];
    snprintf(col, sizeof col, "%%v%d", idxConst(g, whole * tile));
    for (int r0 = 0; r0 < rows; r0 += g->rows)
      emitScoreTile(g, r0, rows - r0 < g->rows ? rows - r0 : g->rows, cols, col,
                    (int)(rest % g->w));
  }
  for (int r = 0; r < rows; ++r)
    emitRowSoftmax(g, r);
  long long vtile = (long long)g->cg * g->wv;
  for (int r0 = 0; r0 < rows; r0 += g->rows)
    for (long long c = 0; c < at->dv; c += vtile) {
      long long left = at->dv - c;
      emitPvTile(g, r0, rows - r0 < g->rows ? rows - r0 : g->rows,
                 (int)(left < vtile ? left / g->wv : g->cg), c);
    }
}

/* Lanes for V's columns: the score lanes, halved until they divide Dv. */
static int pvLanes(int w, long long dv) {
  while (w > 1 && dv % w)
    w /= 2;
  return w;
}

/* An f32 literal MLIR parses: NaN and infinities as bit patterns. */
static void floatLiteral(double v, char *out, size_t len) {
  if (isnan(v))
    snprintf(out, len, "0x7FC00000");
  else if (isinf(v))
    snprintf(out, len, v > 0 ? "0x7F800000" : "0xFF800000");
  else
    snprintf(out, len, "%.9e", v);
}

/* The kernel as a function of q, k, v, o, O's start and the extras. */
static bool emitKernel(Gen *g, PbcStrBuf *s) {
  const PbcAttentionChain *at = g->at;
  int block = g->rows * g->sub;
  long long nb = (at->m + block - 1) / block;
  PbcStrBuf body = {0};
  g->s = &body;
  P("%%c0 = arith.constant 0 : index\n%%c1 = arith.constant 1 : index\n");
  for (int r = 2; r < block; ++r)
    P("%%c%d = arith.constant %d : index\n", r, r);
  P("%%cD = arith.constant %lld : index\n%%cN = arith.constant %lld : index\n", at->d, at->n);
  P("%%cNp = arith.constant %lld : index\n%%cW = arith.constant %d : index\n", g->np, g->w);
  P("%%zero = arith.constant dense<0.0> : %s\n", g->vf);
  P("%%zv = arith.constant dense<0.0> : %s\n", g->vv);
  P("%%ninf = arith.constant dense<0xFF800000> : %s\n", g->vf);
  char lit[32];
  floatLiteral(at->maxInit, lit, sizeof lit);
  P("%%minit = arith.constant dense<%s> : %s\n", lit, g->vf);
  P("%%one = arith.constant 1.0 : f32\n%%lanes = arith.constant dense<[");
  for (int l = 0; l < g->w; ++l)
    P("%s%d", l ? ", " : "", l);
  P("]> : %s\n", g->vi);
  P("%%oib = vector.broadcast %%oi : f32 to %s\n", g->vv);
  if (g->pack) {
    /* Kᵀ padded: zero keys, then the transposing copy. */
    const char *pb = at->batched ? "%pb, " : "";
    P("%%kt = memref.alloc() {alignment = 64 : i64} : !ktp\n%%zs = arith.constant 0.0 : f32\n");
    if (g->np > at->n) {
      if (at->batched)
        P("affine.for %%pb = 0 to %lld {\n", at->batch);
      P("affine.for %%pd = 0 to %lld {\naffine.for %%pj = 0 to %lld {\n", at->d, g->np - at->n);
      P("%%pk = affine.apply affine_map<(j) -> (j + %lld)>(%%pj)\n", at->n);
      P("affine.store %%zs, %%kt[%s%%pd, %%pk] : !ktp\n}\n}%s {" PBC_MARK_KIND " = \"pointwise\"}\n",
        pb, at->batched ? "\n}" : "");
    }
    if (at->batched)
      P("affine.for %%pb = 0 to %lld {\n", at->batch);
    P("affine.for %%pd = 0 to %lld {\naffine.for %%pj = 0 to %lld {\n", at->d, at->n);
    if (at->kRows)
      P("%%x = affine.load %%k[%s%%pj, %%pd] : !k\n", pb);
    else
      P("%%x = affine.load %%k[%s%%pd, %%pj] : !k\n", pb);
    P("affine.store %%x, %%kt[%s%%pd, %%pj] : !ktp\n}\n}%s {" PBC_MARK_KIND " = \"pointwise\"}\n",
      pb, at->batched ? "\n}" : "");
  } else {
    P("%%kt = memref.cast %%k : !k to !kt\n");
  }
  P("affine.for %%t = 0 to %lld {\n", at->batch * nb);
  P("%%b = affine.apply affine_map<(t) -> (t floordiv %lld)>(%%t)\n", nb);
  P("%%ib = affine.apply affine_map<(t) -> (t mod %lld)>(%%t)\n", nb);
  P("%%i0 = affine.apply affine_map<(t) -> ((t mod %lld) * %d)>(%%t)\n", nb, block);
  P("%%s = memref.alloc() {alignment = 64 : i64} : !s\n");
  int tailRows = (int)(at->m % block);
  if (tailRows == 0) {
    emitBlock(g, block);
  } else {
    int last = idxConst(g, nb - 1), full = fresh(g);
    P("%%v%d = arith.cmpi ult, %%ib, %%v%d : index\nscf.if %%v%d {\n", full, last, full);
    emitBlock(g, block);
    P("} else {\n");
    emitBlock(g, tailRows);
    P("}\n");
  }
  P("memref.dealloc %%s : !s\n} {" PBC_MARK_KIND " = \"attention\", " PBC_MARK_PARALLEL "}\n");
  if (g->pack)
    P("memref.dealloc %%kt : !ktp\n");
  P("return\n");

  /* Header: type aliases, the signature. */
  g->s = s;
  PbcStrBuf t = {0};
#define ALIAS(name, value)                                                                   \
  do {                                                                                       \
    pbcStrBufClear(&t);                                                                      \
    typeText(mlirValueGetType(value), &t);                                                   \
    P("!%s = %s\n", name, pbcStrBufGet(&t));                                                 \
  } while (0)
  ALIAS("q", at->q);
  ALIAS("k", at->k);
  ALIAS("v", at->v);
  ALIAS("o", at->o);
  pbcStrBufDestroy(&t);
  if (g->pack) {
    if (at->batched)
      P("!ktp = memref<%lldx%lldx%lldxf32>\n", at->batch, at->d, g->np);
    else
      P("!ktp = memref<%lldx%lldxf32>\n", at->d, g->np);
  } else {
    P("!kt = !k\n");
  }
  P("!s = memref<%dx%lldxf32>\n", block, g->np);
  P("func.func @kernel(%%q: !q, %%k: !k, %%v: !v, %%o: !o, %%oi: f32");
  for (int i = 0; i < g->ex.n; ++i) {
    P(", %%e%d: ", i);
    putType(g, g->ex.values[i]);
  }
  P(") {\n");
  for (int i = 0; i < g->ex.n; ++i)
    if (mlirTypeIsAF32(mlirValueGetType(g->ex.values[i])))
      P("%%eb%d = vector.broadcast %%e%d : f32 to %s\n", i, i, g->vf);
    else if (mlirTypeIsAIndex(mlirValueGetType(g->ex.values[i])))
      P("%%eb%d = vector.broadcast %%e%d : index to %s\n", i, i, g->vi);
  pbcStrBufPuts(s, pbcStrBufGet(&body));
  P("}\n");
  pbcStrBufDestroy(&body);
  return g->ok;
}
#undef P

/* The parsed kernel's body moved before `at`, its arguments replaced by
 * the values it computes with. */
static bool inlineKernel(MlirOperation at, const char *text, const MlirValue *args, int nArgs) {
  MlirContext ctx = mlirOperationGetContext(at);
  MlirModule mod = mlirModuleCreateParse(ctx, pbcStr(text));
  if (mlirModuleIsNull(mod))
    return false;
  MlirOperation func = mlirBlockGetFirstOperation(mlirModuleGetBody(mod));
  MlirBlock entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockGetNumArguments(entry) != nArgs) {
    mlirModuleDestroy(mod);
    return false;
  }
  for (int i = 0; i < nArgs; ++i)
    mlirValueReplaceAllUsesOfWith(mlirBlockGetArgument(entry, i), args[i]);
  for (MlirOperation op = mlirBlockGetFirstOperation(entry); !mlirOperationIsNull(op);) {
    MlirOperation next = mlirOperationGetNextInBlock(op);
    if (!pbcOpIsA(op, "func.return"))
      mlirOperationMoveBefore(op, at);
    op = next;
  }
  mlirModuleDestroy(mod);
  return true;
}

static void eraseChain(const PbcAttentionChain *at) {
  for (int i = 0; i < at->nNests; ++i)
    mlirOperationDestroy(at->nests[i]);
  mlirOperationDestroy(at->pv);
  for (int i = 0; i < at->nBuffers; ++i)
    pbcEraseWithUsers(mlirOpResultGetOwner(at->buffers[i]));
}

/* The outcome of one chain: fused; left as it was (the kernel cannot take
 * it: too many outside values, a predicate it does not know); or an
 * internal error (its text did not parse: a bug of this pass, reported at
 * the P V gemm rather than hidden as a missed fusion). */
typedef enum { kFused, kLeft, kBroken } Outcome;

static Outcome fuse(const State *st, const PbcAttentionChain *at) {
  Gen g = {.at = at, .ok = true};
  g.w = st->vectorBits / 32;
  g.w = g.w > 16 ? 16 : g.w < 1 ? 1 : g.w;
  g.wv = pvLanes(g.w, at->dv);
  g.np = (at->n + g.w - 1) / g.w * g.w;
  snprintf(g.vf, sizeof g.vf, "vector<%dxf32>", g.w);
  snprintf(g.vb, sizeof g.vb, "vector<%dxi1>", g.w);
  snprintf(g.vv, sizeof g.vv, "vector<%dxf32>", g.wv);
  snprintf(g.vi, sizeof g.vi, "vector<%dxindex>", g.w);
  /* Accumulator tiles leave 8 registers for operands and temporaries. Each
   * block streams all of K and V through L1 once per tile row set, so the
   * rows are as many as the tiles allow: P V's tile (up to 4 vectors of V's
   * row) sets them, Q Kᵀ's then takes the columns that fit. */
  int accs = st->vectorRegisters - 8;
  accs = accs < 1 ? 1 : accs;
  g.cg = (int)(at->dv / g.wv) < kMaxCols ? (int)(at->dv / g.wv) : kMaxCols;
  g.rows = accs / g.cg < 1 ? 1 : accs / g.cg > kMaxRows ? kMaxRows : accs / g.cg;
  g.cq = accs / g.rows < 1 ? 1 : accs / g.rows > kMaxCols ? kMaxCols : accs / g.rows;
  if (g.cq * g.w > g.np)
    g.cq = (int)(g.np / g.w);
  if (g.rows > at->m)
    g.rows = (int)at->m;
  /* Blocks of 2 register tiles of rows (each tile of Kᵀ read from L1 by
   * both; 4 measured no better), their row buffer within 128 KiB (L2),
   * and no more rows than the queries. */
  g.sub = 2;
  while (g.sub > 1 && ((long long)g.sub * g.rows * g.np * 4 > (128 << 10) ||
                       (long long)(g.sub - 1) * g.rows >= at->m))
    --g.sub;
  g.pack = at->kRows || at->n % g.w != 0;
  bool constant;
  double init = pbcChainFloatConstant(at->oInit, &constant);
  g.oZero = constant && init == 0.0 && !signbit(init);
  PbcStrBuf text = {0};
  if (!emitKernel(&g, &text)) {
    pbcStrBufDestroy(&text);
    return kLeft;
  }
  MlirValue args[5 + kMaxExtras] = {at->q, at->k, at->v, at->o, at->oInit};
  for (int i = 0; i < g.ex.n; ++i)
    args[5 + i] = g.ex.values[i];
  pbcChainMoveFreesAfter(at->nests, at->nNests, at->pv);
  bool parsed = inlineKernel(at->pv, pbcStrBufGet(&text), args, 5 + g.ex.n);
  pbcStrBufDestroy(&text);
  if (!parsed) {
    pbcEmitOpError(at->pv, "pbc-fuse-attention: internal error: its kernel did not parse");
    return kBroken;
  }
  eraseChain(at);
  return kFused;
}

static bool run(MlirOperation func, void *state) {
  const State *st = state;
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockIsNull(body))
    return true;
  PbcAttentionChain *at = calloc(1, sizeof *at);
  Outcome outcome = kLeft;
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op) && outcome != kBroken;) {
    MlirOperation next = mlirOperationGetNextInBlock(op);
    outcome = pbcOpIsA(op, "affine.for") && pbcMatchAttentionChain(op, at) ? fuse(st, at) : kLeft;
    if (outcome == kFused)
      next = mlirBlockGetFirstOperation(body); /* the chain's nests are gone */
    op = next;
  }
  free(at);
  return outcome != kBroken;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcFuseAttentionPass = {
    "pbc-fuse-attention",
    "func.func",
    "Attention chains (Q Kᵀ, softmax, P V) as one nest per block of query rows",
    run,
    sizeof(State),
    createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  enum { VECTOR_BITS, VECTOR_REGISTERS, NUM_OPTIONS };
  static const PbcCountOption kOptions[] = {[VECTOR_BITS] = {"vector-bits", 256},
                                            [VECTOR_REGISTERS] = {"vector-registers", 16},
                                            [NUM_OPTIONS] = {NULL, 0}};
  long long v[NUM_OPTIONS];
  if (!pbcPassCountOptions(options, kOptions, v, err, errLen))
    return (MlirPass){NULL};
  State st = {(int)v[VECTOR_BITS], (int)v[VECTOR_REGISTERS]};
  return pbcCPassCreate(&pbcFuseAttentionPass, &st);
}
