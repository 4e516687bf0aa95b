/* The one parameter struct of every SwiGLU + FP8 blockwise kernel, passed by value as a
 * __grid_constant__. Plain C with fixed-width fields: lib/ fills it (lib/families/
 * swiglu_fp8_launch.cc), kernels/ reads it; the size is asserted on both sides.
 *
 * Shapes (O = K forward, 2K backward; spec docs/spec/fp8-blockwise.md):
 *   in     [M, 2K] bf16 row-major, gate columns [0, K), up columns [K, 2K)
 *   grad   [M, K]  bf16 (backward only)
 *   row_q  [M, O]  e4m3, byte (m, o) at m*O + o
 *   row_s  [M, O/128] fp32, MN-major: scale (m, j) at j*M + m
 *   col_q  [O, M]  e4m3, byte (m, o) at o*M + m
 *   col_s  [O, ceil(M/128)] fp32, MN-major: scale (o, i) at i*O + o
 * The pointers of a disabled orientation are NULL and never touched. K is a multiple of 128; M
 * a multiple of the program's tile rows, or any M >= 1 for a program with the tail knob. */
#ifndef CAKE_KERNELS_COMMON_SWIGLU_FP8_PARAMS_H_
#define CAKE_KERNELS_COMMON_SWIGLU_FP8_PARAMS_H_

#include <stdint.h>

#include "swiglu_variant_params.h"

typedef struct cake_swiglu_fp8_params {
  const uint16_t *in;   /* [M, 2K] bf16 */
  const uint16_t *grad; /* [M, K] bf16, backward; NULL forward */
  uint8_t *row_q;       /* [M, O] e4m3, or NULL */
  float *row_s;         /* [O/128, M] fp32 (the MN-major [M, O/128]), or NULL */
  uint8_t *col_q;       /* [O, M] e4m3, or NULL */
  float *col_s;         /* [ceil(M/128), O] fp32 (the MN-major [O, ceil(M/128)]), or NULL */
  int64_t M;
  int64_t K;
  int64_t O;        /* output columns: K forward, 2K backward */
  int64_t tiles_k;  /* K / 128: CTA tiles along K */
  int64_t tiles;    /* ceil(M / tile_rows) * tiles_k */
  uint32_t form;    /* cake_swiglu_form the program was compiled for (a record) */
  uint32_t rule;    /* scale rule: 0 exact (amax / 448), 1 power of two */
  cake_swiglu_variant var; /* read by the variant programs only */
} cake_swiglu_fp8_params;

#ifdef __cplusplus
static_assert(sizeof(cake_swiglu_fp8_params) == 128, "cake_swiglu_fp8_params layout changed");
#else
_Static_assert(sizeof(cake_swiglu_fp8_params) == 128, "cake_swiglu_fp8_params layout changed");
#endif

#endif /* CAKE_KERNELS_COMMON_SWIGLU_FP8_PARAMS_H_ */
