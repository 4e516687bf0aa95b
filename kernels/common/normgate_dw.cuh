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

// After the CTA wrote level-0 node `node` to the workspace: climb while this CTA is the last
// child to arrive; the CTA that completes the top level rounds into dw. Every thread of the
// CTA calls this; `flag` is a shared word.
__device__ __forceinline__ void tree_publish(const cake_normgate_params &p, const cake_ng_tree &t,
                                          int64_t node, int *flag) {
  int level = 0;
  for (;;) {
    const cake_ng_level here = cake_ng_level_of(&t, level);
    if (level == t.levels - 1) {
      __syncthreads();
      double *root = tree_node(p, here, 0);
      for (int col = threadIdx.x; col < p.d; col += blockDim.x) {
        store_dw(p, col, __ldcg(root + col));
        root[col] = 0.0;  // consumed: the workspace is left all zero
      }
      return;
    }
    const cake_ng_level up = cake_ng_level_of(&t, level + 1);
    __threadfence();
    __syncthreads();
    const int64_t parent = node / CAKE_NG_TREE_FANOUT;
    const int64_t children = min(int64_t(CAKE_NG_TREE_FANOUT), here.nodes - parent * CAKE_NG_TREE_FANOUT);
    if (threadIdx.x == 0) {
      const unsigned old = atomicAdd(tree_counter(p, up, parent), 1u);
      *flag = old == static_cast<unsigned>(children - 1);
    }
    __syncthreads();
    if (!*flag) return;
    __threadfence();
    if (threadIdx.x == 0) *tree_counter(p, up, parent) = 0u;  // left zero for reuse
    double *src = tree_node(p, here, parent * CAKE_NG_TREE_FANOUT);
    double *dst = tree_node(p, up, parent);
    for (int col = threadIdx.x; col < p.d; col += blockDim.x) {
      dst[col] = tree64(src + col, children, p.d);
      // The children are consumed: zero them, so that a later call of any shape finds the
      // workspace as the caller first gave it (all zero), counters and nodes alike.
      for (int64_t c = 0; c < children; ++c) src[c * p.d + col] = 0.0;
    }
    ++level;
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
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) *flag = atomicAdd(ticket, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!*flag) return;
  __threadfence();
  for (int col = threadIdx.x; col < p.d; col += blockDim.x) {
    store_dw(p, col, __ldcg(acc + col));
    acc[col] = 0.0;
  }
  if (threadIdx.x == 0) *ticket = 0u;
}

}  // namespace ng
}  // namespace cake
