// The experts of a grouped SwiGLU launch as one CTA sees them (docs/spec/swiglu-grouped.md, "How
// it runs"): the group table every CTA builds in shared memory from the E device offsets, and
// the expert of a row tile. Shared by both families' grouped programs.
//
//   table    end[e]       the effective end row c[e] (running maximum of the offsets, clamped
//                         to T)
//            tile_end[e]  row tiles of experts 0..e (each expert ceil(n_e / tile_rows))
//            pad_end[e]   p[e+1]: padded rows of experts 0..e (each ceil(n_e / 128) * 128)
//   built by three block-wide scans over a chunk of consecutive experts a thread, so E up to
//   1024 costs a few barriers, not a loop over the experts; CTA 0 writes the status word.
//   lookup   the first expert whose tile_end passes the row tile: a binary search (experts with
//            no rows have tile_end equal to the one before and are never found).
#pragma once
#include <stdint.h>

#include "cake.h"
#include "swiglu_grouped_layout.h"
#include "swiglu_grouped_params.h"
#include "vector_io.cuh"

namespace cake {
namespace swg {

// One expert's rows, as a tile of it needs them.
struct ExpertRows {
  int64_t start;      // c[e-1]: its first row in `in`
  int64_t rows;       // n_e
  int64_t pad_start;  // p[e]: its first padded scale row
};

struct GroupTable {
  const int32_t *end, *tile_end, *pad_end;  // [E] each, in shared memory
  int32_t experts;
  uint32_t row_tiles;  // tile_end[E-1]: the row tiles of every expert

  __device__ __forceinline__ ExpertRows rows(int32_t e) const {
    const int64_t start = e > 0 ? end[e - 1] : 0;
    return ExpertRows{start, end[e] - start, e > 0 ? pad_end[e - 1] : 0};
  }
  // The expert of row tile rt (< row_tiles) and the tile's index within it. `hint`, an expert
  // found before, is tried first: a CTA's tiles climb the row tiles, often within one expert.
  __device__ __forceinline__ int32_t find(uint32_t rt, uint32_t &local, int32_t hint) const {
    const uint32_t hint_start = hint > 0 ? (uint32_t)tile_end[hint - 1] : 0u;
    if (rt >= hint_start && rt < (uint32_t)tile_end[hint]) {
      local = rt - hint_start;
      return hint;
    }
    int32_t lo = 0, hi = experts - 1;
    while (lo < hi) {
      const int32_t mid = (lo + hi) >> 1;
      if ((uint32_t)tile_end[mid] > rt) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    local = rt - (lo > 0 ? (uint32_t)tile_end[lo - 1] : 0u);
    return lo;
  }
};

__device__ __forceinline__ int32_t imax(int32_t a, int32_t b) { return a > b ? a : b; }
__device__ __forceinline__ int32_t imin(int32_t a, int32_t b) { return a < b ? a : b; }

// Exclusive scan of one value a thread over the CTA in thread order: the sum, or (kMax) the
// maximum of values >= 0 (0 for thread 0). `scratch` holds a word a warp; every thread of the
// CTA calls it, and it leaves the scratch free for the next scan.
template <bool kMax>
__device__ __forceinline__ int32_t cta_exclusive_scan(int32_t v, int32_t *scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int32_t incl = v;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int32_t o = __shfl_up_sync(0xFFFFFFFFu, incl, d);
    if (lane >= d) incl = kMax ? imax(incl, o) : incl + o;
  }
  int32_t excl = __shfl_up_sync(0xFFFFFFFFu, incl, 1);
  if (lane == 0) excl = 0;
  if (lane == 31) scratch[warp] = incl;
  __syncthreads();
  int32_t base = 0;
  for (int w = 0; w < warp; ++w) base = kMax ? imax(base, scratch[w]) : base + scratch[w];
  __syncthreads();
  return kMax ? imax(base, excl) : base + excl;
}

// Builds the CTA's group table in dynamic shared memory at g.table_offset
// (swg_table_bytes(E, blockDim.x) bytes) for row tiles of kTileRows rows, and writes the status
// word (CTA 0). Every thread of the CTA calls it; the table is visible to all when it returns.
template <int kTileRows>
__device__ __forceinline__ GroupTable build_group_table(const cake_swiglu_groups &g) {
  const int32_t E = g.experts;
  const int32_t T = (int32_t)g.tokens;  // T < 2^31 (the host's rule)
  int32_t *const end = reinterpret_cast<int32_t *>(dynamic_smem<uint8_t>() + g.table_offset);
  int32_t *const tile_end = end + E;
  int32_t *const pad_end = tile_end + E;
  int32_t *const scratch = pad_end + E;
  const int32_t nt = (int32_t)blockDim.x, tid = (int32_t)threadIdx.x;
  for (int32_t i = tid; i < E; i += nt) end[i] = g.offsets[i];  // the raw offsets, coalesced
  __syncthreads();

  // This thread's experts [first, last): the running maximum of the clamped offsets, and the
  // rule checks against each raw offset's predecessor.
  const int32_t per = (E + nt - 1) / nt;
  const int32_t first = imin(tid * per, E), last = imin(first + per, E);
  int32_t prev = first > 0 ? end[first - 1] : 0, run = 0;
  bool decreasing = false, past = false;
  for (int32_t i = first; i < last; ++i) {
    const int32_t raw = end[i];
    decreasing |= raw < prev;
    past |= raw > T;
    prev = raw;
    run = imax(run, imin(imax(raw, 0), T));
  }
  // The effective end before this chunk (the scan's first barrier follows every raw read).
  const int32_t c0 = cta_exclusive_scan<true>(run, scratch);
  int32_t c = c0, tiles = 0, pads = 0;
  for (int32_t i = first; i < last; ++i) {
    const int32_t cur = imax(c, imin(imax(end[i], 0), T));
    const int32_t n = cur - c;
    tiles += (n + kTileRows - 1) / kTileRows;
    pads += (n + (int32_t)kSwgScaleRows - 1) / (int32_t)kSwgScaleRows * (int32_t)kSwgScaleRows;
    end[i] = cur;
    c = cur;
  }
  int32_t tb = cta_exclusive_scan<false>(tiles, scratch);
  int32_t pb = cta_exclusive_scan<false>(pads, scratch);
  c = c0;
  for (int32_t i = first; i < last; ++i) {
    const int32_t n = end[i] - c;
    c = end[i];
    tb += (n + kTileRows - 1) / kTileRows;
    pb += (n + (int32_t)kSwgScaleRows - 1) / (int32_t)kSwgScaleRows * (int32_t)kSwgScaleRows;
    tile_end[i] = tb;
    pad_end[i] = pb;
  }
  // The votes are the table's closing barriers too.
  const int dec = __syncthreads_or(decreasing), pst = __syncthreads_or(past);
  if (g.status != nullptr && blockIdx.x == 0 && threadIdx.x == 0) {
    *g.status = (dec ? CAKE_SWIGLU_GROUPED_OFFSETS_DECREASING : 0) |
                (pst ? CAKE_SWIGLU_GROUPED_OFFSETS_PAST_TOKENS : 0);
  }
  return GroupTable{end, tile_end, pad_end, E, (uint32_t)tile_end[E - 1]};
}

// A tile as a grouped problem places it: its expert and its row offset within the expert (the
// schedules ask only grouped problems: an ungrouped tile is its own, expert 0).
struct TileAt {
  int32_t e;
  int64_t m0;
};

// The problem of an ungrouped program (both families): the parameters' own tiles, the
// parameters themselves for every tile.
template <class P>
struct PlainTiles {
  static constexpr bool kGrouped = false;
  const P &p;
  __device__ __forceinline__ explicit PlainTiles(const P &p_) : p(p_) {}
  __device__ __forceinline__ const P &base() const { return p; }
  __device__ __forceinline__ uint32_t tiles() const { return (uint32_t)p.tiles; }
  __device__ __forceinline__ const P &view(int32_t) const { return p; }
};

// The walk side of a grouped problem (both families): every expert's row tiles of kTileRows
// rows x the K tiles, and a tile's expert; the family's problem adds the expert's view.
template <class P, int kTileRows>
struct GroupedTiles {
  static constexpr bool kGrouped = true;
  const P &p;  // the whole token buffer
  GroupTable t;
  mutable int32_t hint = 0;  // the expert of the last tile located
  __device__ __forceinline__ GroupedTiles(const P &p_, const cake_swiglu_groups &g)
      : p(p_), t(build_group_table<kTileRows>(g)) {}
  __device__ __forceinline__ const P &base() const { return p; }
  // Below 2^31: the host bounds the row tiles of every split.
  __device__ __forceinline__ uint32_t tiles() const { return t.row_tiles * (uint32_t)p.tiles_k; }
  // The tile at the walk's row offset m0 (row tile x tile_rows).
  __device__ __forceinline__ TileAt locate(int64_t m0) const {
    uint32_t local;
    hint = t.find((uint32_t)(m0 / kTileRows), local, hint);
    return TileAt{hint, (int64_t)local * kTileRows};
  }
};

}  // namespace swg
}  // namespace cake
