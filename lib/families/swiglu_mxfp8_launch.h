// How a SwiGLU + MXFP8 program is launched for a problem: pure host arithmetic from the
// program's manifest knobs, no CUDA. The kernel reads everything shape-dependent from
// cake_swiglu_mxfp8_params, which swiglu_mxfp8_fill_params() writes; every rule derived from the
// knobs (shared memory sizes, tile pairs, which knob values compile) is a function of
// kernels/common/swiglu_mxfp8_config.h that the kernel's SwigluCfg uses too, so host and device
// agree by construction.
#pragma once
#include <stdint.h>

#include "families/swiglu_launch_common.h"
#include "program_desc.h"
#include "swiglu_mxfp8_config.h"
#include "swiglu_mxfp8_params.h"

namespace cake {

// Manifest knob positions of CAKE_SWIGLU_PROGRAM after threads and min_ctas.
enum SwigluKnob {
  kSwTileRows = 0,
  kSwTileCols = 1,
  kSwRowsPerThread = 2,
  kSwLoadHint = 3,
  kSwSigmoidForm = 4,
  kSwBandForm = 5,
  kSwPipeline = 6,   // optional in a manifest line: 0 when left out; >= 2: staged (stages)
  kSwGroupRows = 7,  // optional in a manifest line: 0 when left out; -2: tile pairs
  kSwColLanes = 8,   // optional in a manifest line: 0 (= 2) when left out; colwise/both
  kSwSlotCols = 9,   // optional in a manifest line: 0 (= 16) when left out; 8: unstaged only
  kSwRowFromTile = 10,  // optional: 0 when left out; 1: both forms, unstaged
  kSwVariant = 11,      // optional: 0 when left out; 1: serves the SwiGLU variants
  kSwColRuns = 12,      // optional: 0 when left out; 1: grouped colwise/both, aligned col_q runs
};

// The staged input ring of a program: stages x a tile's input bytes for staged programs
// (pipeline >= 2), 0 for the others.
uint32_t swiglu_mxfp8_ring_bytes(const cake_program_desc &prog);

// Dynamic shared memory a program may launch with: its ring, and for a grouped program the
// group table of the most experts after it. The handle opts every program with dynamic shared
// memory in to it once.
uint32_t swiglu_mxfp8_dynamic_smem_bytes(const cake_program_desc &prog);

// True when the program's knobs satisfy the kernel's compile-time rules (sw_knobs_ok, the rules
// SwigluCfg static_asserts) and its CTAs fit the SM's shared memory: a manifest test checks
// every swiglu line with it.
bool swiglu_mxfp8_program_ok(const cake_program_desc &prog);

// The router's rule (RouteServes): a call whose `variant` has kSwRouteVariant (a SwiGLU variant)
// is served by the variant programs only; every program serves the plain calls.
bool swiglu_mxfp8_program_serves(const cake_program_desc &prog, int32_t d, int32_t variant);

// True for forms whose output is [M, 2K] (backward).
bool swiglu_mxfp8_form_backward(int form);
bool swiglu_mxfp8_form_rowwise(int form);
bool swiglu_mxfp8_form_colwise(int form);

// CTA tiles of the problem: ceil(M / tile_rows) * ceil(K / tile_cols); -1 on a bad argument.
int64_t swiglu_mxfp8_tiles(const cake_program_desc &prog, int64_t M, int64_t K);

// Grid: swiglu_one_wave() over the CTAs' units of work (tiles, or tile pairs).
LaunchShape swiglu_mxfp8_launch_shape(const cake_program_desc &prog, int64_t M, int64_t K,
                                      int sm_count);

// Buffer sizes of a form (bytes, 64-bit): q is M*O for each enabled orientation, s the padded
// swizzled scale matrix; a disabled orientation gets 0. False on a bad shape or overflow.
struct SwigluMxfp8Sizes {
  int64_t row_q_bytes;
  int64_t row_s_bytes;
  int64_t col_q_bytes;
  int64_t col_s_bytes;
};
bool swiglu_mxfp8_sizes(int form, int64_t M, int64_t K, SwigluMxfp8Sizes *out);

// Fills the kernel parameters. Pointers of a disabled orientation are stored as NULL whatever is
// passed. Returns false (and leaves *out untouched) when the kernel cannot run the problem:
// M or K not a positive multiple of 32, byte counts overflowing int64, more than 2^31-1 tiles,
// or a program of another family/form. The API validates first (multiples of 128, alignment,
// nulls); this is the kernel's own contract.
bool swiglu_mxfp8_fill_params(const cake_program_desc &prog, int64_t M, int64_t K,
                              const void *in, const void *grad, void *row_q, void *row_s,
                              void *col_q, void *col_s, cake_swiglu_mxfp8_params *out);

}  // namespace cake
