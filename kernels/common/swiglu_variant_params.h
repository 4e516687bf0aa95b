/* The SwiGLU variant of a call (docs/spec/swiglu-mxfp8.md, "Variants"), the last member of both
 * families' parameter structs (swiglu_mxfp8_params.h, swiglu_fp8_params.h). Plain C with
 * fixed-width fields; lib/ fills it from the descriptor's tail, the variant programs read it
 * (the plain programs never do: their calls leave it zero).
 *
 *   p        FP32 [M] router weights, one a row (a grouped call: [T], one a token), or NULL
 *   dp       FP32 [M] the backward's d/dp, one a row, or NULL
 *   alpha    the clamped activation's sigmoid slope (its gate is min(g, limit))
 *   limit    the clamped activation's bound (> 0)
 *   clamped  0: silu(g) * u; 1: the clamped activation
 *   weighted 0: unweighted; 1: y * p (forward), dp and the factor p (backward) */
#ifndef CAKE_KERNELS_COMMON_SWIGLU_VARIANT_PARAMS_H_
#define CAKE_KERNELS_COMMON_SWIGLU_VARIANT_PARAMS_H_

#include <stdint.h>

typedef struct cake_swiglu_variant {
  const float *p;
  float *dp;
  float alpha;
  float limit;
  uint32_t clamped;
  uint32_t weighted;
} cake_swiglu_variant;

#ifdef __cplusplus
static_assert(sizeof(cake_swiglu_variant) == 32, "cake_swiglu_variant layout changed");
#else
_Static_assert(sizeof(cake_swiglu_variant) == 32, "cake_swiglu_variant layout changed");
#endif

#endif /* CAKE_KERNELS_COMMON_SWIGLU_VARIANT_PARAMS_H_ */
