// The dw reduction of the normgate backward, both packages (layout and order in
// normgate_workspace.h). Rounding to dw happens once, from FP64.
#pragma once
#include <stdint.h>

#include "cta_timeline.cuh"
#include "normgate_params.h"
#include "normgate_workspace.h"
#include "vector_io.cuh"

namespace cake {
namespace ng {

enum : int32_t { kDwAccumulate = 1, kDwSkip = 2 };  // = CAKE_NORMGATE_DW_* in cake.h

// Double to bf16 with one rounding: round to odd into FP32 (16 spare bits), then RNE to bf16.
__device__ __forceinline__ uint16_t double_to_bf16_rn(double v) {
  float f = __double2float_rz(v);
  if (static_cast<double>(f) != v && !isnan(v)) f = __uint_as_float(__float_as_uint(f) | 1u);
  return static_cast<uint16_t>(pack_bf16x2(f, 0.0f) & 0xffffu);
}

// dw[col] = round(sum) or round(dw[col] + sum). The +0.0 makes an exact zero +0 whatever the
// tree's padding, so the bits never depend on how the tree was cut.
// Where dw goes: what store_dw reads of the parameters, as values, for code that must not
// take the parameters' address (an out-of-line callee would read every field through a
// generic pointer).
struct DwTarget {
  void *dw;
  int f32, accumulate;
};
__device__ __forceinline__ DwTarget dw_target(const cake_normgate_params &p) {
  return DwTarget{p.dw, p.dw_f32 ? 1 : 0, (p.dw_flags & kDwAccumulate) ? 1 : 0};
}

__device__ __forceinline__ void store_dw(const DwTarget &t, int col, double sum) {
  double v = sum + 0.0;
  if (t.f32) {  // global accesses (t.dw may come through an out-of-line call: no space known)
    float *dw = static_cast<float *>(t.dw);
    if (t.accumulate) v += static_cast<double>(__ldcg(dw + col));
    __stcg(dw + col, __double2float_rn(v));
  } else {
    unsigned short *dw = static_cast<unsigned short *>(t.dw);
    if (t.accumulate) v += static_cast<double>(__uint_as_float(uint32_t(__ldcg(dw + col)) << 16));
    __stcg(dw + col, static_cast<unsigned short>(double_to_bf16_rn(v)));
  }
}
__device__ __forceinline__ void store_dw(const cake_normgate_params &p, int col, double sum) {
  store_dw(dw_target(p), col, sum);
}

__device__ __forceinline__ double *tree_node(const cake_normgate_params &p, const cake_ng_level &l,
                                             int64_t node) {
  return reinterpret_cast<double *>(static_cast<char *>(p.workspace) + l.node_offset) + node * p.d;
}

__device__ __forceinline__ unsigned *tree_counter(const cake_normgate_params &p,
                                                  const cake_ng_level &l, int64_t node) {
  return reinterpret_cast<unsigned *>(static_cast<char *>(p.workspace) + l.counter_offset) + node;
}

// FP64 tree over kN children `stride` apart starting at child `base` (missing ones +0),
// adjacent pairs first; unrolled at compile time, every load independent.
template <int kN>
__device__ __forceinline__ double tree_sum(const double *first, int64_t count, int64_t stride,
                                           int base) {
  if constexpr (kN == 1) {
    return base < count ? __ldcg(first + base * stride) : 0.0;
  } else {
    return __dadd_rn(tree_sum<kN / 2>(first, count, stride, base),
                     tree_sum<kN / 2>(first, count, stride, base + kN / 2));
  }
}

__device__ __forceinline__ double tree64(const double *first, int64_t count, int64_t stride) {
  return tree_sum<CAKE_NG_TREE_FANOUT>(first, count, stride, 0);
}

// GPU-scope acquire-release fence: what the counter protocol needs (a release before the
// arrival, an acquire after the last one); __threadfence() is sequentially consistent
// (MEMBAR.SC), which costs more and buys nothing here.
__device__ __forceinline__ void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

// Counter protocol: the CTA's writes are ordered before its arrival by a barrier, then one
// fence and the atomic by thread 0 (cumulativity carries the other threads' writes); the last
// to arrive resets the counter and fences before the CTA reads what the others wrote.
// Thread 0 only; true when this arrival completes the count.
// The reset after the acquire fence, which then has no store of this thread to wait for (no
// difference measured: 0.985-1.012x, session 12 run 7).
__device__ __forceinline__ bool arrive_last(unsigned *counter, unsigned arrivals, unsigned expected) {
  const bool last = atomicAdd(counter, arrivals) + arrivals == expected;
  if (last) {
    fence_acq_rel_gpu();
    *counter = 0u;  // left zero for reuse
  }
  return last;
}

// Children of level-(level+1) node `parent` (this CTA arrived last) into the parent; the
// children are zeroed so that a later call of any shape finds the workspace all zero.
__device__ __forceinline__ void combine_children(const cake_normgate_params &p, const cake_ng_tree &t,
                                                 int level, int64_t parent) {
  const cake_ng_level here = cake_ng_level_of(&t, level);
  const cake_ng_level up = cake_ng_level_of(&t, level + 1);
  const int64_t children = min(int64_t(CAKE_NG_TREE_FANOUT), here.nodes - parent * CAKE_NG_TREE_FANOUT);
  double *src = tree_node(p, here, parent * CAKE_NG_TREE_FANOUT);
  double *dst = tree_node(p, up, parent);
  for (int col = threadIdx.x; col < p.d; col += blockDim.x) {
    dst[col] = tree64(src + col, children, p.d);
    for (int64_t c = 0; c < children; ++c) src[c * p.d + col] = 0.0;
  }
}

__device__ __forceinline__ int64_t tree_children(const cake_ng_tree &t, int level, int64_t parent) {
  const cake_ng_level here = cake_ng_level_of(&t, level);
  return min(int64_t(CAKE_NG_TREE_FANOUT), here.nodes - parent * CAKE_NG_TREE_FANOUT);
}

// The root is complete: round it into dw (and zero it).
__device__ __forceinline__ void store_root(const cake_normgate_params &p, const cake_ng_tree &t) {
  __syncthreads();
  double *root = tree_node(p, cake_ng_level_of(&t, t.levels - 1), 0);
  for (int col = threadIdx.x; col < p.d; col += blockDim.x) {
    store_dw(p, col, __ldcg(root + col));
    root[col] = 0.0;
  }
}

// After the CTA wrote level-0 node `node`: climb while this CTA is the last to arrive at a
// parent; the CTA that completes the top level rounds into dw. Every thread of the CTA calls
// this; `flag` is a shared word.
__device__ __forceinline__ void tree_publish(const cake_normgate_params &p, const cake_ng_tree &t,
                                             int64_t node, int *flag) {
  for (int level = 0;; ++level) {
    if (level == t.levels - 1) {
      store_root(p, t);
      return;
    }
    const int64_t parent = node / CAKE_NG_TREE_FANOUT;
    __syncthreads();
    if (threadIdx.x == 0) {
      fence_acq_rel_gpu();
      const cake_ng_level up = cake_ng_level_of(&t, level + 1);
      *flag = arrive_last(tree_counter(p, up, parent), 1u,
                          static_cast<unsigned>(tree_children(t, level, parent)));
    }
    __syncthreads();
    if (!*flag) return;
    combine_children(p, t, level, parent);
    node = parent;
  }
}

// Children of level-(level+1) node `parent` into the parent, every thread of the CTA working:
// `split` threads per column, each a 64/split-child subtree, the partial sums added in shared
// `scratch` ([threads] doubles) in the same tree order. The children are zeroed.
__device__ __forceinline__ void combine_children_wide(const cake_normgate_params &p,
                                                      const cake_ng_tree &t, int level,
                                                      int64_t parent, double *scratch) {
  const int split = min(8, static_cast<int>(blockDim.x) / p.d);  // a power of two
  if (split <= 1) {
    combine_children(p, t, level, parent);
    return;
  }
  const cake_ng_level here = cake_ng_level_of(&t, level);
  const cake_ng_level up = cake_ng_level_of(&t, level + 1);
  const int64_t children = min(int64_t(CAKE_NG_TREE_FANOUT), here.nodes - parent * CAKE_NG_TREE_FANOUT);
  double *src = tree_node(p, here, parent * CAKE_NG_TREE_FANOUT);
  const int col = threadIdx.x % p.d, part = threadIdx.x / p.d;
  const bool active = part < split;
  const int span = CAKE_NG_TREE_FANOUT / split;  // children per thread: 8, 16 or 32
  if (active) {
    const double *first = src + col;
    double v;
    switch (span) {  // an aligned subtree of the 64-child tree, adjacent pairs first
      case 8: v = tree_sum<8>(first, children, p.d, part * 8); break;
      case 16: v = tree_sum<16>(first, children, p.d, part * 16); break;
      default: v = tree_sum<32>(first, children, p.d, part * 32); break;
    }
    for (int c = part * span; c < (part + 1) * span && c < children; ++c) src[c * p.d + col] = 0.0;
    scratch[threadIdx.x] = v;
  }
  __syncthreads();
  for (int h = 1; h < split; h <<= 1) {
    if (active && part % (2 * h) == 0) {
      scratch[threadIdx.x] = __dadd_rn(scratch[threadIdx.x], scratch[threadIdx.x + h * p.d]);
    }
    __syncthreads();
  }
  if (part == 0) tree_node(p, up, parent)[col] = scratch[col];
}

// Acquire load of a GPU-scope counter.
__device__ __forceinline__ unsigned load_acquire_gpu(const unsigned *p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Grid barrier of a cooperative launch (every CTA resident): every thread of every CTA calls
// it; what a CTA wrote before it, every CTA sees after it. `counter` counts the arrivals; the
// caller resets it once every CTA has left.
__device__ __forceinline__ void grid_barrier(unsigned *counter) {
  __syncthreads();
  if (threadIdx.x == 0) {
    fence_acq_rel_gpu();
    atomicAdd(counter, 1u);
    while (load_acquire_gpu(counter) < gridDim.x) __nanosleep(32);
    fence_acq_rel_gpu();
  }
  __syncthreads();
}

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
// thread read (8, 16, 32 nodes), not with the bytes, about a round trip a load (session 12
// run 3); loads first, the column tree is 1.02-1.07x faster (run 5).
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

// Grid barrier `b` (words[2 + b]); CTA 0 resets the one before, which every CTA has left once
// all have arrived at this one.
__device__ __forceinline__ void tree_barrier(unsigned *words, int b) {
  grid_barrier(&words[2 + b]);
  if (b >= 1 && blockIdx.x == 0 && threadIdx.x == 0) words[1 + b] = 0u;
}

// After the last barrier `b` (thread 0): the CTA counts itself out of it, on the same word, so
// that the last to leave (the count reaching twice the grid) can reset it and the unit counter
// (every CTA stopped fetching before arriving) without an exit ticket after the reduction. The
// atomic's round trip overlaps the reduction: reset_after_leaving takes its result at the end.
__device__ __forceinline__ unsigned leave_barrier(unsigned *words, int b) {
  return atomicAdd(&words[2 + b], 1u);
}
__device__ __forceinline__ void reset_after_leaving(unsigned *words, int b, unsigned left) {
  if (left == 2u * gridDim.x - 1u) {
    words[2 + b] = 0u;
    words[1] = 0u;
  }
}

// Column `col` of every node of `level`, reduced to dw: the full binary tree over the nodes
// (adjacent pairs first, missing ones +0), which is what the levels above would build (every
// node of the tree is an aligned dyadic interval; the padding only changes the sign of an exact
// zero, which store_dw makes +0). Each thread takes an aligned run of nodes in registers, the
// runs meet in shared `scratch` (one double a thread); the nodes are zeroed. Every thread of
// the CTA calls this; nodes <= kColumnRun x threads. A column's nodes are 8-byte reads d
// doubles apart (a 32-byte sector each): past two nodes a thread, building a level first was
// faster on the H200 (2650 level-0 nodes at 3534x48: 77.8 us reduced directly, 74.4 us with
// level 1 built first; 195 and 773 nodes: 14% and 8% faster directly; docs/performance.md).
constexpr int kColumnRun = 2;

__device__ __forceinline__ void reduce_column(const cake_normgate_params &p, const cake_ng_tree &t,
                                              int level, int col, double *scratch) {
  const cake_ng_level lv = cake_ng_level_of(&t, level);
  int64_t leaves = 1;
  while (leaves < lv.nodes) leaves <<= 1;
  const int threads = static_cast<int>(blockDim.x);  // a power of two
  const int run = leaves > threads ? static_cast<int>(leaves / threads) : 1;
  const int active = static_cast<int>(leaves / run);
  const int tid = static_cast<int>(threadIdx.x);
  double *first = reinterpret_cast<double *>(static_cast<char *>(p.workspace) + lv.node_offset) + col;
  double v = 0.0;
  if (tid < active) {
    const int base = tid * run;
    static_assert(kColumnRun == 2, "the runs below");
    v = run == 1 ? tree_sum<1>(first, lv.nodes, p.d, base)  // adjacent pairs first
                 : tree_sum<2>(first, lv.nodes, p.d, base);
    for (int64_t k = base; k < base + run && k < lv.nodes; ++k) __stcg(first + k * p.d, 0.0);
  }
  scratch[tid] = v;
  for (int h = 1; h < active; h <<= 1) {
    __syncthreads();
    if (tid % (2 * h) == 0 && tid < active) scratch[tid] = __dadd_rn(scratch[tid], scratch[tid + h]);
  }
  __syncthreads();
  if (tid == 0) store_dw(p, col, scratch[0]);
  __syncthreads();  // scratch is reused
}

// Tuned backward programs, deterministic package, after the walk (every level-0 node written):
// the levels are built in parallel, a grid barrier before each, until one has at most
// kColumnRun x threads nodes; after one more grid barrier the CTAs reduce its columns to dw in
// parallel, a column a CTA (reduce_column). `words` after the tree
// (normgate_workspace.h): [1] unit counter, [2 + b] grid barrier b; the last CTA to leave the
// last barrier resets what is still set. Every thread calls this; `scratch` holds one double
// a thread.
__device__ __forceinline__ void build_tree_cooperative(const cake_normgate_params &p,
                                                       const cake_ng_tree &t, unsigned *words,
                                                       double *scratch) {
  int level = 0, b = 0;
  while (cake_ng_level_of(&t, level).nodes > int64_t(kColumnRun) * blockDim.x) {
    tree_barrier(words, b++);
    const int64_t parents = cake_ng_level_of(&t, level + 1).nodes;
    for (int64_t n = blockIdx.x; n < parents; n += gridDim.x) {
      combine_children_wide(p, t, level, n, scratch);
      __syncthreads();  // scratch is reused
    }
    ++level;
  }
  tree_barrier(words, b++);
  const unsigned left = threadIdx.x == 0 ? leave_barrier(words, b - 1) : 0u;
  for (int col = blockIdx.x; col < p.d; col += gridDim.x) reduce_column(p, t, level, col, scratch);
  if (threadIdx.x == 0) reset_after_leaving(words, b - 1, left);
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
// tail for both, docs/performance.md session 11). Parameters by value: their address taken
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

// Non-deterministic package. Each CTA adds its FP64 column sums into the workspace accumulator
// (one atomic per column and CTA, or per chunk in the general program); then nondet_finish: the
// last CTA to arrive (ticket) rounds into dw and zeroes accumulator and ticket.
__device__ __forceinline__ void nondet_add(const cake_normgate_params &p, int col, double v) {
  atomicAdd(static_cast<double *>(p.workspace) + col, v);
}

__device__ __forceinline__ void nondet_finish(const cake_normgate_params &p, int *flag) {
  double *acc = static_cast<double *>(p.workspace);
  unsigned *ticket = reinterpret_cast<unsigned *>(static_cast<char *>(p.workspace) +
                                                  cake_ng_nondet_counter_offset(p.d));
  __syncthreads();
  if (threadIdx.x == 0) {
    fence_acq_rel_gpu();
    *flag = arrive_last(ticket, 1u, gridDim.x);
    if (*flag) ticket[1] = 0u;  // the tuned programs' unit counter: every CTA has stopped fetching
  }
  __syncthreads();
  if (!*flag) return;
  for (int col = threadIdx.x; col < p.d; col += blockDim.x) {
    store_dw(p, col, __ldcg(acc + col));
    acc[col] = 0.0;
  }
}

}  // namespace ng
}  // namespace cake
