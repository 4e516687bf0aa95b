// How a SwiGLU + FP8 blockwise program is launched for a problem: pure host arithmetic from the
// program's manifest knobs, no CUDA. Every rule derived from the knobs is a function of
// kernels/common/swiglu_fp8_config.h that the kernel's SwigluFp8Cfg uses too.
#pragma once
#include <stdint.h>

#include "families/swiglu_mxfp8_launch.h"
#include "program_desc.h"
#include "swiglu_fp8_config.h"
#include "swiglu_fp8_params.h"

namespace cake {

// Manifest knob positions of CAKE_SWIGLU_FP8_PROGRAM after threads and min_ctas.
enum SwigluFp8Knob {
  kF8TileRows = 0,
  kF8RowsPerThread = 1,
  kF8LoadHint = 2,
  kF8SigmoidForm = 3,
  kF8BandForm = 4,
  kF8LoadBatch = 5,  // optional in a manifest line: 0 (all passes) when left out
  kF8Pipeline = 6,   // optional in a manifest line: 0 when left out
  kF8Tail = 7,       // optional in a manifest line: 0 when left out
  kF8Variant = 8,    // optional: 0 when left out; 1: serves the SwiGLU variants
};

// The program's knobs as the kernel's configuration reads them.
SwigluFp8Knobs swiglu_fp8_knobs(const cake_program_desc &prog);

// The Y tile of colwise/both programs, else 0.
uint32_t swiglu_fp8_ytile_bytes(const cake_program_desc &prog);

// Dynamic shared memory a program may launch with: its Y tile, and for a grouped program the
// group table of the most experts after it.
uint32_t swiglu_fp8_dynamic_smem_bytes(const cake_program_desc &prog);

// True when the knobs satisfy the kernel's compile-time rules and min_ctas CTAs fit an SM's
// shared memory: a manifest test checks every line with it.
bool swiglu_fp8_program_ok(const cake_program_desc &prog);

// Whether the program serves a call with M rows: every program when M is a multiple of 128,
// only tail programs (tail knob 1) otherwise.
bool swiglu_fp8_serves_rows(const cake_program_desc &prog, int64_t M);

// The router's rule (RouteServes): `variant` has kSwRouteTail for a call whose M is not a
// multiple of 128 (swiglu_fp8_variant), which only tail programs serve, and kSwRouteVariant for
// a SwiGLU variant, which only variant programs serve.
bool swiglu_fp8_program_serves(const cake_program_desc &prog, int32_t d, int32_t variant);
int32_t swiglu_fp8_variant(int64_t M);

// CTA tiles: ceil(M / tile_rows) * (K / 128); -1 on a bad argument (M not a multiple of
// tile_rows for a program without the tail knob included).
int64_t swiglu_fp8_tiles(const cake_program_desc &prog, int64_t M, int64_t K);

// Grid: one wave at the program's CTAs per SM (never more CTAs than tiles); sm_count <= 0
// launches one CTA per tile.
LaunchShape swiglu_fp8_launch_shape(const cake_program_desc &prog, int64_t M, int64_t K,
                                    int sm_count);

// Buffer sizes of a form (bytes, 64-bit; a disabled orientation gets 0): row_s 4*M*(O/128),
// col_s 4*ceil(M/128)*O. False on a bad shape (M not positive, K not a positive multiple of
// 128) or overflow.
struct SwigluFp8Sizes {
  int64_t out_cols;
  int64_t row_q_bytes, row_s_bytes, col_q_bytes, col_s_bytes;
};
bool swiglu_fp8_sizes(int form, int64_t M, int64_t K, SwigluFp8Sizes *out);

// Fills the kernel parameters (pointers of a disabled orientation stored as NULL). False when
// the kernel cannot run the problem: M not positive (or not a multiple of 128 for a program
// without the tail knob), K not a positive multiple of 128, overflow, more than 2^31-1 tiles, a
// program of another family, or a rule other than 0 and 1.
bool swiglu_fp8_fill_params(const cake_program_desc &prog, int64_t M, int64_t K, int rule,
                            const void *in, const void *grad, void *row_q, void *row_s,
                            void *col_q, void *col_s, cake_swiglu_fp8_params *out);

}  // namespace cake
