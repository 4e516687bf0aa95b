/* The one parameter struct of every SwiGLU + MXFP8 kernel, passed by value as a
 * __grid_constant__. Plain C with fixed-width fields: lib/ fills it (lib/families/
 * swiglu_mxfp8_launch.cc, from the problem and the program's tile knobs), kernels/ reads it; the
 * size is asserted on both sides so they cannot drift.
 *
 * Shapes (O = K forward, 2K backward; spec docs/spec/swiglu-mxfp8.md):
 *   in     [M, 2K] bf16 row-major, gate columns [0, K), up columns [K, 2K)
 *   grad   [M, K]  bf16 (backward only)
 *   row_q  [M, O]  e4m3, byte (m, o) at m*O + o
 *   row_s  swizzled 128x4 E8M0, R = M rows, C = O/32 columns
 *   col_q  [O, M]  e4m3, byte (m, o) at o*col_ld + m (col_ld = M; a grouped call's expert
 *                  view keeps the whole [O, T] transpose: docs/spec/swiglu-grouped.md)
 *   col_s  swizzled 128x4 E8M0, R = O rows, C = M/32 columns
 * The pointers of a disabled orientation are NULL and never touched. All indexing is 64-bit.
 * The kernel needs M and K to be multiples of 32 (one scale block); the API requires 128. */
#ifndef CAKE_KERNELS_COMMON_SWIGLU_MXFP8_PARAMS_H_
#define CAKE_KERNELS_COMMON_SWIGLU_MXFP8_PARAMS_H_

#include <stdint.h>

#include "swiglu_variant_params.h"

typedef struct cake_swiglu_mxfp8_params {
  const uint16_t *in;   /* [M, 2K] bf16 */
  const uint16_t *grad; /* [M, K] bf16, backward; NULL forward */
  uint8_t *row_q;       /* [M, O] e4m3, or NULL */
  uint8_t *row_s;       /* [row_s_rows_padded * row_s_cols_padded] e8m0, or NULL */
  uint8_t *col_q;       /* [O, M] e4m3, or NULL */
  uint8_t *col_s;       /* [col_s_rows_padded * col_s_cols_padded] e8m0, or NULL */
  int64_t M;
  int64_t K;
  int64_t O;                 /* output columns: K forward, 2K backward */
  int64_t row_s_cols;        /* O / 32 */
  int64_t row_s_cols_padded; /* row_s_cols rounded up to 4 */
  int64_t row_s_rows_padded; /* M rounded up to 128 */
  int64_t col_s_cols;        /* M / 32 */
  int64_t col_s_cols_padded; /* col_s_cols rounded up to 4 */
  int64_t col_s_rows_padded; /* O rounded up to 128 */
  int64_t tiles_k;           /* ceil(K / tile_cols): CTA tiles along K */
  int64_t tiles;             /* ceil(M / tile_rows) * tiles_k */
  uint32_t form;             /* cake_swiglu_form the program was compiled for (a record) */
  uint32_t reserved;         /* 0 */
  int64_t col_ld;            /* bytes from one col_q row to the next: M (a grouped call: T) */
  cake_swiglu_variant var;   /* read by the variant programs only */
} cake_swiglu_mxfp8_params;

#ifdef __cplusplus
static_assert(sizeof(cake_swiglu_mxfp8_params) == 184, "cake_swiglu_mxfp8_params layout changed");
#else
_Static_assert(sizeof(cake_swiglu_mxfp8_params) == 184, "cake_swiglu_mxfp8_params layout changed");
#endif

#endif /* CAKE_KERNELS_COMMON_SWIGLU_MXFP8_PARAMS_H_ */
