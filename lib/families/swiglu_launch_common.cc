#include "families/swiglu_launch_common.h"

#include <algorithm>

#include "families/swiglu_fp8_launch.h"
#include "families/swiglu_mxfp8_launch.h"
#include "mxfp8_encode.h"

namespace cake {

namespace {
constexpr int64_t kMaxTiles = INT32_MAX;  // the kernels count tiles in 32 bits
}  // namespace

bool swiglu_program_variant(const cake_program_desc &prog) {
  if (prog.family == CAKE_FAMILY_SWIGLU_MXFP8) return prog.knobs[kSwVariant] == 1;
  if (prog.family == CAKE_FAMILY_SWIGLU_FP8) return prog.knobs[kF8Variant] == 1;
  return false;
}

int64_t swiglu_walk_units(const cake_program_desc &prog, int64_t tiles, int64_t tiles_k) {
  if (tiles < 1 || tiles_k < 1 || !swiglu_program_variant(prog)) return tiles;
  return tiles / tiles_k;
}

bool swiglu_smem_fits(uint32_t min_ctas_per_sm, int64_t cta_smem) {
  if (cta_smem > kSwMaxSmemPerCta) return false;
  return int64_t{min_ctas_per_sm} * (cta_smem + kSwSmemReservedPerCta) <= kSwSmemPerSm;
}

LaunchShape swiglu_one_wave(const cake_program_desc &prog, int64_t units, uint32_t smem_bytes,
                            int sm_count) {
  LaunchShape s{};
  s.grid[1] = s.grid[2] = 1;
  s.block = prog.threads;
  s.smem_bytes = smem_bytes;
  if (units < 1) units = 1;
  int64_t ctas = std::min(units, kMaxTiles);
  if (sm_count > 0) {
    const int64_t wave = int64_t{sm_count} * std::max<int64_t>(prog.min_ctas_per_sm, 1);
    ctas = std::min(ctas, wave);
    // At one CTA a SM (the 512-thread programs) the CTAs stride over the units, so the busiest
    // SM does ceil(units / ctas) of them and the others finish a unit earlier and idle: the
    // fewest CTAs that keep that count give every SM the same count but the last (1.001-1.041x
    // for the MXFP8 family's paired programs at 2048x4096 ... 8192x4096, 0.994-1.007x from
    // 12288x7168 up; H200, docs/performance.md). With several CTAs a SM the same rule leaves
    // some SMs a CTA short and the others' CTAs just as busy (0.94-1.01x), and the SMs' counts
    // differ by at most one unit anyway.
    if (ctas <= sm_count) ctas = mx::ceil_div(units, mx::ceil_div(units, ctas));
  }
  s.grid[0] = static_cast<uint32_t>(ctas);
  return s;
}

}  // namespace cake
