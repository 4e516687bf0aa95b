// The non-deterministic package's dw: FP64 atomics into the workspace accumulator, rounded into
// dw by the last CTA to arrive.
#pragma once
#include <stdint.h>

#include "normgate_dw_store.cuh"
#include "normgate_dw_sync.cuh"
#include "normgate_params.h"
#include "normgate_workspace.h"

namespace cake {
namespace ng {

// Non-deterministic package. Each CTA adds its FP64 column sums into the workspace accumulator
// (one atomic per column and CTA, or per chunk in the general program); then nondet_finish: the
// last CTA to arrive (ticket) rounds into dw and zeroes accumulator and ticket.
__device__ __forceinline__ void nondet_add(const cake_normgate_params &p, int col, double v) {
  atomicAdd(static_cast<double *>(p.workspace) + col, v);
}

template <class Store = StoreDw>
__device__ __forceinline__ void nondet_finish(const cake_normgate_params &p, int *flag,
                                              Store store = Store{}) {
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
    store(p, col, __ldcg(acc + col));
    acc[col] = 0.0;
  }
}

}  // namespace ng
}  // namespace cake
