// The grouped column tree's level 0 (normgate_workspace.h): leaves below `groups` are nodes
// the walk stored, one per aligned group of CAKE_NG_GROUP_UNITS units; the leaves past them are
// built by the tail from the single units' nodes as it reads them.
#pragma once
#include <stdint.h>

#include "normgate_workspace.h"

namespace cake {
namespace ng {

// One thread's run of kRun contiguous nodes from `run` (node `base`; those past `count` +0,
// and the pad after an odd count is +0 already): its subtree, adjacent pairs first, loaded
// kSub at a time; the nodes read are zeroed after every load (warp_chunk_tree says why).
template <int kRun>
__device__ __forceinline__ double run_tree(double2 *run, int64_t base, int64_t count) {
  constexpr int kSub = kRun < 8 ? kRun : 8;
  double v[kRun / kSub];
#pragma unroll
  for (int s = 0; s < kRun / kSub; ++s) {
    double u[kSub];
#pragma unroll
    for (int k = 0; k < kSub; k += 2) {
      const int j = s * kSub + k;  // node base + j
      const double2 w = base + j < count ? __ldcg(run + j / 2) : make_double2(0.0, 0.0);
      u[k] = w.x;
      u[k + 1] = base + j + 1 < count ? w.y : 0.0;
    }
#pragma unroll
    for (int w = 1; w < kSub; w <<= 1) {
#pragma unroll
      for (int k = 0; k < kSub; k += 2 * w) u[k] = __dadd_rn(u[k], u[k + w]);
    }
    v[s] = u[0];
  }
#pragma unroll
  for (int w = 1; w < kRun / kSub; w <<= 1) {
#pragma unroll
    for (int k = 0; k < kRun / kSub; k += 2 * w) v[k] = __dadd_rn(v[k], v[k + w]);
  }
#pragma unroll
  for (int j = 0; j < kRun; j += 2) {
    if (base + j < count) __stcg(run + j / 2, make_double2(0.0, 0.0));  // global (STG), not generic
  }
  return v[0];
}

// The grouped tree's level 0 (normgate_workspace.h): leaves below `groups` are stored nodes;
// a leaf past them is built from CAKE_NG_GROUP_UNITS single units' nodes (those past `singles`
// +0), column `col`'s at singles + col * singles_span.
struct GroupedLeaves {
  double *singles = nullptr;  // nullptr: a plain level, every node stored
  int64_t singles_span = 0, singles_count = 0, groups = 0;
};

// The grouped tree's leaves [built_first, built_end) of a span, built from their
// CAKE_NG_GROUP_UNITS singles each (one column's, `singles`; those past `singles_count` +0), a
// leaf a thread, into `built`; the leaves from `stored` on are built ones.
template <int kThreads>
__device__ __forceinline__ void build_leaves(double *singles, int64_t singles_count, int64_t stored,
                                             double *built, int64_t built_first, int64_t built_end) {
  for (int64_t i = built_first + threadIdx.x; i < built_end; i += kThreads) {
    const int64_t s0 = (i - stored) * CAKE_NG_GROUP_UNITS;
    built[i - built_first] =
        run_tree<CAKE_NG_GROUP_UNITS>(reinterpret_cast<double2 *>(singles + s0), s0, singles_count);
  }
}

// kRun leaves from `base` (node: leaf base's slot) into u: stored ones (below `stored`) read with
// 16-byte accesses, the others +0. zero_stored clears them once the CTA's reads are issued
// (warp_chunk_tree says why not between them).
template <int kRun>
__device__ __forceinline__ void load_stored(double *node, int64_t base, int64_t stored, double (&u)[kRun]) {
#pragma unroll
  for (int j = 0; j < kRun; j += 2) {
    const int64_t i = base + j;
    u[j] = 0.0;
    u[j + 1] = 0.0;
    if (i + 1 < stored) {
      const double2 w = __ldcg(reinterpret_cast<double2 *>(node + j));
      u[j] = w.x;
      u[j + 1] = w.y;
    } else if (i < stored) {
      u[j] = __ldcg(node + j);
    }
  }
}

template <int kRun>
__device__ __forceinline__ void zero_stored(double *node, int64_t base, int64_t stored) {
#pragma unroll
  for (int j = 0; j < kRun; j += 2) {
    const int64_t i = base + j;
    if (i + 1 < stored) {
      __stcg(reinterpret_cast<double2 *>(node + j), make_double2(0.0, 0.0));
    } else if (i < stored) {
      __stcg(node + j, 0.0);
    }
  }
}

// The built leaves of u (from `stored` to `count`) from `built`; then u's subtree.
template <int kRun>
__device__ __forceinline__ double join_built(double (&u)[kRun], int64_t base, int64_t count,
                                             int64_t stored, const double *built, int64_t built_first) {
#pragma unroll
  for (int j = 0; j < kRun; ++j) {
    const int64_t i = base + j;
    if (i >= stored && i < count) u[j] = built[i - built_first];
  }
#pragma unroll
  for (int w = 1; w < kRun; w <<= 1) {
#pragma unroll
    for (int k = 0; k < kRun; k += 2 * w) u[k] = __dadd_rn(u[k], u[k + w]);
  }
  return u[0];
}

// run_tree's order over kRun leaves from `base` of a grouped level 0 whose leaves from `stored`
// on are built from the singles. Runs of up to 8: this thread's stored leaves are loaded first
// and are in flight while the CTA builds the span's other leaves (one round of loads). Longer
// runs (spans of more than 8 x kThreads leaves: millions of rows) take 8 leaves at a time after
// the build, merged as a binary counter whose levels are registers: the registers of the walk
// bound the tail's. Every thread of the CTA calls this.
template <int kRun, int kThreads>
__device__ __forceinline__ double grouped_run_tree(double *node, int64_t base, int64_t count,
                                                   int64_t stored, double *singles,
                                                   int64_t singles_count, double *built,
                                                   int64_t built_first, int64_t built_end) {
  if constexpr (kRun <= 8) {
    double u[kRun];
    load_stored<kRun>(node, base, stored, u);
    build_leaves<kThreads>(singles, singles_count, stored, built, built_first, built_end);
    __syncthreads();
    const double r = join_built<kRun>(u, base, count, stored, built, built_first);
    zero_stored<kRun>(node, base, stored);
    return r;
  } else {
    constexpr int kParts = kRun / 8;
    constexpr int kTop = kParts == 2 ? 1 : 2;
    static_assert(kParts == 2 || kParts == 4, "runs of 16 or 32 leaves");
    build_leaves<kThreads>(singles, singles_count, stored, built, built_first, built_end);
    __syncthreads();
    double level[kTop + 1];
#pragma unroll 1
    for (int q = 0; q < kParts; ++q) {
      double u[8];
      load_stored<8>(node + 8 * q, base + 8 * q, stored, u);
      double v = join_built<8>(u, base + 8 * q, count, stored, built, built_first);
      const int top = min(__ffs(~q) - 1, kTop);  // merge with the left siblings below it
#pragma unroll
      for (int l = 0; l <= kTop; ++l) {
        if (l < top) v = __dadd_rn(level[l], v);
        if (l == top) level[l] = v;
      }
    }
#pragma unroll 1
    for (int q = 0; q < kParts; ++q) zero_stored<8>(node + 8 * q, base + 8 * q, stored);
    return level[kTop];
  }
}

}  // namespace ng
}  // namespace cake
