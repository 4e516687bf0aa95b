// The row groups of the general programs (normgate_general_layout.h) as a thread sees them: its
// group, its lane in the group (the leaf it holds) and its warp. Apart from normgate_general.cuh
// so that code run on the CPU (tests/host/cuda_host_emulation.h) can include it alone.
#pragma once

#include "normgate_general_layout.h"

namespace cake {
namespace ng {

// This thread's place among the row groups of a general program.
struct GeneralGroup {
  int n;       // vectors of a row: d / 8
  int lanes;   // lanes of a group
  int groups;  // groups of the CTA
  int group;   // this thread's group
  int li;      // this thread's lane in its group: the leaf (8 columns) it holds
  int shfl;    // lanes a row's xor-shuffles span: min(leaves, 32)
  int warps;   // warps whose sums make a row's sum: leaves / 32, or 1
  int warp, lane;
  __device__ __forceinline__ bool holds() const { return li < n; }
};

template <int kThreads>
__device__ __forceinline__ GeneralGroup general_group(int d) {
  GeneralGroup g;
  g.n = d / 8;
  const int leaves = cake_ng_tree_leaves(d);
  g.lanes = cake_ng_general_lanes(d, kThreads);
  g.groups = kThreads / g.lanes;
  g.group = static_cast<int>(threadIdx.x) / g.lanes;
  g.li = static_cast<int>(threadIdx.x) % g.lanes;
  g.shfl = min(leaves, 32);
  g.warps = leaves > 32 ? leaves / 32 : 1;
  g.warp = static_cast<int>(threadIdx.x) / 32;
  g.lane = static_cast<int>(threadIdx.x) % 32;
  return g;
}

}  // namespace ng
}  // namespace cake
