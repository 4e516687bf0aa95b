// SwiGLU + MXFP8, grouped forms: the staged loop's walk over tile pairs within each expert.
// The group table counts an expert's row units of two tiles (2 x tile_rows rows each); the
// CTAs walk the units in k-fastest order, as StagedWalk walks an ungrouped problem's pairs, and
// take the upper then (where the expert has rows there) the lower tile of each. A position
// carries its tile's expert, found once a unit, so neither the walk nor the schedule searches
// the table again for the unit's second tile.
//
// A pair's col_q pieces are stored together (swiglu_phase2.cuh), 16 bytes a store, so a unit is
// walked as a pair only where the expert's first row of col_q is 16-byte aligned (T and the
// expert's first row multiples of 16); elsewhere its tiles are walked as tiles on their own,
// which store each row of a partial or unaligned piece byte by byte. The lower tile exists only
// below the expert's last row, so the upper tile of a pair is whole.
#pragma once
#include <stdint.h>

#include "swiglu_groups.cuh"
#include "swiglu_mxfp8_config.h"
#include "swiglu_tile_walk.cuh"

namespace cake {
namespace swiglu {

template <class Cfg>
struct GroupedPairWalk {
  static_assert(Cfg::kPairRows == 2 && Cfg::kGroupRows == 0, "grouped tile pairs");
  static constexpr int64_t kUnitRows = 2 * Cfg::kTileRows;
  struct Pos {
    typename TileWalk<Cfg>::Pos w;  // (row unit over every expert, k tile)
    uint32_t idx, half;             // the walk's unit count; 0 upper tile, 1 lower
    int32_t e;                      // the unit's expert (0 past the last unit: not read)
    int64_t um0;                    // the unit's first row within its expert
    bool lower, paired;             // the expert has rows in the lower tile; walked as a pair
  };
  swg::GroupTable t;
  const uint8_t *col_q;  // the whole [O, T] col_q
  int64_t ld;            // its row stride, T
  uint32_t units, step;
  TileWalk<Cfg> walk;

  // units: the problem's tiles (its row units x the K tiles).
  __device__ __forceinline__ GroupedPairWalk(const swg::GroupTable &t_, uint32_t units_,
                                             uint32_t tiles_k, uint32_t step_,
                                             const uint8_t *col_q_, int64_t ld_)
      : t(t_),
        col_q(col_q_),
        ld(ld_),
        units(units_),
        step(step_),
        walk(tiles_k, t_.row_tiles, step_) {}

  // Finds the unit's expert (the last one found is the first guess) and its rows.
  __device__ __forceinline__ void enter(Pos &u) const {
    if (u.idx >= units) return;
    uint32_t local;
    u.e = t.find(u.w.q, local, u.e);
    const swg::ExpertRows x = t.rows(u.e);
    u.um0 = (int64_t)local * kUnitRows;
    u.lower = u.um0 + Cfg::kTileRows < x.rows;
    u.paired = u.lower && ((reinterpret_cast<uintptr_t>(col_q + x.start) | (uintptr_t)ld) & 15) == 0;
  }
  __device__ __forceinline__ Pos start() const {
    Pos u{walk.at(blockIdx.x), blockIdx.x, 0u, 0, 0, false, false};
    enter(u);
    return u;
  }
  __device__ __forceinline__ bool valid(const Pos &u) const { return u.idx < units; }
  __device__ __forceinline__ int32_t expert(const Pos &u) const { return u.e; }
  // 0: a tile on its own; 1: the upper tile of a pair; 2: the lower one (phase2_item).
  __device__ __forceinline__ int pair_state(const Pos &u) const {
    return u.paired ? (u.half ? 2 : 1) : 0;
  }
  // The tile's rows within its expert's view and its k columns.
  __device__ __forceinline__ void origin(const Pos &u, int64_t &m0, int64_t &k0) const {
    m0 = u.um0 + (int64_t)u.half * Cfg::kTileRows;
    k0 = int64_t(u.w.r) * Cfg::kTileCols;
  }
  __device__ __forceinline__ void advance(Pos &u) const {
    if (u.half == 0 && u.lower) {
      u.half = 1;
      return;
    }
    u.half = 0;
    walk.advance(u.w);
    u.idx += step;
    enter(u);
  }
};

}  // namespace swiglu
}  // namespace cake
