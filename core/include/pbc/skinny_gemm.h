/* skinny_gemm.h — the GEMMs pbc-tile plans as skinny: so few rows (a batch-1
 * to batch-8 linear layer, a GEMV) that B's traffic is their time. pbc-tile
 * gives them one register tile over all rows and reads B in place, once;
 * pbc-pad-gemm leaves their rows unpadded (padding 1 row to 8 did 8 times
 * the work) and pads only the last partial vector of columns. */
#ifndef PBC_SKINNY_GEMM_H
#define PBC_SKINNY_GEMM_H

enum { PBC_SKINNY_GEMM_ROWS = 8 };

#endif
