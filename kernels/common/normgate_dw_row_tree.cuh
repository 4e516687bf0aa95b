// The row tree of the dw reduction (normgate_workspace.h, cake_ng_tree): level-0 nodes of d
// doubles, CAKE_NG_TREE_FANOUT children a parent. Built two ways: by the counter protocol, the
// CTA that completes a parent building it (tree_publish: the general programs), or level by
// level between grid barriers after the walk (build_tree_cooperative: tuned programs whose
// tree knob is 0).
#pragma once
#include <stdint.h>

#include "normgate_dw_store.cuh"
#include "normgate_dw_sync.cuh"
#include "normgate_params.h"
#include "normgate_workspace.h"

namespace cake {
namespace ng {

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
template <class Store = StoreDw>
__device__ __forceinline__ void store_root(const cake_normgate_params &p, const cake_ng_tree &t,
                                           Store store = Store{}) {
  __syncthreads();
  double *root = tree_node(p, cake_ng_level_of(&t, t.levels - 1), 0);
  for (int col = threadIdx.x; col < p.d; col += blockDim.x) {
    store(p, col, __ldcg(root + col));
    root[col] = 0.0;
  }
}

// After the CTA wrote level-0 node `node`: climb while this CTA is the last to arrive at a
// parent; the CTA that completes the top level rounds into dw. Every thread of the CTA calls
// this; `flag` is a shared word. `store` rounds the root into dw.
template <class Store = StoreDw>
__device__ __forceinline__ void tree_publish(const cake_normgate_params &p, const cake_ng_tree &t,
                                             int64_t node, int *flag, Store store = Store{}) {
  for (int level = 0;; ++level) {
    if (level == t.levels - 1) {
      store_root(p, t, store);
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

}  // namespace ng
}  // namespace cake
