/* The one parameter struct of every normgate kernel, passed by value as a __grid_constant__.
 * Plain C with fixed-width fields: lib/ fills it, kernels/ reads it; the size is asserted on
 * both sides so they cannot drift. Strides are in elements between consecutive rows. */
#ifndef CAKE_KERNELS_COMMON_NORMGATE_PARAMS_H_
#define CAKE_KERNELS_COMMON_NORMGATE_PARAMS_H_

#include <stdint.h>

/* Rows whose dw partial is summed in FP32 before the FP64 stage (deterministic package). The
 * chunk size is a constant of the format, never a program knob: dw bits depend on it. */
#define CAKE_NG_DW_CHUNK_ROWS 16

/* The tuned deterministic backward's workspace layout for this call (normgate_workspace.h,
 * cake_ng_det_layout_of), computed once by the host: in the kernels it cost every thread
 * hundreds of instructions of 64-bit division before the first load. Zero for other programs. */
typedef struct cake_ng_det_layout {
  int64_t words_offset;   /* bytes to the words (unit counter, grid barriers) */
  int64_t singles_offset; /* grouped tree: bytes to the singles */
  int64_t singles_span;   /* grouped tree: doubles a column of singles */
  int64_t leaf_span;      /* grouped tree: the leaves' level 0 span */
  int64_t groups;         /* grouped tree: cake_ng_grouping_of for the launch's grid */
  int64_t singles;
} cake_ng_det_layout;

typedef struct cake_normgate_params {
  const uint16_t *x;  /* [rows, x_stride] bf16 */
  const uint16_t *z;  /* [rows, z_stride] bf16 */
  const uint16_t *w;  /* [d] bf16 */
  uint16_t *y;        /* [rows, y_stride] bf16 (forward) */
  float *rstd;        /* [rows] fp32 or NULL (forward) */
  const uint16_t *dy; /* [rows, dy_stride] bf16 (backward) */
  uint16_t *dx;       /* [rows, dx_stride] bf16 (backward) */
  uint16_t *dz;       /* [rows, dz_stride] bf16 (backward) */
  void *dw;           /* [d] bf16 or fp32, or NULL when skipped (backward) */
  void *workspace;    /* backward scratch, layout in normgate_workspace.h */
  int64_t rows;
  int64_t x_stride;
  int64_t z_stride;
  int64_t y_stride;
  int64_t dy_stride;
  int64_t dx_stride;
  int64_t dz_stride;
  int64_t rows_per_block; /* rows one CTA handles per loop trip (from the program's knobs) */
  int64_t num_blocks;     /* ceil(rows / rows_per_block) */
  int32_t d;
  float eps;
  int32_t packed;   /* 1 when x, z (and dy) rows are contiguous (stride == d): bulk L2 prefetch allowed */
  int32_t dw_f32;   /* 1: dw is fp32, 0: bf16 */
  int32_t dw_flags; /* CAKE_NORMGATE_DW_ACCUMULATE | CAKE_NORMGATE_DW_SKIP */
  int32_t reserved;
  cake_ng_det_layout det; /* tuned deterministic backward */
  /* The variant programs (normgate_variant.cuh) read these; every other program serves only
   * the default (SiLU after a whole-row norm, BF16 tensors, BF16 or FP32 dw) and ignores them.
   * With these, x/z/w/y/dy/dx/dz/dw point at elements of their dtype, not always bf16. */
  int32_t gate;      /* cake_normgate_gate_t */
  int32_t placement; /* cake_normgate_placement_t */
  int32_t group;     /* columns per mean-square group (d: the whole row) */
  int32_t x_dtype;   /* cake_dtype_t of x, y, dy, dx */
  int32_t z_dtype;   /* of z, dz */
  int32_t w_dtype;   /* of w */
  int32_t dw_dtype;  /* of dw */
  int32_t reserved2;
  /* The quantizing forward programs (normgate_quant.cuh) read these; every other program
   * ignores them. There y may be NULL (not written). */
  uint8_t *q;         /* E4M3 [rows, d], packed: the [q_rows, heads * d] matrix */
  void *q_scale;      /* FP32 MN-major [q_rows, heads * d / 128], or E8M0 swizzled [q_rows, heads * d / 32] */
  int64_t q_rows;     /* rows / heads */
  int64_t cover_rows; /* rows the grid walks: rows, or (MXFP8) the scale matrix's padded rows * heads */
  int32_t heads;      /* normgate rows a row of the quantized matrix (1..; rows / heads exact) */
  int32_t scale_rule; /* FP8 blockwise: cake_fp8_scale_rule_t */
  int32_t s_cols_padded; /* MXFP8: scale columns padded to the 128x4 tile (C') */
  int32_t reserved3;
} cake_normgate_params;

#ifdef __cplusplus
static_assert(sizeof(cake_normgate_params) == 304, "cake_normgate_params layout changed");
#else
_Static_assert(sizeof(cake_normgate_params) == 304, "cake_normgate_params layout changed");
#endif

#endif /* CAKE_KERNELS_COMMON_NORMGATE_PARAMS_H_ */
