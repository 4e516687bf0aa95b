// SwiGLU + MXFP8: the walks of a CTA over its tiles. TileWalk is the register schedules' order
// (k fastest, or grouped row tiles); StagedWalk the staged schedule's, which adds tile pairs.
// Both step without a division per tile.
#pragma once
#include <stdint.h>

#include "swiglu_mxfp8_config.h"

namespace cake {
namespace swiglu {

// The CTA's walk over its tiles (tile = blockIdx.x + i*gridDim.x) in the program's tile order
// (group_rows knob) with no division per tile: a position is (row tile, k tile) for k fastest,
// or (group, index within the group) for grouped orders, i.e. the quotient and remainder of the
// tile by a period (tiles_k, or group_rows*tiles_k); the grid stride is split the same way once,
// so a step is two adds and a carry. Only the last, partial group of a grouped order divides.
template <class Cfg>
struct TileWalk {
  struct Pos {
    uint32_t q, r;
  };
  uint32_t tiles_m, period, step_q, step_r;

  __device__ __forceinline__ TileWalk(uint32_t tiles_k, uint32_t tiles_m_, uint32_t step)
      : tiles_m(tiles_m_), period(Cfg::kGroupRows == 0 ? tiles_k : Cfg::kGroupRows * tiles_k) {
    step_q = step / period;
    step_r = step - step_q * period;
  }
  __device__ __forceinline__ Pos at(uint32_t tile) const {
    const uint32_t q = tile / period;
    return Pos{q, tile - q * period};
  }
  // r < period < 2^31 before and after (the host refuses a group of 2^31 tiles or more:
  // swiglu_mxfp8_fill_params), so r + step_r cannot wrap.
  __device__ __forceinline__ void advance(Pos &s) const {
    s.q += step_q;
    s.r += step_r;
    if (s.r >= period) {
      s.r -= period;
      ++s.q;
    }
  }
  // Row and k offsets of the tile at s (a tile of the problem).
  __device__ __forceinline__ void origin(Pos s, int64_t &m0, int64_t &k0) const {
    uint32_t tm, tk;
    if constexpr (Cfg::kGroupRows == 0) {
      tm = s.q;
      tk = s.r;
    } else {
      constexpr uint32_t G = Cfg::kGroupRows;
      const uint32_t first = s.q * G;
      const uint32_t left = tiles_m - first;
      if (left >= G) {  // a whole group: m fastest over G row tiles
        tk = s.r / G;
        tm = first + (s.r - tk * G);
      } else {
        tk = s.r / left;
        tm = first + (s.r - tk * left);
      }
    }
    m0 = (int64_t)tm * Cfg::kTileRows;
    k0 = (int64_t)tk * Cfg::kTileCols;
  }
};

// The staged loop's sequence of tiles for one CTA: the tile walk's, or with tile pairs the
// tiles of a k-fastest walk over pairs of row tiles, the upper then (where it exists) the lower
// tile of each. `idx` counts walk units (tiles, or pairs) in 32 bits: idx < units <= 2^31 and
// the stride is at most the unit count, so idx + step cannot wrap.
template <class Cfg>
struct StagedWalk {
  struct Pos {
    typename TileWalk<Cfg>::Pos w;
    uint32_t idx, half;
  };
  uint32_t tiles_m, units_m, units, step;  // units_m: row tiles, or pairs of them
  TileWalk<Cfg> walk;

  __device__ __forceinline__ StagedWalk(uint32_t tiles, uint32_t tiles_k, uint32_t step_)
      : tiles_m(tiles / tiles_k),
        units_m(sw_walk_rows(tiles_m, Cfg::kPairRows)),
        units(units_m * tiles_k),
        step(step_),
        walk(tiles_k, units_m, step_) {}
  __device__ __forceinline__ Pos start() const { return Pos{walk.at(blockIdx.x), blockIdx.x, 0}; }
  __device__ __forceinline__ bool valid(const Pos &u) const { return u.idx < units; }
  __device__ __forceinline__ bool has_lower(const Pos &u) const {
    return 2 * u.w.q + 1 < tiles_m;
  }
  // 0: a tile on its own; 1: the upper tile of a pair; 2: the lower one (phase2_item).
  __device__ __forceinline__ int pair_state(const Pos &u) const {
    if constexpr (Cfg::kPairRows == 2) return u.half ? 2 : (has_lower(u) ? 1 : 0);
    return 0;
  }
  __device__ __forceinline__ void origin(const Pos &u, int64_t &m0, int64_t &k0) const {
    if constexpr (Cfg::kPairRows == 2) {
      m0 = int64_t(2 * u.w.q + u.half) * Cfg::kTileRows;
      k0 = int64_t(u.w.r) * Cfg::kTileCols;
    } else {
      walk.origin(u.w, m0, k0);
    }
  }
  __device__ __forceinline__ void advance(Pos &u) const {
    if constexpr (Cfg::kPairRows == 2) {
      if (u.half == 0 && has_lower(u)) {
        u.half = 1;
        return;
      }
      u.half = 0;
    }
    walk.advance(u.w);
    u.idx += step;
  }
};

}  // namespace swiglu
}  // namespace cake
