// The normgate backward's cross-CTA synchronisation: GPU-scope fences, the arrival counters of
// the counter protocol (the last CTA to arrive goes on), and the grid barriers of the
// cooperative tails (every CTA resident), with the resets that leave every word zero.
#pragma once
#include <stdint.h>


namespace cake {
namespace ng {

// GPU-scope acquire-release fence: what the counter protocol needs (a release before the
// arrival, an acquire after the last one); __threadfence() is sequentially consistent
// (MEMBAR.SC), which costs more and buys nothing here.
__device__ __forceinline__ void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

// Counter protocol: the CTA's writes are ordered before its arrival by a barrier, then one
// fence and the atomic by thread 0 (cumulativity carries the other threads' writes); the last
// to arrive resets the counter and fences before the CTA reads what the others wrote.
// Thread 0 only; true when this arrival completes the count.
// The reset after the acquire fence, which then has no store of this thread to wait for (no
// difference measured on the H200: 0.985-1.012x).
__device__ __forceinline__ bool arrive_last(unsigned *counter, unsigned arrivals, unsigned expected) {
  const bool last = atomicAdd(counter, arrivals) + arrivals == expected;
  if (last) {
    fence_acq_rel_gpu();
    *counter = 0u;  // left zero for reuse
  }
  return last;
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

}  // namespace ng
}  // namespace cake
