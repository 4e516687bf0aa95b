// Launch arithmetic the SwiGLU families share (lib/families/swiglu_mxfp8_launch.cc,
// swiglu_fp8_launch.cc): the launch shape, the shared-memory limits a program must fit, and the
// grid rule. Pure host arithmetic, no CUDA.
#pragma once
#include <stdint.h>

#include "program_desc.h"

namespace cake {

constexpr int64_t kSwMaxSmemPerCta = 227 * 1024;  // sm_90/sm_100 opt-in limit of one CTA
constexpr int64_t kSwSmemPerSm = 228 * 1024;      // sm_90/sm_100 shared memory of one SM
constexpr int64_t kSwSmemReservedPerCta = 1024;   // the system's share of each resident CTA

// The bits of a SwiGLU call's route variant (RouteServes, lib/router/router.h): kSwRouteTail, M
// not a multiple of 128 (FP8 blockwise: only tail programs serve it); kSwRouteVariant, a
// SwiGLU variant (weighted or clamped: only variant programs serve it, docs/spec/swiglu-mxfp8.md,
// "Variants").
constexpr int32_t kSwRouteTail = 1;
constexpr int32_t kSwRouteVariant = 2;

// Whether a program of either SwiGLU family serves the variants (its variant knob).
bool swiglu_program_variant(const cake_program_desc &prog);

// The units of work of a launch over `tiles` tiles of tiles_k k-tiles a row tile: the tiles, or
// for a variant program, which takes whole row tiles, the row tiles.
int64_t swiglu_walk_units(const cake_program_desc &prog, int64_t tiles, int64_t tiles_k);

struct LaunchShape {
  uint32_t grid[3];    // CTAs; grid[1] = grid[2] = 1 (the kernel strides over tiles by gridDim.x)
  uint32_t block;      // threads, as compiled into __launch_bounds__
  uint32_t smem_bytes; // dynamic shared memory: the staged programs' input ring, else 0 (the Y
                       // tile is static shared memory)
};

// True when a CTA's shared memory (bytes) is within one CTA's limit and min_ctas such CTAs fit
// one SM's shared memory together.
bool swiglu_smem_fits(uint32_t min_ctas_per_sm, int64_t cta_smem);

// The launch of `units` units of work (tiles, or tile pairs), each CTA striding over them: one
// wave at the program's CTAs per SM (prog.min_ctas_per_sm, the count its register budget is
// fitted to) times sm_count, never more CTAs than units (units < 1 counts as 1); sm_count <= 0
// (unknown) launches one CTA per unit. Block: prog.threads.
LaunchShape swiglu_one_wave(const cake_program_desc &prog, int64_t units, uint32_t smem_bytes,
                            int sm_count);

}  // namespace cake
