/* What the host knows of one compiled program and one route, shared by lib/ and kernels/.
 *
 * A manifest (kernels/smXX/manifest.def) is the single source of truth: it is a list of
 * X-macro lines. kernels/ expands each program line into an extern "C" kernel whose body is
 * the family's template instantiated on the line's knobs; lib/ expands the same lines into
 * tables of cake_program_desc and cake_route_desc. Nothing is listed twice.
 *
 * Manifest line shapes (every argument a literal):
 *   CAKE_NORMGATE_PROGRAM(sym, op, d, threads, min_ctas, rows_per_group, prefetch, persistent
 *                         [, tree])
 *   CAKE_SWIGLU_PROGRAM(sym, form, threads, min_ctas, tile_rows, tile_cols, rows_per_thread,
 *                       load_hint, sigmoid_form, band_form[, pipeline[, group_rows
 *                       [, col_lanes[, slot_cols[, row_from_tile[, variant[, col_runs]]]]]]])
 *   CAKE_SWIGLU_FP8_PROGRAM(sym, form, threads, min_ctas, tile_rows, rows_per_thread, load_hint,
 *                           sigmoid_form, band_form[, load_batch[, pipeline]])
 *                           (SwiGLU + FP8 blockwise)
 *   CAKE_NORMGATE_CANDIDATE(...), CAKE_SWIGLU_CANDIDATE(...), CAKE_SWIGLU_FP8_CANDIDATE(...):
 *                         a program line that no route
 *                         selects (same arguments). Compiled, and listed in the table, only in a
 *                         build with CAKE_CANDIDATES=1 (CMake -DCAKE_CANDIDATES=ON, for A/B work);
 *                         both expansions take it from the macros below, so the image and the
 *                         table always hold the same programs. A route naming one does not
 *                         compile in the default build.
 *   CAKE_ROUTE(family, op, d, metric_lo, metric_hi, sym)
 *   CAKE_ROUTE_WAVES(family, op, d, metric_lo, metric_hi, wave_rows, waves_lo, waves_hi,
 *                    frac_lo, frac_hi, sym)
 * A wave route (normgate) also needs the call's rows, cut into units of wave_rows rows, to make
 * W = units / SMs waves with waves_lo <= floor(100 W) < waves_hi and frac_lo <= floor(100 W)
 * mod 100 <= frac_hi (hundredths): where a persistent walk's last wave of units is that full.
 * It overrides the plain routes after it for the same (family, op, d); routes are taken in
 * manifest order, the first that holds.
 * `sym` becomes the kernel symbol cake_<arch>_<sym> and the program name <arch>.<sym>.
 */
#ifndef CAKE_KERNELS_COMMON_PROGRAM_DESC_H_
#define CAKE_KERNELS_COMMON_PROGRAM_DESC_H_

#include <stdint.h>

#define CAKE_MAX_KNOBS 16

/* Candidate lines expand as program lines, or not at all: see above. */
#ifndef CAKE_CANDIDATES
#define CAKE_CANDIDATES 0
#endif
#if CAKE_CANDIDATES
#define CAKE_NORMGATE_CANDIDATE(...) CAKE_NORMGATE_PROGRAM(__VA_ARGS__)
#define CAKE_SWIGLU_CANDIDATE(...) CAKE_SWIGLU_PROGRAM(__VA_ARGS__)
#define CAKE_SWIGLU_FP8_CANDIDATE(...) CAKE_SWIGLU_FP8_PROGRAM(__VA_ARGS__)
#else
#define CAKE_NORMGATE_CANDIDATE(...)
#define CAKE_SWIGLU_CANDIDATE(...)
#define CAKE_SWIGLU_FP8_CANDIDATE(...)
#endif

/* Families and ops are the public enums of cake.h (cake_family_t, cake_op_t); these short
 * names are what manifests use. */
#include "cake.h"

#define CAKE_NG_OP_FWD CAKE_OP_NORMGATE_FORWARD
#define CAKE_NG_OP_BWD_DET CAKE_OP_NORMGATE_BACKWARD_DET
#define CAKE_NG_OP_BWD_NONDET CAKE_OP_NORMGATE_BACKWARD_NONDET
#define CAKE_SW_FWD_ROW CAKE_OP_SWIGLU_FORWARD_ROWWISE
#define CAKE_SW_FWD_COL CAKE_OP_SWIGLU_FORWARD_COLWISE
#define CAKE_SW_FWD_BOTH CAKE_OP_SWIGLU_FORWARD_BOTH
#define CAKE_SW_BWD_ROW CAKE_OP_SWIGLU_BACKWARD_ROWWISE
#define CAKE_SW_BWD_COL CAKE_OP_SWIGLU_BACKWARD_COLWISE
#define CAKE_SW_BWD_BOTH CAKE_OP_SWIGLU_BACKWARD_BOTH
#define CAKE_SWG_FWD_ROW CAKE_OP_SWIGLU_GROUPED_FORWARD_ROWWISE
#define CAKE_SWG_FWD_COL CAKE_OP_SWIGLU_GROUPED_FORWARD_COLWISE
#define CAKE_SWG_FWD_BOTH CAKE_OP_SWIGLU_GROUPED_FORWARD_BOTH
#define CAKE_SWG_BWD_ROW CAKE_OP_SWIGLU_GROUPED_BACKWARD_ROWWISE
#define CAKE_SWG_BWD_COL CAKE_OP_SWIGLU_GROUPED_BACKWARD_COLWISE
#define CAKE_SWG_BWD_BOTH CAKE_OP_SWIGLU_GROUPED_BACKWARD_BOTH

typedef struct cake_program_desc {
  const char *name;   /* "<arch>.<sym>", stable across releases */
  const char *kernel; /* extern "C" symbol in the architecture's fatbin */
  uint16_t family;    /* cake_family_t */
  uint16_t op;        /* cake_op_t */
  uint32_t threads;   /* CTA size, as compiled into __launch_bounds__ */
  uint32_t min_ctas_per_sm;
  int32_t knobs[CAKE_MAX_KNOBS]; /* family knobs in manifest order, after threads/min_ctas */
} cake_program_desc;

typedef struct cake_route_desc {
  uint16_t family;
  uint16_t op;
  int32_t d;          /* normgate row width this route serves; 0 = any */
  int64_t metric_lo;  /* inclusive; normgate: rows per SM, swiglu: M*K */
  int64_t metric_hi;  /* exclusive; INT64_MAX = open */
  int32_t program;    /* index into the architecture's program table */
  int32_t wave_rows;  /* 0: a plain route; else a wave route's unit (CAKE_ROUTE_WAVES) */
  int32_t waves_lo, waves_hi;  /* its wave band [lo, hi), hundredths of a wave */
  int32_t frac_lo, frac_hi;    /* and the last wave's fill [lo, hi], hundredths */
} cake_route_desc;

#endif /* CAKE_KERNELS_COMMON_PROGRAM_DESC_H_ */
