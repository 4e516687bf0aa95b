// The dw reduction of the normgate backward, both packages (layout and order in
// normgate_workspace.h). Rounding to dw happens once, from FP64.
#pragma once
#include <stdint.h>

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
__device__ __forceinline__ void store_dw(const cake_normgate_params &p, int col, double sum) {
  double v = sum + 0.0;
  if (p.dw_f32) {
    float *dw = static_cast<float *>(p.dw);
    if (p.dw_flags & kDwAccumulate) v += static_cast<double>(dw[col]);
    dw[col] = __double2float_rn(v);
  } else {
    uint16_t *dw = static_cast<uint16_t *>(p.dw);
    if (p.dw_flags & kDwAccumulate) v += static_cast<double>(__uint_as_float(uint32_t(dw[col]) << 16));
    dw[col] = double_to_bf16_rn(v);
  }
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
__device__ __forceinline__ bool arrive_last(unsigned *counter, unsigned arrivals, unsigned expected) {
  const bool last = atomicAdd(counter, arrivals) + arrivals == expected;
  if (last) {
    *counter = 0u;  // left zero for reuse
    fence_acq_rel_gpu();
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

// After the CTA wrote node `node` of level `level`: climb while this CTA is the last to arrive
// at a parent; the CTA that completes the top level rounds into dw. Every thread of the CTA
// calls this; `flag` is a shared word.
__device__ __forceinline__ void tree_publish(const cake_normgate_params &p, const cake_ng_tree &t,
                                             int64_t node, int *flag, int level = 0) {
  for (;; ++level) {
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
