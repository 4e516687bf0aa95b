/* The parameter structs of the grouped SwiGLU kernels (both families), passed by value as a
 * __grid_constant__: the family's ungrouped struct for the whole token buffer, plus the experts.
 * Plain C with fixed-width fields; lib/families/swiglu_grouped_launch.cc fills them, the kernels
 * read them; the sizes are asserted on both sides. Spec: docs/spec/swiglu-grouped.md.
 *
 *   base    the ungrouped parameters of a problem of M = T rows: `in`, `grad`, and the four
 *           outputs' whole buffers; tiles is the bound of the grouped walk (every split of T
 *           rows into E experts fits it), tiles_k as the ungrouped program's
 *   groups  where the experts' end rows are (device memory, read by every CTA), E, and where
 *           the CTA's group table lives in dynamic shared memory */
#ifndef CAKE_KERNELS_COMMON_SWIGLU_GROUPED_PARAMS_H_
#define CAKE_KERNELS_COMMON_SWIGLU_GROUPED_PARAMS_H_

#include <stdint.h>

#include "swiglu_fp8_params.h"
#include "swiglu_mxfp8_params.h"

typedef struct cake_swiglu_groups {
  const int32_t *offsets; /* [experts] end rows (PyTorch's offs); device memory */
  int32_t *status;        /* NULL, or one int32: cake_swiglu_grouped_status_t bits */
  int64_t tokens;         /* T: rows of in */
  int32_t experts;        /* E */
  uint32_t table_offset;  /* byte offset of the group table in dynamic shared memory */
} cake_swiglu_groups;

typedef struct cake_swiglu_mxfp8_grouped_params {
  cake_swiglu_mxfp8_params base; /* M = T; col_q [O, T] (col_ld = T) */
  cake_swiglu_groups groups;
} cake_swiglu_mxfp8_grouped_params;

typedef struct cake_swiglu_fp8_grouped_params {
  cake_swiglu_fp8_params base; /* M = T */
  cake_swiglu_groups groups;
} cake_swiglu_fp8_grouped_params;

#ifdef __cplusplus
static_assert(sizeof(cake_swiglu_groups) == 32, "cake_swiglu_groups layout changed");
static_assert(sizeof(cake_swiglu_mxfp8_grouped_params) == sizeof(cake_swiglu_mxfp8_params) + 32,
              "cake_swiglu_mxfp8_grouped_params layout changed");
static_assert(sizeof(cake_swiglu_fp8_grouped_params) == sizeof(cake_swiglu_fp8_params) + 32,
              "cake_swiglu_fp8_grouped_params layout changed");
#else
_Static_assert(sizeof(cake_swiglu_groups) == 32, "cake_swiglu_groups layout changed");
#endif

#endif /* CAKE_KERNELS_COMMON_SWIGLU_GROUPED_PARAMS_H_ */
