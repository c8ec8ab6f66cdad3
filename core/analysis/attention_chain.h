/*===- analysis/attention_chain.h - Attention as S2 leaves it, on f32 ------===*\
|* softmax(f(Q Kᵀ)) V as the loop nests S2 makes of it (bridge, torch-mlir  *|
|* and the examples all decompose to this chain):                            *|
|*   [Kᵀ = transpose(K)]   a copy nest the Q Kᵀ gemm reads (optional)       *|
|*   S = 0; S += Q Kᵀ      the fill and the first gemm                       *|
|*   X = f(S, ...)         pointwise nests on the scores (scale, masks)      *|
|*   M = init; M = max_j X                                                   *|
|*   E = exp(X - M)                                                          *|
|*   L = 0; L = sum_j E                                                      *|
|*   P = E / L                                                               *|
|*   O = c; O += P V       the second gemm and its fill                      *|
|* in program order, with only constants, allocations and deallocations of  *|
|* the chain's own buffers between the nests. Every intermediate buffer is  *|
|* the function's own allocation, used only by the chain: a fused kernel    *|
|* never materializes them. The GPU targets match the f16/bf16 form of the  *|
|* same chain for their matrix units (targets/gpu/match_attention.c).       *|
\*===----------------------------------------------------------------------===*/
#ifndef PBC_ATTENTION_CHAIN_H
#define PBC_ATTENTION_CHAIN_H

#include <stdbool.h>

#include "mlir-c/IR.h"

enum { kPbcAttentionMaxScoreNests = 4, kPbcAttentionMaxChain = 24 };

typedef struct {
  /* The chain's nests but the last (the Q Kᵀ gemm, fills, the copy, the
   * score nests, the softmax) and the P V gemm: the kernel replaces all. */
  MlirOperation pv;
  MlirOperation nests[kPbcAttentionMaxChain];
  int nNests;
  /* Intermediate buffers (allocations), dead once the chain is gone. */
  MlirValue buffers[kPbcAttentionMaxChain];
  int nBuffers;
  /* batched: the gemms have a batch loop (buffers [b, ...]), else 2-D. */
  bool batched;
  long long batch, m, n, d, dv; /* queries, keys, head dims of Q·K and V */
  MlirValue q, k, v, o;
  /* kRows: k is [b, key, d] (K read by rows), else [b, d, key] (Kᵀ). */
  bool kRows;
  /* Pointwise nests on the scores, in order: each reads the previous
   * score buffer (scoreIn) at the band's indices. */
  MlirOperation scoreNests[kPbcAttentionMaxScoreNests];
  MlirValue scoreIn[kPbcAttentionMaxScoreNests];
  int nScore;
  /* The row max's start and combiner (maxnumf or maximumf); O's fill. */
  double maxInit;
  bool maxNum;
  MlirValue oInit;
} PbcAttentionChain;

/* Whether the f32 matmul nest `qkRoot` starts such a chain (then *at holds
 * it). Loops from 0 with step 1, static identity-layout buffers, gemm bands
 * [b] i j k in that order. */
bool pbcMatchAttentionChain(MlirOperation qkRoot, PbcAttentionChain *at);

#endif
