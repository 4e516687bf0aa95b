// Per-CTA timeline of a persistent kernel, for development builds only (CMake option
// CAKE_TIMELINE, off by default; off, every call below compiles to nothing and the fatbins are
// byte-identical to a build without it).
//
// Thread 0 of each CTA stores %globaltimer at marks 0 .. kTimelineMarks - 1 into a record of
// its own; tl_finish() stores the exit time and a count (the tuned normgate backward: the steps
// it walked), and the last CTA to finish launch number CAKE_TIMELINE_FIRST ..
// CAKE_TIMELINE_FIRST + CAKE_TIMELINE_LAUNCHES - 1 of the module prints every CTA's record
// (device printf, one "TL" line a CTA: tag, launch, cta, marks and exit in ns from the launch's
// first entry, count). tools/timeline-report.py summarizes the lines. A mark never stored in a
// launch keeps the value of an earlier one; the report shows it as it is.
// Marks used by the normgate backward (normgate_bwd.cuh, normgate_dw.cuh):
//   0 entry; 1 walk end; 2 non-deterministic: before the last CTA's ticket,
//   deterministic: the exit of the tail's last grid barrier.
#pragma once
#include <stdint.h>

#ifndef CAKE_TIMELINE
#define CAKE_TIMELINE 0
#endif
#ifndef CAKE_TIMELINE_FIRST
#define CAKE_TIMELINE_FIRST 40
#endif
#ifndef CAKE_TIMELINE_LAUNCHES
#define CAKE_TIMELINE_LAUNCHES 6
#endif

namespace cake {

constexpr int kTimelineMarks = 3;
constexpr int kTimelineMaxCtas = 1024;

#if CAKE_TIMELINE
// Records: marks, exit, count. Module-scope, so they persist across launches of the module.
__device__ unsigned long long cake_tl_records[kTimelineMaxCtas][kTimelineMarks + 2];
__device__ unsigned cake_tl_ticket, cake_tl_launch;
#endif

__device__ __forceinline__ unsigned long long tl_now() {
  unsigned long long t = 0;
#if CAKE_TIMELINE
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
#endif
  return t;
}

// Thread 0 of the CTA stores the time at mark k.
__device__ __forceinline__ void tl_mark(int k) {
#if CAKE_TIMELINE
  if (threadIdx.x == 0 && blockIdx.x < kTimelineMaxCtas) cake_tl_records[blockIdx.x][k] = tl_now();
#else
  (void)k;
#endif
}

// Thread 0: exit time and count; the launch's last CTA prints the records of a chosen launch.
__device__ __forceinline__ void tl_finish(long long count, int tag) {
#if CAKE_TIMELINE
  if (threadIdx.x != 0 || gridDim.x > kTimelineMaxCtas) return;
  cake_tl_records[blockIdx.x][kTimelineMarks] = tl_now();
  cake_tl_records[blockIdx.x][kTimelineMarks + 1] = static_cast<unsigned long long>(count);
  __threadfence();
  if (atomicAdd(&cake_tl_ticket, 1u) != gridDim.x - 1) return;
  cake_tl_ticket = 0;
  __threadfence();
  const unsigned launch = cake_tl_launch++;
  if (launch < CAKE_TIMELINE_FIRST || launch >= CAKE_TIMELINE_FIRST + CAKE_TIMELINE_LAUNCHES) return;
  typedef volatile unsigned long long *Rec;
  unsigned long long base = ~0ull;
  for (unsigned c = 0; c < gridDim.x; ++c) base = min(base, static_cast<Rec>(cake_tl_records[c])[0]);
  for (unsigned c = 0; c < gridDim.x; ++c) {
    const Rec r = cake_tl_records[c];
    printf("\nTL %d %u %u %llu %llu %llu %llu %llu\n", tag, launch, c, r[0] - base, r[1] - base,
           r[2] - base, r[3] - base, r[4]);
  }
#else
  (void)count;
  (void)tag;
#endif
}

}  // namespace cake
