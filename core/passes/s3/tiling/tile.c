/* pbc-tile: the first phase of S3's two-phase tiling (PolyBlocks §4.3) for
 * key nests (pbc.kind = matmul: matmuls, batch matmuls, convolutions,
 * contractions). Roles come from the access analysis: the vector loop J
 * (contiguous in the output's last subscript), the register loop I (the
 * nearest parallel loop outside J that the output uses and J's vector
 * operand does not: moved next to J), and the reduction loops R after J.
 *  - Register tile: MR iterations of I x NV vectors of J, chosen by a cost
 *    model (FMAs per load: MR*NV / (MR+NV), within the chip's vector
 *    registers, dividing the trip counts so every tile is full; a
 *    convolution whose I has no good divisor is split into full tiles and a
 *    remainder nest).
 *  - Cache tiles for GEMM-shaped nests (one reduction loop): KC so a B
 *    micro-panel (KC x NR) fills up to a quarter of L2 (512 rows where that
 *    would be over 1024), MC so the A block
 *    (MC x KC) fits the rest in blocks the cores split evenly, NC so the B
 *    block (KC x NC) fits half of L3; loop order jc, kc, ic, jr, ir
 *    (BLIS), point loops i, j, k. With more columns than rows and all of
 *    A within half of L2, the cores split jc instead, with KC sized for L1
 *    and NC for L2 (jcSplit).
 * Loops are marked for the later passes: pbc.register_tile = size on I and
 * J (pbc-register-tile; split after packing, so the copied regions are
 * exact), pbc.vectorize on J, pbc.pack_site on the cache tile loops
 * (pbc-pack), pbc.parallel on loops that were parallel before tiling
 * (pbc-parallelize: packing adds buffers private to each iteration, which the
 * dependence test can't see through). */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "pbc-ext/affine.h"
#include "pbc/affine_access.h"
#include "analysis/nest_work.h"
#include "pbc/c_pass.h"
#include "pbc/marks.h"
#include "passes/s3/vectorization/interleave.h"
#include "pbc/ir_build.h"
#include "pbc/op_list.h"
#include "passes/passes.h"
#include "passes/s3/tiling/skinny_gemm.h"
#include "passes/s3/tiling/split_gemv.h"
#include "passes/s3/tiling/transpose_input.h"

typedef struct {
  int vectorBits, vectorRegisters, cores;
  long long l1, l2, l3;
} State;

typedef struct {
  MlirOperation band[PBC_MAX_BAND];
  long long trip[PBC_MAX_BAND];
  bool parallel[PBC_MAX_BAND];
  int n, I, J; /* indices in band; I = -1 if none */
  int lanes, elemBytes;
  bool gemm;           /* band ends with I, J, K */
  bool depthwise;      /* an input varies along I and J (chooseDepthwiseTile) */
  long long reduction; /* iterations of the reduction loops after J */
  /* Inputs read across J, to be packed or copied transposed. */
  PbcAccess transpose[4];
  int transposeDim[4], nTranspose;
  bool transposeShared[4]; /* the nest reads that memref through another access too */
} Nest;


typedef struct {
  PbcAccess acc[64];
  int n;
} Accs;

/* pbcExtAffinePermute on band[0..n), then the root's pbc.kind moves to the
 * new outermost loop. */
static bool permuteBand(MlirOperation *band, int n, const unsigned *perm) {
  MlirAttribute kind = mlirOperationGetAttributeByName(band[0], pbcStr(PBC_MARK_KIND));
  MlirOperation oldRoot = band[0];
  if (!pbcExtAffinePermute(band, n, perm))
    return false;
  mlirOperationRemoveAttributeByName(oldRoot, pbcStr(PBC_MARK_KIND));
  if (!mlirAttributeIsNull(kind))
    mlirOperationSetAttributeByName(pbcRootOf(oldRoot), pbcStr(PBC_MARK_KIND), kind);
  return true;
}

/* [iT jT kT] -> [jT kT iT] on the tile loops of a GEMM's I and J (both
 * parallel) and K: legal by construction, since a dependence between
 * iterations of equal outer loops has equal i and j. MLIR's check (every
 * pairwise dependence at every depth) agrees on a band that is the nest's
 * root; below other loops it measures depths from the root instead, so
 * there it still decides. */
static void permuteGemmTiles(MlirOperation *t) {
  unsigned perm[3] = {2, 0, 1};
  if (mlirOperationEqual(pbcRootOf(t[0]), t[0]))
    pbcExtAffinePermuteLegal(t, 3, perm);
  else
    pbcExtAffinePermute(t, 3, perm);
}

/* Whether some input that varies along J (the operand a register tile
 * loads as vectors; not the output's own reads) also varies along `loop`. */
static bool jOperandVariesAlong(const Accs *a, const PbcAccess *out, MlirOperation j,
                                MlirOperation loop) {
  for (int i = 0; i < a->n; ++i)
    if (!mlirValueEqual(a->acc[i].memref, out->memref) &&
        pbcAccessStrideAlong(&a->acc[i], j) != PBC_STRIDE_INVARIANT &&
        pbcAccessStrideAlong(&a->acc[i], loop) != PBC_STRIDE_INVARIANT)
      return true;
  return false;
}

/* A register tile's rows must reuse the J operand's vectors, so I must be a
 * loop that operand does not vary along. The parallel loops between the
 * nearest such I and J move to the front of the band. A grouped convolution
 * in NHWGC form (n, h, w, g, f, kh, kw, c) has the group loop, which the
 * filter varies with, just outside J: moved out, each group is an implicit
 * GEMM with I = w. In NCHW
 * (n, f, oh, ow, c, kh, kw) the input, read along ow, varies with oh: f
 * becomes I and the filter is broadcast.
 * All moved loops are parallel, so the permutation is legal;
 * pbcExtAffinePermute checks it anyway. Returns whether the band changed,
 * and the permutation of band[0..J) in perm. */
static bool hoistGroupLoops(const Nest *n, const Accs *a, const PbcAccess *out, unsigned *perm) {
  int J = n->J, I = -1;
  for (int l = 0; l < J; ++l)
    if (!n->parallel[l])
      return false;
  for (int l = J - 1; l >= 0 && I < 0; --l)
    if (pbcAccessStrideAlong(out, n->band[l]) != PBC_STRIDE_INVARIANT &&
        !jOperandVariesAlong(a, out, n->band[J], n->band[l]))
      I = l;
  if (I < 0 || I == J - 1)
    return false;
  for (int l = 0; l < J; ++l)
    perm[l] = l > I ? (unsigned)(l - I - 1) : (unsigned)(l + J - I - 1);
  MlirOperation band[PBC_MAX_BAND];
  memcpy(band, n->band, sizeof(band));
  return permuteBand(band, J, perm);
}

/* Puts band[0..n) (in its order before `perm` was applied) back. */
static void unpermuteBand(const MlirOperation *band, int n, const unsigned *perm) {
  MlirOperation now[PBC_MAX_BAND];
  unsigned back[PBC_MAX_BAND];
  for (int l = 0; l < n; ++l) {
    now[perm[l]] = band[l];
    back[perm[l]] = (unsigned)l;
  }
  permuteBand(now, n, back);
}

/* Finds the roles of the band's loops; false if the nest isn't one we tile. */
static bool analyzeNest(MlirOperation *root, const State *st, Nest *n) {
  memset(n, 0, sizeof(*n));
  n->n = pbcLoopBand(*root, n->band, PBC_MAX_BAND);
  if (n->n < 2)
    return false;
  for (int l = 0; l < n->n; ++l) {
    n->trip[l] = pbcExtAffineConstantTripCount(n->band[l]);
    if (n->trip[l] <= 0 || pbcLoopStep(n->band[l]) != 1)
      return false;
    n->parallel[l] = pbcLoopIsParallel(n->band[l]);
  }
  Accs a;
  bool complete = pbcGatherAccesses(n->band[n->n - 1], a.acc, 64, &a.n);
  int out = -1;
  for (int i = 0; i < a.n; ++i)
    if (a.acc[i].isWrite) {
      if (out >= 0)
        return false; /* one output per key nest */
      out = i;
    }
  if (!complete || out < 0)
    return false;
  const PbcAccess *o = &a.acc[out];
  /* J: the innermost parallel loop contiguous in the output. */
  n->J = -1;
  for (int l = 0; l < n->n; ++l)
    if (n->parallel[l] && pbcAccessStrideAlong(o, n->band[l]) == PBC_STRIDE_CONTIGUOUS)
      n->J = l;
  if (n->J < 0)
    return false;
  /* Everything after J must be a reduction loop (not in the output). */
  for (int l = n->J + 1; l < n->n; ++l)
    if (pbcAccessStrideAlong(o, n->band[l]) != PBC_STRIDE_INVARIANT)
      return false;
  /* A depthwise stencil over fewer channels than a vector's lanes (J = c)
   * vectorizes across (w, c) pairs in pbc-interleave, in whole vectors
   * instead of c's 2, 4 or 8 lanes. */
  if (n->J > 0 && pbcInterleaveApplies(n->band[n->J - 1], st->vectorBits))
    return false;
  unsigned perm[PBC_MAX_BAND];
  if (hoistGroupLoops(n, &a, o, perm)) {
    /* A nest tiled after all gets the new order; else the old one back. */
    MlirOperation band[PBC_MAX_BAND];
    int J = n->J;
    memcpy(band, n->band, sizeof(band));
    *root = pbcRootOf(n->band[J]);
    if (analyzeNest(root, st, n))
      return true;
    unpermuteBand(band, J, perm);
    *root = band[0];
    return false;
  }
  /* Every access must be contiguous or invariant along J (vectorizable), or
   * an input that a transposed copy makes so (a GEMM's B read as Bᵀ). */
  int bits = 0;
  for (int i = 0; i < a.n; ++i) {
    if (pbcAccessStrideAlong(&a.acc[i], n->band[n->J]) == PBC_STRIDE_OTHER) {
      int dim = pbcTransposableDim(&a.acc[i], *root, n->band[n->J]);
      bool written = false, shared = false;
      for (int w = 0; w < a.n; ++w)
        if (w != i && pbcMemrefsMayAlias(a.acc[w].memref, a.acc[i].memref)) {
          written |= a.acc[w].isWrite;
          shared = true;
        }
      if (dim < 0 || written || n->nTranspose == 4)
        return false;
      n->transpose[n->nTranspose] = a.acc[i];
      n->transposeShared[n->nTranspose] = shared;
      n->transposeDim[n->nTranspose++] = dim;
    }
    int b = pbcElementBits(mlirValueGetType(a.acc[i].memref));
    bits = b > bits ? b : bits;
  }
  if (bits < 8)
    return false;
  n->lanes = pbcVectorLanes(st->vectorBits, bits, n->trip[n->J]);
  n->reduction = 1;
  for (int l = n->J + 1; l < n->n; ++l)
    n->reduction *= n->trip[l];
  n->elemBytes = bits / 8;
  n->I = -1;
  if (n->J > 0 && n->parallel[n->J - 1] &&
      pbcAccessStrideAlong(o, n->band[n->J - 1]) != PBC_STRIDE_INVARIANT)
    n->I = n->J - 1;
  n->gemm = n->I >= 0 && n->J == n->n - 2;
  for (int i = 0; i < a.n && n->I >= 0; ++i)
    n->depthwise |= !a.acc[i].isWrite && !pbcMemrefsMayAlias(a.acc[i].memref, o->memref) &&
                    pbcAccessStrideAlong(&a.acc[i], n->band[n->J]) == PBC_STRIDE_CONTIGUOUS &&
                    pbcAccessStrideAlong(&a.acc[i], n->band[n->I]) != PBC_STRIDE_INVARIANT;
  /* The copy pays off when packing makes it a GEMM's panel, or when every
   * row of I rereads the whole input (a convolution's filter). */
  for (int t = 0; t < n->nTranspose; ++t)
    if (!n->gemm &&
        (n->I < 0 || pbcAccessStrideAlong(&n->transpose[t], n->band[n->I]) != PBC_STRIDE_INVARIANT))
      return false;
  /* A skinny GEMM reading B along K vectorizes K, not J (tileSkinnyGemm). */
  return n->lanes > 1 || (n->gemm && n->nTranspose &&
                          pbcSkinnyDotRowTile(n->trip[n->I], n->trip[n->n - 1],
                                              n->trip[n->J] * n->trip[n->n - 1] * (bits / 8),
                                              st->vectorBits, bits, 0, st->l3));
}

/* The register tile's cost model: FMAs per load of an m x v tile. Each step
 * of the reduction loop does m*v FMAs for m broadcasts and v vector loads
 * of J's operand. A GEMM's NR-wide panel streams from L2 (KC fills L2) but
 * contiguously, as packed panels: its loads count once. A convolution's
 * reduction (kh*kw*c) is not blocked or packed that way, so when its panel
 * exceeds L1 those v loads stream from L2 at a stride and count double:
 * taller tiles win there. */
static double tileScore(const Nest *n, const State *st, int m, int v) {
  long long panelBytes = n->reduction * v * n->lanes * n->elemBytes;
  double jLoadCost = !n->gemm && panelBytes > st->l1 ? 2.0 : 1.0;
  return (double)(m * v) / (m + jLoadCost * v) + 1e-3 * m * v;
}

/* m*v accumulators, v loaded vectors and one broadcast in registers. */
static bool tileFits(const State *st, int m, int v) { return m * v + v + 1 <= st->vectorRegisters; }

/* Partial tiles (PolyBlocks §4.3): when I's trip count has no divisor near
 * the best tile height (a 29-wide convolution output: only 1 and 29), the
 * nest is split along I into full tiles of the best height and a remainder
 * nest, which gets a tile as tall as the remainder. Returns where to split
 * I, or 0 to keep the nest whole. Time per row of I is taken as
 * inversely proportional to the tile's FMAs per load. Convolutions only:
 * pbc-pad-gemm gives GEMMs full tiles by padding. */
static long long partialTileSplit(const Nest *n, const State *st, int mr, int nv) {
  /* The split restricts I from 0 (pbcLoopRestrict): I must start there. */
  if (n->I < 0 || n->gemm || pbcLoopZeroBasedTrip(n->band[n->I]) <= 0)
    return 0;
  long long trip = n->trip[n->I];
  /* A divisor from 4 up keeps the nest whole (as in pbc-pad-gemm): a
   * second nest costs a parallel region and a thin remainder tile. */
  if (pbcHasDivisorIn(trip, 4, 16))
    return 0;
  int bestM = mr;
  double current = tileScore(n, st, mr, nv), best = current;
  for (int m = mr + 1; m <= 16 && m < trip; ++m) {
    double score = tileFits(st, m, nv) ? tileScore(n, st, m, nv) : 0;
    if (score > best) {
      best = score;
      bestM = m;
    }
  }
  long long rest = trip % bestM;
  if (bestM == mr || rest == 0)
    return 0;
  double whole = trip / current;
  double split = (trip - rest) / best + rest / tileScore(n, st, (int)rest, nv);
  return split < 0.9 * whole ? trip - rest : 0;
}

/* KC for a K too long for one block (see tileNest's cache tiles). */
enum { kMaxKc = 512 };
/* The shortest KC sized for L1 (jcSplit); a K with no divisor from here up
 * to the L1 bound keeps the L2-sized KC (a C block re-read per short step
 * costs more than the panel's L2 traffic saves). */
enum { kMinKcL1 = 64 };

/* Largest multiple of `unit` that divides `trip` and is <= bound (`unit`
 * itself if none is). */
static long long divisorTile(long long trip, long long unit, long long bound) {
  long long best = unit;
  for (long long t = unit; t <= trip && t <= bound; t += unit)
    if (trip % t == 0)
      best = t;
  return best;
}

/* MC: the GEMM's row blocks are the parallel work, so their count should
 * split evenly over the cores. Among the multiples of mr dividing the rows,
 * up to `bound`, the one with the least time on the busiest core:
 * ceil(blocks / cores) blocks, each mc rows of compute plus one stream of
 * the B block from L3, which costs about kBlockStreamRows rows (Zen 5, per
 * core: 64 f32 flops and 32 bytes from L3 per cycle; a row of the A block
 * does 2 flops per 4-byte element of B). 1000^3: 5 blocks of 200 rows on 2
 * cores (0.82-0.84x oneDNN) -> 25 of 40 (0.94-0.99x, paired); where the largest
 * block already splits evenly, it is the one chosen. */
enum { kBlockStreamRows = 4 };

static long long balancedRowBlock(long long trip, long long unit, long long bound, int cores) {
  long long best = unit, bestCost = -1;
  for (long long t = unit; t <= trip && t <= bound; t += unit) {
    if (trip % t)
      continue;
    long long perCore = (trip / t + cores - 1) / cores;
    long long cost = perCore * (t + kBlockStreamRows);
    if (bestCost < 0 || cost <= bestCost) {
      best = t;
      bestCost = cost;
    }
  }
  return best;
}

/* The cache blocks of a GEMM with an mr x nr register tile: KC, MC, NC,
 * and whether the cores split the columns (jcSplit) instead of the rows. */
typedef struct {
  long long kc, mc, nc;
  bool jcSplit;
} GemmBlocks;

static GemmBlocks gemmBlocks(const Nest *n, const State *st, int mr, int nr) {
  int I = n->I, J = n->J, K = n->n - 1;
  long long eb = n->elemBytes;
  long long kc = divisorTile(n->trip[K], 1, (st->l2 / 4) / (nr * eb));
  if (kc > 2 * kMaxKc)
    kc = divisorTile(n->trip[K], 1, kMaxKc);
  long long mcBound = (st->l2 - kc * nr * eb) / (kc * eb);
  if (n->trip[I] >= (long long)mr * st->cores)
    mcBound = mcBound < n->trip[I] / st->cores ? mcBound : n->trip[I] / st->cores;
  long long mc = balancedRowBlock(n->trip[I], mr, mcBound, st->cores);
  /* NC: B's block, shared by the cores from L3, fills up to half of it.
   * A quarter split 512x3072x768's N in two, and the cores took a half
   * each, every core then reading all of A; in one block they split the
   * rows and share B's panels (1.10 -> 1.04 pbc/oneDNN time, paired). */
  long long nc = divisorTile(n->trip[J], nr, (st->l3 / 2) / (kc * eb));
  /* Few rows, more columns (a transformer's GEMMs at 128-512 tokens,
   * M x K x N = 128 x 768 x 3072; a 1x1 convolution at 7 x 7 pixels, 49
   * rows): every core would read all of B (each row block streams it from
   * L3), which is larger than A. Where all of A fits in half of L2, the
   * cores split the columns instead (jcSplit): each packs only its own B
   * blocks, sized to stay in its L2 beside the A block, and reuses each
   * over all of A's rows, which every core reads from its L2. (At 512
   * rows A is re-read from L3 once per column block: more than B.) */
  bool jcSplit = n->parallel[J] && n->trip[J] > n->trip[I] && n->trip[J] / nr >= st->cores &&
                 n->trip[I] * n->trip[K] * eb <= st->l2 / 2;
  if (jcSplit) {
    /* All of the core's output block (M x NC) stays in L2 across the KC
     * steps, so KC can shrink until the B micro-panel (KC x NR) fits in
     * L1 and serves every row tile from there, not from L2 (one vector
     * of B per FMA row: more than L2 delivers). */
    long long kcL1 = divisorTile(n->trip[K], 1, st->l1 / (nr * eb));
    if (kcL1 >= kMinKcL1)
      kc = kcL1;
    mc = divisorTile(n->trip[I], mr, (st->l2 / 4) / (kc * eb));
    /* B's block and the output rows it updates, beside A's block, in
     * blocks the cores split evenly (balancedRowBlock's cost, with
     * columns for rows: each block streams A once). */
    long long ncBound = (st->l2 * 3 / 4 - mc * kc * eb) / ((kc + n->trip[I]) * eb);
    if (ncBound > n->trip[J] / st->cores)
      ncBound = n->trip[J] / st->cores;
    nc = balancedRowBlock(n->trip[J], nr, ncBound, st->cores);
  }
  return (GemmBlocks){kc, mc, nc, jcSplit};
}

/* The share of the cores' time spent working on a GEMM's parallel blocks
 * (row blocks, or column blocks under jcSplit). */
static double gemmBalance(const Nest *n, const State *st, int mr, int nr) {
  GemmBlocks b = gemmBlocks(n, st, mr, nr);
  long long blocks = b.jcSplit ? n->trip[n->J] / b.nc : n->parallel[n->I] ? n->trip[n->I] / b.mc : 0;
  return pbcStaticSplitBusyShare(blocks, st->cores);
}

/* A depthwise convolution (an input read along both I and J, one vector
 * per FMA) reuses nothing across J: a tile one vector wide, as many pixels
 * tall as registers hold beside the input vectors a row of the innermost
 * window loop slides over (m + kw - 1) and its kw filter vectors (3x3 over
 * 144 channels at 56 x 56: 8 x 3 tiles 0.072 ms, 8 x 1 0.055, 14 x 1 0.054;
 * the wide tile's accumulators and window spilled). */
static void chooseDepthwiseTile(const Nest *n, const State *st, int *mr, int *nv) {
  long long window = n->trip[n->n - 1];
  *mr = 1;
  *nv = n->trip[n->J] % n->lanes ? 0 : 1;
  for (int m = 1; m <= 16; ++m)
    if (n->trip[n->I] % m == 0 && 2 * m + 2 * window - 1 <= st->vectorRegisters)
      *mr = m;
}

/* Register tile: the best score among full tiles (dividing the trips). A
 * GEMM's score is scaled by gemmBalance: once a tile's FMAs outnumber its
 * loads the FMA pipes bound its speed whatever its shape, but blocks that
 * do not split evenly idle a core (196 rows: 4 x 4 tiles gave 7 row blocks
 * of 28; 14 x 2 tiles give 2 of 98). */
static void chooseRegisterTile(const Nest *n, const State *st, int *mr, int *nv) {
  if (n->depthwise) {
    chooseDepthwiseTile(n, st, mr, nv);
    return;
  }
  double best = -1;
  *mr = 1;
  *nv = 0;
  long long tripI = n->I >= 0 ? n->trip[n->I] : 1;
  for (int v = 1; v <= 4; ++v) {
    if (n->trip[n->J] % ((long long)v * n->lanes))
      continue;
    for (int m = 1; m <= 16; ++m) {
      if (tripI % m || !tileFits(st, m, v))
        continue;
      double score = tileScore(n, st, m, v);
      if (n->gemm)
        score *= gemmBalance(n, st, m, v * n->lanes);
      if (score > best) {
        best = score;
        *mr = m;
        *nv = v;
      }
    }
  }
}


/* Addresses a multiple of this apart fall in the same L1 set (the way size
 * of 32-48 KiB L1s); the smallest L1 associativity among the chips. */
enum { kSetGroupBytes = 4096, kL1Ways = 8 };

/* A convolution's register tile reads mr input pixels at every step of its
 * reduction. Pixels a multiple of 4 KiB apart (1024 or more f32 channels)
 * all fall in one L1 set group, 2 KiB apart in two, and so on; more rows per
 * group than L1 has ways evict each other at every step (1x1 convolution
 * 1024 -> 256 at 14 x 14, tiles of 14 pixels: 175 GFLOP/s, 218 with 1040
 * channels; 7 pixels per group ran as fast either way). Then the input rows
 * an output row reads are copied once per output row: a pack site on the
 * loop around I (pbc-pack pads the copy's rows), whose copy every J panel
 * reads. */
static void packCrowdedInputRows(const Nest *n, int mr) {
  if (n->I <= 0)
    return;
  MlirOperation iLoop = n->band[n->I];
  Accs a;
  if (!pbcGatherAccesses(iLoop, a.acc, 64, &a.n))
    return;
  for (int i = 0; i < a.n; ++i) {
    long long stride = a.acc[i].isWrite ? -1 : pbcAccessByteStrideAlong(&a.acc[i], iLoop);
    if (stride <= 0 || !pbcRowsCrowdCacheSets(stride))
      continue;
    long long low = stride & -stride;
    long long groups = low >= kSetGroupBytes ? 1 : kSetGroupBytes / low;
    if ((mr + groups - 1) / groups > kL1Ways) {
      pbcOpSetUnitAttr(n->band[n->I - 1], PBC_MARK_PACK_SITE);
      return;
    }
  }
}

/* Convolution-shaped nests (several reduction loops after J, e.g. kh, kw, c):
 * every output pixel reads the whole weight block of its J range. Tile J by
 * NC so one block (reduction size x NC) stays in half of L2, and run the NC
 * tiles outermost: each block is read from memory once and reused, from L2,
 * by every pixel (a deep layer's 2-9 MB of weights otherwise stream from L3
 * once per pixel row). The tile loop is parallel if J was, and a pack site:
 * the block is copied into a buffer whose rows are NC wide, so the micro
 * kernel reads it sequentially instead of one cache line per input channel
 * at a stride of the full channel count (which also aliases in L1).
 * When one block holds all of J, it is still copied if its rows alias: rows
 * a multiple of 256 bytes apart (pbcRowsCrowdCacheSets), wider than the NR-wide panel
 * the micro kernel reads, put every step of the reduction into the same few
 * L1 sets (1x1 conv 64->256: 1 KiB rows, 0.78x -> 0.88x oneDNN). The copy
 * runs once per call, |W| against |W| x pixels of work. */
static void tileOutputChannels(Nest *n, const State *st, int nr, bool jParallel,
                               MlirOperation *jLoop) {
  long long blockBytes = n->reduction * n->elemBytes;
  long long nc = divisorTile(n->trip[n->J], nr, (st->l2 / 2) / blockBytes);
  /* Blocks of J, when it needs them, are the cores' work if J is parallel:
   * as many per core (320 channels in panels of 32, at most 4 to a block:
   * 10 blocks of 32, not 5 of 64, three of them on one core). */
  if (nc < n->trip[n->J] && jParallel)
    nc = balancedRowBlock(n->trip[n->J], nr, (st->l2 / 2) / blockBytes, st->cores);
  long long rowBytes = n->trip[n->J] * n->elemBytes;
  bool rowsAlias = pbcRowsCrowdCacheSets(rowBytes) && rowBytes > (long long)nr * n->elemBytes;
  if (nc >= n->trip[n->J] && !rowsAlias)
    return;
  unsigned size = (unsigned)nc;
  MlirOperation t[2];
  if (!pbcExtAffineTile(&n->band[n->J], 1, &size, t))
    return;
  /* [outer..., jT, j, reductions] -> [jT, outer..., j, reductions] */
  MlirOperation outer[PBC_MAX_BAND];
  unsigned perm[PBC_MAX_BAND];
  for (int l = 0; l < n->J; ++l) {
    outer[l] = n->band[l];
    perm[l] = (unsigned)l + 1;
  }
  outer[n->J] = t[0];
  perm[n->J] = 0;
  permuteBand(outer, n->J + 1, perm);
  if (jParallel)
    pbcOpSetUnitAttr(t[0], PBC_MARK_PARALLEL);
  pbcOpSetUnitAttr(t[0], PBC_MARK_PACK_SITE); /* the weight block, once per tile */
  n->band[n->J] = t[1];
  *jLoop = t[1];
}

/* Skinny GEMMs (skinny_gemm.h: a batch-1 to batch-32 linear layer, a
 * GEMV). Each element of B serves only M rows, so B's traffic is the time,
 * and the blocked plan's packing of B (a read and a write of B per call,
 * then B' read once per row block) costs several times the GEMM. Instead
 * register tiles span all M rows up to 8 (up to 32 rows: tiles of 8 or
 * fewer, pbcSkinnyKnRowTile), and B is read in place, from memory once:
 * each core sweeps its share of J's tiles down K, with the tile's
 * accumulators in registers (blockSkinnyK: K blocked where needed). NV
 * comes from a cycle model (up to kSkinnyVectors; skinnyTileVectors); J's
 * last partial tile runs as a second nest. B as N x K (a linear layer's
 * weight, read along K) is read as dot products along K, up to 32 rows in
 * tiles of up to 8 (pbcSkinnyRowTile), instead of being copied transposed.
 * Returns false if the nest is not skinny. */
enum { kSkinnyVectors = 8 };

/* A GEMM's B read across J (a linear layer's N x K weight) is transposed
 * where pbc-pack copies its blocks (the access marked pbc.pack_transposed
 * = the dimension to move last), not copied whole first and then packed:
 * one pass over B instead of two (pbc/oneDNN time, paired: 64x4096x1024
 * 0.65 -> 0.42, as fast as with B as K x N; 512x3072x768 1.00 -> 0.93;
 * 128x768x768 0.93 -> 0.87). Only where the nest reads that memref through
 * this one access (not transposeShared): a packed buffer serves every
 * access of its memref. */
static void markPackTransposed(const PbcAccess *acc, int dim) {
  MlirContext ctx = mlirOperationGetContext(acc->op);
  mlirOperationSetAttributeByName(acc->op, pbcStr(PBC_MARK_PACK_TRANSPOSED),
                                  mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), dim));
}

static bool tileSkinnyGemm(MlirOperation root, const Nest *n, const State *st);

static void tileNest(MlirOperation root, const State *st) {
  Nest n;
  if (!analyzeNest(&root, st, &n))
    return;
  if (tileSkinnyGemm(root, &n, st) || n.lanes < 2)
    return;
  int mr, nv;
  chooseRegisterTile(&n, st, &mr, &nv);
  if (nv == 0)
    return;
  /* Before a split, so both parts read the one copy (or are marked alike). */
  bool packTransposed[4];
  for (int t = 0; t < n.nTranspose; ++t) {
    packTransposed[t] = n.gemm && !n.transposeShared[t];
    if (packTransposed[t])
      markPackTransposed(&n.transpose[t], n.transposeDim[t]);
    else
      pbcTransposeInput(&n.transpose[t], n.transposeDim[t], root);
  }
  long long split = partialTileSplit(&n, st, mr, nv);
  if (split > 0) {
    /* I is parallel: its iterations may run as two nests, [0, split) here
     * and the rest in a copy after it (indexing split + i). */
    long long restTrip = n.trip[n.I] - split;
    MlirValue origin = pbcBuildIndexConstant(root, split);
    MlirOperation rest = pbcCloneNestRestricted(root, mlirOperationGetNextInBlock(root), 1, &n.I,
                                                &restTrip, &origin, NULL);
    pbcLoopSetUpperBound(n.band[n.I], split);
    tileNest(root, st);
    tileNest(rest, st);
    return;
  }
  int nr = nv * n.lanes;
  MlirAttribute kind = mlirOperationGetAttributeByName(root, pbcStr(PBC_MARK_KIND));
  bool parallelBefore[PBC_MAX_BAND];
  memcpy(parallelBefore, n.parallel, sizeof(parallelBefore));
  MlirOperation iLoop = n.I >= 0 ? n.band[n.I] : (MlirOperation){NULL};
  MlirOperation jLoop = n.band[n.J];
  if (n.gemm) {
    int I = n.I, J = n.J;
    long long eb = n.elemBytes;
    /* KC: the B micro-panel (KC x NR) fills up to a quarter of L2, MC the
     * rest of L2 with the A block (MC x KC). Each KC step reads and writes
     * the whole I x J output once more, from L3 or memory, so KC grows as
     * far as L2 allows; the micro-panel then streams from L2, which costs
     * little once it is contiguous (pbc-panel-layout; read in place, its
     * rows are at most a few KiB apart). But a block past 2 * kMaxKc rows
     * is cut to kMaxKc: a B larger than L2 is read in place, and so long
     * a panel of rows a few KiB apart, with the A block beside it, no
     * longer stays in L2 across the row tiles (a K of 3072 at a 3 KiB
     * pitch ran 1.4x slower). */
    GemmBlocks blocks = gemmBlocks(&n, st, mr, nr);
    long long kc = blocks.kc, mc = blocks.mc, nc = blocks.nc;
    bool jcSplit = blocks.jcSplit;
    unsigned sizes[3] = {(unsigned)mc, (unsigned)nc, (unsigned)kc};
    MlirOperation t[6];
    if (!pbcExtAffineTile(&n.band[I], 3, sizes, t)) {
      for (int x = 0; x < n.nTranspose; ++x)
        if (packTransposed[x]) {
          mlirOperationRemoveAttributeByName(n.transpose[x].op, pbcStr(PBC_MARK_PACK_TRANSPOSED));
          pbcTransposeInput(&n.transpose[x], n.transposeDim[x], root);
        }
      return;
    }
    /* [iT jT kT i j k] -> [jT kT iT i j k] (BLIS: jc, pc, ic): B's block is
     * packed once per (jc, pc) step and shared by the cores' ic blocks. But
     * when each core gets at most one ic block and B's block fits in 3/4 of L2,
     * iT stays outermost: one parallel region per call instead of two per
     * (jc, pc) step (B's packing, then the blocks), at the price of each
     * core packing B's block itself. */
    bool icOuter = !jcSplit && parallelBefore[I] && n.trip[I] / mc <= st->cores &&
                   kc * nc * eb <= st->l2 * 3 / 4;
    if (!icOuter)
      permuteGemmTiles(t);
    for (int l = 0; l < 3; ++l)
      pbcOpSetUnitAttr(t[l], PBC_MARK_PACK_SITE);
    /* Tiling made new loops: the point loops are the ones to mark now. */
    iLoop = t[3];
    jLoop = t[4];
    if (parallelBefore[I])
      pbcOpSetUnitAttr(t[0], PBC_MARK_PARALLEL);
    if (parallelBefore[J])
      pbcOpSetUnitAttr(t[1], PBC_MARK_PARALLEL);
  } else if (n.I >= 0 && n.J < n.n - 1 && !n.depthwise) {
    /* (A depthwise filter is a few KiB read once per pixel row; J's blocks
     * would also copy the input, which varies along J: a 7 x 7 map's 1152
     * channels were copied whole for 25 FMAs per element.) */
    tileOutputChannels(&n, st, nr, parallelBefore[n.J], &jLoop);
    packCrowdedInputRows(&n, mr);
  }
  for (int l = 0; l < n.n; ++l)
    if (parallelBefore[l] && l != n.I && l != n.J && !(n.gemm && l > n.I))
      pbcOpSetUnitAttr(n.band[l], PBC_MARK_PARALLEL);
  MlirContext ctx = mlirOperationGetContext(jLoop);
  MlirType i64 = mlirIntegerTypeGet(ctx, 64);
  if (!mlirOperationIsNull(iLoop) && mr > 1)
    mlirOperationSetAttributeByName(iLoop, pbcStr(PBC_MARK_REGISTER_TILE), mlirIntegerAttrGet(i64, mr));
  mlirOperationSetAttributeByName(jLoop, pbcStr(PBC_MARK_REGISTER_TILE), mlirIntegerAttrGet(i64, nr));
  pbcOpSetUnitAttr(jLoop, PBC_MARK_VECTORIZE);
  /* The root may be a new loop now (the old one erased): re-tag it. */
  if (!mlirAttributeIsNull(kind))
    mlirOperationSetAttributeByName(pbcRootOf(jLoop), pbcStr(PBC_MARK_KIND), kind);
}

/* Cycles per reduction step of a skinny mr x v tile: the longest of the
 * FMA latency (each of the mr * v accumulator chains takes one FMA per
 * step), the FMAs on the FMA pipes, the loads (v of B, mr broadcasts of A)
 * on the load ports, and the stream of v vectors of B at `bCycles` each.
 * Zen 4/5 and recent Intel cores: 4 cycles, 2 pipes, 2 vector loads. */
enum { kFmaLatency = 4, kFmaPipes = 2, kLoadPorts = 2 };

static double skinnyStepCycles(int mr, int v, double bCycles) {
  double c = kFmaLatency;
  double fma = (double)mr * v / kFmaPipes, loads = (double)(mr + v) / kLoadPorts;
  c = fma > c ? fma : c;
  c = loads > c ? loads : c;
  return v * bCycles > c ? v * bCycles : c;
}

/* NV for a skinny tile of mr rows over `vectors` vectors of J: the least
 * time on the busiest core, which runs ceil(tiles / cores) of the full
 * tiles (in parallel) and the partial tile after them (alone); the widest
 * NV among equals. B streams from L2 at a vector a cycle, from L3 or
 * memory at 2 or more. 62 vectors (1000 columns), 1 row, B in L3, 2 cores:
 * NV 8 costs 4 x 16 + 12 = 76 cycles a step, NV 6 5 x 12 + 4 = 64, NV 1
 * 31 x 4 = 124. For dot products
 * (B read along K) the units are rows of B, a step covers a vector of K.
 * 0 if no tile fits. */
static int skinnyTileVectors(long long vectors, int mr, long long bBytes, bool dot,
                             const State *st) {
  double bCycles = bBytes <= st->l2 ? 1.0 : 2.0, bestCost = -1;
  int best = 0;
  for (int v = 1; v <= kSkinnyVectors && v <= vectors; ++v) {
    /* Dot products hold mr vectors of A, not one broadcast. */
    if (dot ? mr * v + mr + v > st->vectorRegisters : !tileFits(st, mr, v))
      continue;
    long long tiles = vectors / v, rest = vectors % v;
    double cost = (double)((tiles + st->cores - 1) / st->cores) * skinnyStepCycles(mr, v, bCycles) +
                  (rest ? skinnyStepCycles(mr, (int)rest, bCycles) : 0);
    if (bestCost < 0 || cost <= bestCost) {
      best = v;
      bestCost = cost;
    }
  }
  return best;
}

/* [I J K] -> [jT kT iT i j k] for a skinny GEMM (I, J, K the band's loops
 * 0, 1, 2): tiles of all rows, jc columns and kc steps of K, jT parallel,
 * i and j register-tiled by mr (where above 1) and nr. False (the nest
 * untouched) if MLIR cannot tile the band. */
static bool blockSkinny(MlirOperation root, const Nest *n, int mr, long long nr, long long jc,
                        long long kc) {
  unsigned sizes[3] = {(unsigned)n->trip[n->I], (unsigned)jc, (unsigned)kc};
  MlirAttribute kind = mlirOperationGetAttributeByName(root, pbcStr(PBC_MARK_KIND));
  MlirType i64 = mlirIntegerTypeGet(mlirOperationGetContext(root), 64); /* root is replaced */
  MlirOperation band[3] = {n->band[n->I], n->band[n->J], n->band[n->n - 1]}, t[6];
  if (!pbcExtAffineTile(band, 3, sizes, t))
    return false;
  permuteGemmTiles(t);
  pbcOpSetUnitAttr(t[1], PBC_MARK_PARALLEL);
  if (!mlirAttributeIsNull(kind))
    mlirOperationSetAttributeByName(pbcRootOf(t[0]), pbcStr(PBC_MARK_KIND), kind);
  if (mr > 1)
    mlirOperationSetAttributeByName(t[3], pbcStr(PBC_MARK_REGISTER_TILE), mlirIntegerAttrGet(i64, mr));
  mlirOperationSetAttributeByName(t[4], pbcStr(PBC_MARK_REGISTER_TILE), mlirIntegerAttrGet(i64, nr));
  pbcOpSetUnitAttr(t[4], PBC_MARK_VECTORIZE);
  return true;
}

/* A skinny GEMM of several row tiles (B as K x N) rereads each core's K x NR
 * panel of B from L2, once per row tile. Where the panel and a row tile's
 * rows of A outgrow half of L2, or B's rows are a multiple of 4 KiB apart
 * (the panel's rows then share a few cache sets and evict each other), the
 * rereads come from L3 instead: K is blocked by a divisor of it from
 * kSkinnyKBlock / 4 to kSkinnyKBlock, [I J K] -> [jT kT iT i j k], so the
 * panel's kc rows stay in L2 across the row tiles
 * (pbc/oneDNN time, paired: 32x1024x1024 1.55 -> 1.06, 16x768x3072 1.27 ->
 * 0.97, 32x768x3072 1.15 -> 0.98; 16x1000x2048, whose panel fits, 0.97 ->
 * 1.05 when blocked). C's tile is then loaded and stored once per block.
 * (Not pbcRowsCrowdCacheSets: that is L1's test, any multiple of 256 bytes.
 * The panel must stay in L2, whose sets 3 KiB rows still spread over (a
 * 768-wide B keeps its unblocked plan); 4 KiB multiples leave it 16 sets
 * per line, 256 rows. Rows 2 KiB apart crowd it only past 512 rows, which
 * this approximation does not block.)
 * False (the nest untouched) if it does not apply. */
enum { kSkinnyKBlock = 256 };

static bool blockSkinnyK(MlirOperation root, const Nest *n, int mr, long long nr, const State *st) {
  int I = n->I, J = n->J, K = n->n - 1;
  long long eb = n->elemBytes, kTrip = n->trip[K];
  long long kc = divisorTile(kTrip, 1, kSkinnyKBlock);
  if (I != 0 || J != 1 || K != 2 || kTrip <= kSkinnyKBlock || kc < kSkinnyKBlock / 4)
    return false;
  long long pitch = 0; /* bytes between B's rows: B is read along J */
  Accs a;
  pbcGatherAccesses(n->band[K], a.acc, 64, &a.n);
  for (int i = 0; i < a.n && pitch == 0; ++i) {
    const PbcAccess *x = &a.acc[i];
    MlirType t = mlirValueGetType(x->memref);
    if (!x->isWrite && x->rank >= 2 && pbcMemrefHasIdentityLayout(t) &&
        mlirShapedTypeHasStaticShape(t) &&
        pbcAccessStrideAlong(x, n->band[J]) == PBC_STRIDE_CONTIGUOUS &&
        pbcAccessStrideAlong(x, n->band[K]) != PBC_STRIDE_INVARIANT)
      pitch = mlirShapedTypeGetDimSize(t, x->rank - 1) * eb;
  }
  bool crowded = kTrip * (nr + mr) * eb > st->l2 / 2 || (pitch > 0 && pitch % kSetGroupBytes == 0);
  return crowded && blockSkinny(root, n, mr, nr, nr, kc);
}

/* A skinny GEMM of one row tile (a GEMV; B as K x N) reads B in runs of NR
 * columns a row apart (6 vectors of a 1000-wide B: 384 of every 4000
 * bytes, down all of K, tile after tile), which the prefetchers follow
 * poorly where B comes from memory: a CNN's classifier (5-8 MiB) is
 * evicted by the rest of the network between calls. Where B outgrows L2,
 * each core's share of J's tiles (a block of jc columns) is swept by
 * blocks of kGemvKBlock rows of B instead, [I J K] -> [jT kT iT i j k]
 * with j of trip jc register-tiled by NR: a block reads its rows in runs of
 * jc columns, and C's jc columns (in L1) are loaded and stored once per
 * block (1x1000x1280, cold caches, one core, C: 0.38 -> 0.22-0.27 ms;
 * tools/bench/README.md). False if it does not apply: J's tiles must split
 * evenly over the cores and K into blocks of at least half the size. (One
 * row of A on several cores splits B's rows instead: splitGemvK.) */
enum { kGemvKBlock = 16 };

static bool blockGemvK(MlirOperation root, const Nest *n, int mr, long long nr, long long bBytes,
                       const State *st) {
  int I = n->I, J = n->J, K = n->n - 1;
  long long tiles = pbcLoopZeroBasedTrip(n->band[J]) / nr, kTrip = n->trip[K];
  long long kc = divisorTile(kTrip, 1, kGemvKBlock);
  if (I != 0 || J != 1 || K != 2 || mr != n->trip[I] || bBytes <= st->l2 ||
      tiles % st->cores != 0 || kTrip <= kc || kc < kGemvKBlock / 2)
    return false;
  return blockSkinny(root, n, mr, nr, nr * (tiles / st->cores), kc);
}

/* A GEMV whose B streams from L3 or memory: the cores split B's rows
 * (pbcGemvSplitsK). */
static bool splitGemvK(MlirOperation root, const Nest *n, long long bBytes, const State *st) {
  if (n->I != 0 || n->J != 1 || n->n != 3 || !mlirOperationEqual(n->band[0], root) ||
      !pbcGemvSplitsK(n->trip[0], n->trip[2], n->elemBytes * 8, n->trip[1] * n->elemBytes, bBytes,
                      st->cores, st->l1, st->l2))
    return false;
  MlirOperation band[3] = {n->band[0], n->band[1], n->band[2]};
  return pbcSplitGemvK(band, st->cores, kPbcGemvSplitRows, st->vectorBits / (8 * n->elemBytes));
}

static bool tileSkinnyGemm(MlirOperation root, const Nest *n, const State *st) {
  if (!n->gemm || pbcLoopZeroBasedTrip(n->band[n->J]) <= 0)
    return false; /* (n->I is a loop of the band only in a GEMM) */
  long long M = n->trip[n->I];
  /* B read along K (a linear layer's N x K weight): dot products, each
   * J row of the tile one vector accumulator per row of I along K. */
  bool dot = n->nTranspose > 0;
  long long bBytes = n->trip[n->J] * n->trip[n->n - 1] * n->elemBytes;
  int mr = dot ? pbcSkinnyDotRowTile(M, n->trip[n->n - 1], bBytes, st->vectorBits, n->elemBytes * 8,
                                     st->l1, st->l3)
               : pbcSkinnyKnRowTile(M);
  if (mr == 0)
    return false;
  if (dot && (n->nTranspose > 1 ||
              pbcAccessStrideAlong(&n->transpose[0], n->band[n->n - 1]) != PBC_STRIDE_CONTIGUOUS))
    return false;
  if (!dot && splitGemvK(root, n, bBytes, st))
    return true;
  long long unit = dot ? 1 : n->lanes; /* J iterations per unit of the tile */
  if (n->trip[n->J] % unit)
    return false;
  int nv = skinnyTileVectors(n->trip[n->J] / unit, mr, bBytes, dot, st);
  if (nv == 0)
    return false;
  long long nr = (long long)nv * unit, rest = n->trip[n->J] % nr;
  if (rest) {
    /* J is parallel: [0, split) here, the rest in a copy after it. */
    long long split = n->trip[n->J] - rest;
    MlirValue origin = pbcBuildIndexConstant(root, split);
    int J = n->J;
    MlirOperation restNest = pbcCloneNestRestricted(root, mlirOperationGetNextInBlock(root), 1, &J,
                                                    &rest, &origin, NULL);
    pbcLoopSetUpperBound(n->band[J], split);
    tileNest(restNest, st);
  }
  MlirContext ctx = mlirOperationGetContext(root);
  MlirType i64 = mlirIntegerTypeGet(ctx, 64);
  if (!dot && mr < M && blockSkinnyK(root, n, mr, nr, st))
    return true;
  if (!dot && blockGemvK(root, n, mr, nr, bBytes, st))
    return true;
  if (mr > 1)
    mlirOperationSetAttributeByName(n->band[n->I], pbcStr(PBC_MARK_REGISTER_TILE),
                                    mlirIntegerAttrGet(i64, mr));
  mlirOperationSetAttributeByName(n->band[n->J], pbcStr(PBC_MARK_REGISTER_TILE),
                                  mlirIntegerAttrGet(i64, nr));
  if (!dot) /* dot products: pbc-vectorize-reductions vectorizes K */
    pbcOpSetUnitAttr(n->band[n->J], PBC_MARK_VECTORIZE);
  for (int l = 0; l < n->I; ++l)
    if (n->parallel[l])
      pbcOpSetUnitAttr(n->band[l], PBC_MARK_PARALLEL);
  return true;
}

/* The static nests of a nest over run-time sizes: each the loop a block
 * loop holds that is not a block loop itself (blocks of a second run-time
 * size go inside those of the first). */
static MlirWalkResult collectBlocks(MlirOperation op, void *data) {
  if (!pbcOpHasAttr(op, PBC_MARK_BLOCKS))
    return MlirWalkResultAdvance;
  MlirOperation inner = pbcOnlyLoopIn(op);
  if (!mlirOperationIsNull(inner) && !pbcOpHasAttr(inner, PBC_MARK_BLOCKS))
    pbcOpListPush(data, inner);
  return MlirWalkResultAdvance;
}

static bool run(MlirOperation func, void *state) {
  PbcOpList roots = {0};
  pbcRootNests(func, "matmul", &roots);
  for (int i = 0; i < roots.n; ++i) {
    /* A nest over a run-time size: the static nests in its blocks
     * (pbc-block-symbolic). */
    PbcOpList blocks = {0};
    mlirOperationWalk(roots.ops[i], collectBlocks, &blocks, MlirWalkPreOrder);
    if (blocks.n == 0)
      pbcOpListPush(&blocks, roots.ops[i]);
    for (int b = 0; b < blocks.n; ++b)
      tileNest(blocks.ops[b], state);
    pbcOpListDestroy(&blocks);
  }
  pbcOpListDestroy(&roots);
  return true;
}

static MlirPass createPass(const char *options, char *err, size_t errLen);

const PbcCPassSpec pbcTilePass = {
    "pbc-tile", "func.func",   "Register and cache tiling of key (matmul-kind) nests",
    run,        sizeof(State), createPass};

static MlirPass createPass(const char *options, char *err, size_t errLen) {
  enum { VECTOR_BITS, VECTOR_REGISTERS, CORES, L1D_BYTES, L2_BYTES, L3_BYTES, NUM_OPTIONS };
  static const PbcCountOption kOptions[] = {
      [VECTOR_BITS] = {"vector-bits", 256},
      [VECTOR_REGISTERS] = {"vector-registers", 16},
      [CORES] = {"cores", 1},
      [L1D_BYTES] = {"l1d-bytes", 32768},
      [L2_BYTES] = {"l2-bytes", 1 << 20},
      [L3_BYTES] = {"l3-bytes", 8 << 20},
      [NUM_OPTIONS] = {NULL, 0}};
  long long v[NUM_OPTIONS];
  if (!pbcPassCountOptions(options, kOptions, v, err, errLen))
    return (MlirPass){NULL};
  long long cores = v[CORES];
  State st = {(int)v[VECTOR_BITS],
              (int)v[VECTOR_REGISTERS],
              cores > 0 ? (int)cores : 1,
              v[L1D_BYTES],
              v[L2_BYTES],
              v[L3_BYTES]};
  return pbcCPassCreate(&pbcTilePass, &st);
}
