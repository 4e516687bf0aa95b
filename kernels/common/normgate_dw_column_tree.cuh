// The column tree of the dw reduction (normgate_workspace.h, cake_ng_coltree): each column's
// nodes contiguous, so that a CTA reduces a column's span with 16-byte coalesced reads. After
// the walk, the levels above level 0 are built between grid barriers and the last one is
// reduced into dw, a column a CTA (reduce_column_tree: tuned programs whose tree knob is 1, or
// 2 for the grouped tree, whose leaves normgate_dw_grouped_tree.cuh builds).
#pragma once
#include <stdint.h>

#include "cta_timeline.cuh"
#include "normgate_dw_grouped_tree.cuh"
#include "normgate_dw_store.cuh"
#include "normgate_dw_sync.cuh"
#include "normgate_params.h"
#include "normgate_workspace.h"

namespace cake {
namespace ng {

// warp_pairs_tree's halving: at lane bit kS, a lane holding kC pair sums keeps those whose
// index bit matches its lane bit, adds its partner's of the same index, and holds kC / 2.
// Template steps, so that every index is a constant (a runtime loop put v in local memory).
template <int kC, int kS, int kN>
__device__ __forceinline__ void halve_pairs(double (&v)[kN], int lane) {
  if constexpr (kC > 1) {
    const bool odd = (lane >> kS) & 1;
#pragma unroll
    for (int i = 0; i < kC / 2; ++i) {
      const double even_v = v[2 * i], odd_v = v[2 * i + 1];
      v[i] = __dadd_rn(odd ? odd_v : even_v,
                       __shfl_xor_sync(0xffffffffu, odd ? even_v : odd_v, 1 << kS));
    }
    halve_pairs<kC / 2, kS + 1>(v, lane);
  }
}

// A warp's chunk of 64 * kV contiguous nodes from node `first` (`chunk` its first pair; those
// past `count` +0): the chunk's subtree, adjacent pairs first, in every lane: the same tree as
// 32 lanes each taking a run of 2 * kV nodes (run_tree) and xor-shuffles across the lanes, but
// read so that a warp's 16-byte loads are 512 contiguous bytes (lane l takes pairs 32k + l),
// where the lanes' runs made each warp load touch 32 lines (measured only together with the
// zeroing after the loads, warp_chunk_tree; alone it was slower). The levels over the lane
// bits come first: kV - 1
// shuffles halve the lane's values while they combine lane bits 0 .. log2(kV) - 1 (each lane
// keeps the pairs whose index bit matches its lane bit and receives its partner's), plain
// xor-shuffles combine the lane bits above, and xor-shuffles over the bits the halving left in
// the lane (pair k's sum sits in the lanes with l % kV == k) combine the pairs. a + b and b + a
// are the same bits, so either lane of a pair may add.
template <int kV>
__device__ __forceinline__ double warp_pairs_tree(double2 *chunk, int64_t first, int64_t count) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  double v[kV];
#pragma unroll
  for (int k = 0; k < kV; ++k) {
    const int64_t j = first + 2 * (32 * k + lane);  // the pair's first node
    const bool in = j < count;
    const double2 w = in ? __ldcg(chunk + 32 * k + lane) : make_double2(0.0, 0.0);
    v[k] = __dadd_rn(w.x, j + 1 < count ? w.y : 0.0);
  }
  halve_pairs<kV, 0>(v, lane);
  double r = v[0];
#pragma unroll
  for (int h = kV; h < 32; h <<= 1) r = __dadd_rn(r, __shfl_xor_sync(0xffffffffu, r, h));
#pragma unroll
  for (int h = 1; h < kV; h <<= 1) r = __dadd_rn(r, __shfl_xor_sync(0xffffffffu, r, h));
  return r;
}

// warp_pairs_tree over any chunk: one of more than 64 * kMaxV nodes is taken as its two halves
// (the same tree's top level), so that a lane holds at most kMaxV pair sums: 16 spilled in the
// 512-thread programs, and the out-of-line levels keep fewer still (their registers count
// against the caller's).
template <int kV, int kMaxV>
__device__ __forceinline__ double warp_chunk_sum(double2 *chunk, int64_t first, int64_t count) {
  if constexpr (kV > kMaxV) {
    const double left = warp_chunk_sum<kV / 2, kMaxV>(chunk, first, count);
    return __dadd_rn(left, warp_chunk_sum<kV / 2, kMaxV>(chunk + 16 * kV, first + 32 * kV, count));
  } else {
    return warp_pairs_tree<kV>(chunk, first, count);
  }
}

// The chunk's subtree, then its nodes zeroed: every store after every load. With the zeroing
// between the loads (each `.cg` load behind this thread's `.cg` stores to the same span) the
// tail's reads cost 2.4 / 9.4 / 21 us at 3534 / 7684 / 16384 x 48, growing with the run a
// thread read (8, 16, 32 nodes), not with the bytes, about a round trip a load; loads first,
// the column tree is 1.02-1.07x faster (H200).
template <int kV, int kMaxV = 8>
__device__ __forceinline__ double warp_chunk_tree(double2 *chunk, int64_t first, int64_t count) {
  static_assert(kV >= 1 && kV <= 16 && (kV & (kV - 1)) == 0, "pairs a lane");
  const double r = warp_chunk_sum<kV, kMaxV>(chunk, first, count);
  const int lane = static_cast<int>(threadIdx.x % 32);
#pragma unroll
  for (int k = 0; k < kV; ++k) {
    if (first + 2 * (32 * k + lane) < count) __stcg(chunk + 32 * k + lane, make_double2(0.0, 0.0));
  }
  return r;
}

// With `grouped` (the grouped tree's level 0; plain levels pass none), a span that reaches
// past the stored leaves builds those from the singles as it reads (grouped_run_tree).
template <int kThreads, bool kGrouped = false, int kMaxV = 8>
__device__ __forceinline__ double reduce_span(double *level, const cake_ng_collevel &lv, int d,
                                              int col, int64_t first, double *scratch,
                                              const GroupedLeaves grouped = GroupedLeaves()) {
  constexpr int kMaxRun = CAKE_NG_COLUMN_SPAN / kThreads;
  constexpr int kWarps = kThreads / 32;
  static_assert(kMaxRun >= 2 && kMaxRun <= 32 && kMaxRun * kThreads == CAKE_NG_COLUMN_SPAN, "runs");
  static_assert(kWarps <= 32 && (kWarps & (kWarps - 1)) == 0, "one warp reduces the warps");
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t count = lv.nodes;
  const int64_t span_end = min(count, first + CAKE_NG_COLUMN_SPAN);
  int run = 2;
  while (run < kMaxRun && int64_t(run) * kThreads < count - first) run <<= 1;
  double r = 0.0;
  if constexpr (!kGrouped) {  // every node stored; the warp's chunk of 32 runs, read coalesced
    const int64_t wfirst = first + int64_t(tid / 32) * 32 * run;
    double2 *at =
        reinterpret_cast<double2 *>(level + cake_ng_colnode_index(wfirst, d, col, lv.span));
    constexpr int kV16 = (kMaxRun < 16 ? kMaxRun : 16) / 2;  // pairs a lane at runs of 16
    switch (run) {
      case 2: r = warp_chunk_tree<1, kMaxV>(at, wfirst, count); break;
      case 4: r = warp_chunk_tree<2, kMaxV>(at, wfirst, count); break;
      case 8: r = warp_chunk_tree<4, kMaxV>(at, wfirst, count); break;
      case 16: r = warp_chunk_tree<kV16, kMaxV>(at, wfirst, count); break;
      default: r = warp_chunk_tree<kMaxRun / 2, kMaxV>(at, wfirst, count); break;
    }
  } else {  // every leaf past min(groups, span end) built (none where the groups cover the span)
    const int64_t base = first + int64_t(tid) * run;  // this thread's run
    const int64_t stored = min(grouped.groups, span_end);
    double *node = level + cake_ng_colnode_index(min(base, count - 1), d, col, lv.span);
    double *singles = grouped.singles + col * grouped.singles_span;
    double *built = scratch + 32;
    const int64_t bf = max(first, stored);
    const int64_t sc = grouped.singles_count;
#define CAKE_NG_GROUPED_RUN(n) \
  grouped_run_tree<n, kThreads>(node, base, count, stored, singles, sc, built, bf, span_end)
    switch (run) {
      case 2: r = CAKE_NG_GROUPED_RUN(2); break;
      case 4: r = CAKE_NG_GROUPED_RUN(4); break;
      case 8: r = CAKE_NG_GROUPED_RUN(8); break;
      case 16: r = CAKE_NG_GROUPED_RUN(kMaxRun < 16 ? kMaxRun : 16); break;
      default: r = CAKE_NG_GROUPED_RUN(kMaxRun); break;
    }
#undef CAKE_NG_GROUPED_RUN
  }
  if constexpr (kGrouped) {  // the lanes' runs into the warp's subtree (warp_chunk_tree has)
#pragma unroll
    for (int h = 1; h < 32; h <<= 1) r = __dadd_rn(r, __shfl_xor_sync(0xffffffffu, r, h));
  }
  if (tid % 32 == 0) scratch[tid / 32] = r;
  __syncthreads();
  if (tid < 32) {
    r = tid < kWarps ? scratch[tid] : 0.0;
#pragma unroll
    for (int h = 1; h < kWarps; h <<= 1) r = __dadd_rn(r, __shfl_xor_sync(0xffffffffu, r, h));
  }
  __syncthreads();  // scratch is reused
  return r;
}

// The column tree's last level into dw, after grid barrier b: a column a CTA, one contiguous
// read of its span; the last CTA to leave the barrier resets what is still set. The end of both
// tails (one level, inline; more, out of line). kGrouped: the last level is the grouped tree's
// leaves (one level only), those past the groups built from the singles as they are read.
template <int kThreads, bool kGrouped, int kMaxV = 8>
__device__ __forceinline__ void reduce_top(const DwTarget &out, char *ws, int d,
                                           const cake_ng_coltree &t, int level, unsigned *words,
                                           int b, double *scratch, const GroupedLeaves &grouped) {
  tree_barrier(words, b);
  tl_mark(2);  // development builds only (cta_timeline.cuh)
  const unsigned left = threadIdx.x == 0 ? leave_barrier(words, b) : 0u;
  const cake_ng_collevel top = cake_ng_collevel_of(&t, level);
  double *src = reinterpret_cast<double *>(ws + top.node_offset);
  for (int col = blockIdx.x; col < d; col += gridDim.x) {
    const double r = reduce_span<kThreads, kGrouped, kMaxV>(src, top, d, col, 0, scratch, grouped);
    if (threadIdx.x == 0) store_dw(out, col, r);
  }
  if (threadIdx.x == 0) reset_after_leaving(words, b, left);
}

// More than one level (more than 2^14 level-0 nodes: millions of rows): the levels between grid
// barriers, then the last one into dw. Out of line, so that the one-level tail every common size
// takes stays short and straight (the grouped tree 2-4% faster up to 7684x48 than with one
// tail for both, H200, docs/performance.md). Parameters by value: their address taken
// here made every parameter read of the tail a generic load (another 1-4%).
// The out-of-line levels hold two pair sums a lane (warp_chunk_tree): a call's registers
// count against its caller's, and these levels serve millions of rows, where they are a small
// part of the time.
constexpr int kLevelsMaxV = 2;
template <int kThreads>
__device__ __noinline__ void reduce_column_levels(const DwTarget out, void *workspace, int d,
                                                  const cake_ng_coltree t, unsigned *words,
                                                  double *scratch, const GroupedLeaves grouped) {
  char *ws = static_cast<char *>(workspace);
  int level = 0, b = 0;
  for (; level + 1 < t.levels; ++level) {
    tree_barrier(words, b++);
    const cake_ng_collevel here = cake_ng_collevel_of(&t, level);
    const cake_ng_collevel up = cake_ng_collevel_of(&t, level + 1);
    double *src = reinterpret_cast<double *>(ws + here.node_offset);
    double *dst = reinterpret_cast<double *>(ws + up.node_offset);
    for (int64_t item = blockIdx.x; item < up.nodes * d; item += gridDim.x) {
      const int col = static_cast<int>(item / up.nodes);
      const int64_t parent = item % up.nodes;
      const double r =
          level == 0 && grouped.singles != nullptr
              ? reduce_span<kThreads, true>(src, here, d, col, parent * CAKE_NG_COLUMN_SPAN, scratch, grouped)
              : reduce_span<kThreads, false, kLevelsMaxV>(src, here, d, col, parent * CAKE_NG_COLUMN_SPAN, scratch);
      if (threadIdx.x == 0) dst[cake_ng_colnode_index(parent, d, col, up.span)] = r;
    }
  }
  reduce_top<kThreads, false, kLevelsMaxV>(out, ws, d, t, level, words, b, scratch, grouped);
}

// Tuned backward programs, deterministic package, after the walk (every level-0 node of the
// column tree written, normgate_workspace.h): after a grid barrier, while a level has more
// than CAKE_NG_COLUMN_SPAN nodes the CTAs build the next, a (column, span) a CTA, and after
// one more barrier reduce the last level's columns into dw, a column a CTA. At up to 2^14
// units (10^6 rows at D = 128) that is one barrier and one contiguous read of each column.
// `words`: [1] unit counter, [2 + b] grid barrier b; the last CTA to leave the last barrier
// resets what is still set. Every thread calls this; `scratch` holds a double a warp (and, for
// the grouped tree, the leaves it builds). kGrouped: the grouped tree, whose level 0 is the
// leaves, those past the groups built from the singles as they are read (`grouped`).
template <int kThreads, bool kGrouped = false>
__device__ __forceinline__ void reduce_column_tree(const cake_normgate_params &p,
                                                   const cake_ng_coltree &t, unsigned *words,
                                                   double *scratch,
                                                   const GroupedLeaves grouped = GroupedLeaves()) {
  if (t.levels > 1) {
    reduce_column_levels<kThreads>(dw_target(p), p.workspace, p.d, t, words, scratch, grouped);
    return;
  }
  // 1024 threads have 64 registers: four pair sums a lane.
  reduce_top<kThreads, kGrouped, (kThreads >= 1024 ? 4 : 8)>(
      dw_target(p), static_cast<char *>(p.workspace), p.d, t, 0, words, 0, scratch, grouped);
}

}  // namespace ng
}  // namespace cake
