// The tile layout's mean-square sums (normgate_general_layout.h, cake_ng_tile_of): where each of
// a thread's slots sits in its row and group, a variant group's sum of one value a leaf in the
// canonical group order of docs/spec/normgate.md (the order of normgate_variant_group.cuh's
// one-leaf layout), and a default-form row's sum in the row tree of the default form (the order
// of the general programs' group_reduce), so that every program of an operation gives the same
// bits. Shared by the tile forward (normgate_variant_tile.cuh) and the tile backward
// (normgate_variant_tile_bwd.cuh); both run on the CPU in host tests
// (tests/host/cuda_host_emulation.h).
#pragma once
#include <stdint.h>

#include "normgate_general_layout.h"

namespace cake {
namespace ng {

// A slot's place, fixed for the walk, packed in one register: leaf (bits 0-10), group (11-21),
// its row's index among the thread's rows (22-25), used (26), and same (27): the slot's group
// is the previous slot's, in one row.
__device__ __forceinline__ int tile_leaf(uint32_t pl) { return static_cast<int>(pl & 0x7ffu); }
__device__ __forceinline__ int tile_group(uint32_t pl) { return static_cast<int>((pl >> 11) & 0x7ffu); }
__device__ __forceinline__ int tile_sub(uint32_t pl) { return static_cast<int>((pl >> 22) & 0xfu); }
__device__ __forceinline__ bool tile_used(uint32_t pl) { return (pl >> 26 & 1u) != 0; }
__device__ __forceinline__ bool tile_same(uint32_t pl) { return (pl >> 27 & 1u) != 0; }

// The row geometry of a tile for width d and group size `group`, seen by thread `tid`.
struct TileGeom {
  int lanes, rs, rg, j, row_groups;  // lanes a row, slots a row, this thread's row group and lane
  int n, q;                          // leaves a row, leaves a group
  int lshift;                        // log2(lanes) when lanes is a power of two
  bool pow2;                         // lanes is a power of two (else a row of all the CTA's warps)
  bool cross;                        // CTA-uniform: some group spans 32-leaf runs
  bool whole_runs;                   // ... and every group is whole runs
};

__device__ __forceinline__ TileGeom tile_geom(const cake_ng_tile &t, int d, int group, int tid) {
  TileGeom g;
  g.lanes = t.lanes;
  g.rs = t.row_slots;
  g.rg = tid / t.lanes;
  g.j = tid % t.lanes;
  g.row_groups = t.row_groups;
  g.n = d / 8;
  g.q = group / 8;
  g.cross = g.n > 32 && (32 % g.q) != 0;
  g.whole_runs = (g.q & 31) == 0;
  g.lshift = 0;
  while ((1 << g.lshift) < g.lanes) ++g.lshift;
  g.pow2 = (g.lanes & (g.lanes - 1)) == 0;
  return g;
}

// Slot m's place for this thread.
__device__ __forceinline__ uint32_t tile_place(const cake_ng_tile &t, const TileGeom &g, int m) {
  const int sub = m / g.rs, ms = m % g.rs;
  const int c = g.j + ms * g.lanes;
  const bool used = sub < t.rows_per_thread && c < g.n;
  const int gi = used ? c / g.q : 0;
  const bool same = m > 0 && ms != 0 && used && gi == (c - g.lanes) / g.q;
  return uint32_t(used ? c : 0) | (uint32_t(gi) << 11) | (uint32_t(sub) << 22) |
         (used ? 1u << 26 : 0u) | (same ? 1u << 27 : 0u);
}

// total[m] for each slot: sum_of(place) for a used slot that starts its group in its row, the
// slot before's total for the slots after it in the same group and row (tile_same: a group
// wider than the row's lanes), 0 for an unused slot.
template <int kSlots, class SumOf>
__device__ __forceinline__ void group_totals(const uint32_t (&place)[kSlots], float (&total)[kSlots],
                                             SumOf sum_of) {
  float last = 0.0f;
#pragma unroll
  for (int m = 0; m < kSlots; ++m) {
    if (tile_same(place[m])) {
      total[m] = last;
    } else {
      total[m] = tile_used(place[m]) ? sum_of(place[m]) : 0.0f;
    }
    last = total[m];
  }
}

// total[m]: the sum over slot m's group of v (one value a leaf; v is overwritten by its piece
// scans), in every slot of the group. Every thread of the CTA calls this. red: kSlots * kThreads
// floats of shared memory, written (when some group spans 32-leaf runs) and read between one
// barrier and the caller's next: a caller alternates two buffers between calls, so that no
// barrier is needed after the reads.
template <int kThreads, int kSlots>
__device__ __forceinline__ void tile_group_sums(float (&v)[kSlots], const uint32_t (&place)[kSlots],
                                                const TileGeom &g, float *red,
                                                float (&total)[kSlots]) {
  const int tid = static_cast<int>(threadIdx.x);
  const int q = g.q;
  // The piece scans (normgate_variant_group.cuh's order): the scan is relative to the piece's
  // start, so unused slots (v = 0, dist 0) and neighbouring rows of a warp never mix in.
#pragma unroll
  for (int m = 0; m < kSlots; ++m) {
    const bool used = tile_used(place[m]);
    const int c = tile_leaf(place[m]);
    const int gstart = tile_group(place[m]) * q;
    const int dist = used ? c - max(gstart, c & ~31) : 0;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      const float s = __shfl_up_sync(0xffffffffu, v[m], off);
      if (dist >= off) v[m] = __fadd_rn(v[m], s);
    }
    if (!g.cross) {  // the group lies in this warp and slot: its sum is the scan at its last leaf
      const int to_end = used ? gstart + q - 1 - c : 0;
      total[m] = __shfl_sync(0xffffffffu, v[m], (tid & 31) + to_end);
    }
  }
  if (g.cross && g.whole_runs && g.lanes == 32) {
    // Groups of whole runs, a row in one warp: the row's runs are this warp's slots in order,
    // their sums the scans at lane 31; a group's sum adds its runs left to right.
    float run[kSlots];
#pragma unroll
    for (int m = 0; m < kSlots; ++m) run[m] = __shfl_sync(0xffffffffu, v[m], 31);
#pragma unroll
    for (int m = 0; m < kSlots; ++m) {
      float sum = 0.0f;
      bool first = true;
#pragma unroll
      for (int m2 = 0; m2 < kSlots; ++m2) {  // warp-uniform: slot m2's run is in m's group
        if (tile_used(place[m2]) && tile_sub(place[m2]) == tile_sub(place[m]) &&
            tile_group(place[m2]) == tile_group(place[m])) {
          sum = first ? run[m2] : __fadd_rn(sum, run[m2]);
          first = false;
        }
      }
      total[m] = sum;
    }
  } else if (g.cross && g.whole_runs) {
    // Groups of whole runs: each run's sum (the scan at its last leaf) into shared memory, a
    // group's sum its runs' left to right.
    const int nruns = g.n >> 5, qr = q >> 5;
#pragma unroll
    for (int m = 0; m < kSlots; ++m) {
      const int c = tile_leaf(place[m]);
      if (tile_used(place[m]) && (c & 31) == 31) {
        red[(tile_sub(place[m]) * g.row_groups + g.rg) * nruns + (c >> 5)] = v[m];
      }
    }
    __syncthreads();
    group_totals(place, total, [&](uint32_t pl) {
      const float *r = red + (tile_sub(pl) * g.row_groups + g.rg) * nruns + tile_group(pl) * qr;
      float sum = r[0];
      for (int i = 1; i < qr; ++i) sum = __fadd_rn(sum, r[i]);
      return sum;
    });
  } else if (g.cross) {
#pragma unroll
    for (int m = 0; m < kSlots; ++m) red[m * kThreads + tid] = v[m];
    __syncthreads();
    // A group's sum: its pieces' sums (the scans at each piece's last leaf) left to right.
    group_totals(place, total, [&](uint32_t pl) {
      const int gstart = tile_group(pl) * q, gend = gstart + q;
      const float *row_scan = red + tile_sub(pl) * g.rs * kThreads + g.rg * g.lanes;
      auto at = [&](int e) {
        return g.pow2 ? row_scan[(e >> g.lshift) * kThreads + (e & (g.lanes - 1))]
                      : row_scan[(e / g.lanes) * kThreads + e % g.lanes];
      };
      int e = min(gend, ((gstart >> 5) + 1) << 5) - 1;  // the first piece's last leaf
      float sum = at(e);
      while (e < gend - 1) {
        e = min(e + 32, gend - 1);
        sum = __fadd_rn(sum, at(e));
      }
      return sum;
    });
  }
}

// total[m]: the sum over slot m's row of v (one value a leaf, +0 past the row's end; v is
// overwritten) in the default form's row order: the leaves padded with +0 to P, a power of two,
// added by a full binary tree, adjacent pairs first. Every thread of the CTA calls this. A row of
// at most 32 leaves lies in `lanes` (= P) lanes of one warp, one slot: an xor butterfly over
// them is that tree, the same bits in every lane (a + b and b + a round alike). A wider row's
// slots each hold an aligned run of 32 leaves a warp (lanes is a multiple of 32): the butterfly
// gives each run's sum, the runs' sums meet in red and a butterfly over P / 32 of them in each
// warp builds the tree's top. red: kSlots * kThreads floats, used as by tile_group_sums (a
// caller alternates two buffers between calls).
template <int kThreads, int kSlots>
__device__ __forceinline__ void tile_row_tree_sums(float (&v)[kSlots], const uint32_t (&place)[kSlots],
                                                   const TileGeom &g, float *red,
                                                   float (&total)[kSlots]) {
  const int span = min(g.lanes, 32);
#pragma unroll
  for (int m = 0; m < kSlots; ++m) {
    for (int off = 1; off < span; off <<= 1) {
      v[m] = __fadd_rn(v[m], __shfl_xor_sync(0xffffffffu, v[m], off));
    }
  }
  if (g.n <= 32) {
#pragma unroll
    for (int m = 0; m < kSlots; ++m) total[m] = v[m];
    return;
  }
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int held = (g.n + 31) >> 5;  // runs with a leaf of the row; the others are +0
  int runs = 1;                      // P / 32
  while (runs * 32 < g.n) runs <<= 1;
#pragma unroll
  for (int m = 0; m < kSlots; ++m) {
    if (lane == 0 && tile_used(place[m])) {
      red[(tile_sub(place[m]) * g.row_groups + g.rg) * 32 + (tile_leaf(place[m]) >> 5)] = v[m];
    }
  }
  __syncthreads();
  // Each aligned set of `runs` lanes builds the tree from the same values.
  const int r = lane & (runs - 1);
  float last = 0.0f;
  int last_sub = -1;
#pragma unroll
  for (int m = 0; m < kSlots; ++m) {
    const int sub = tile_sub(place[m]);
    if (sub != last_sub) {  // warp-uniform: a thread's slots go row by row
      float s = r < held ? red[(sub * g.row_groups + g.rg) * 32 + r] : 0.0f;
      for (int off = 1; off < runs; off <<= 1) s = __fadd_rn(s, __shfl_xor_sync(0xffffffffu, s, off));
      last = s;
      last_sub = sub;
    }
    total[m] = last;
  }
}

}  // namespace ng
}  // namespace cake
