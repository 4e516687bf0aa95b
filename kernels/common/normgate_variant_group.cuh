// The mean-square groups of the normgate variant programs (normgate_variant.cuh): where a lane's
// leaf sits in its group, and the group's sum in the canonical group order of
// docs/spec/normgate.md. Apart from the kernels' headers so that a host test runs it on the CPU
// (tests/host/cuda_host_emulation.h: one OS thread per CUDA thread, shuffles, barriers).
// `Group` is the row layout of normgate_general_layout.h (GeneralGroup in the kernels): a row
// held by `lanes` lanes, lane li the 8 columns of leaf li, `lane` the lane in the warp.
#pragma once

namespace cake {
namespace ng {

// Where this lane's leaf sits in its mean-square group (q leaves a group).
struct VariantGroup {
  int q;       // leaves of a mean-square group: G / 8
  int gstart;  // the group's first leaf (row-relative)
  int gend;    // one past its last leaf
  int dist;    // this leaf's distance from the start of its piece (the piece: the group's part
               // inside one aligned run of 32 leaves)
  bool cross;  // CTA-uniform: some group spans more than one aligned run of 32 leaves
};

template <class Group>
__device__ __forceinline__ VariantGroup variant_group(const Group &g, int group_size) {
  VariantGroup v;
  v.q = group_size / 8;
  const int c = g.li;
  v.gstart = (c / v.q) * v.q;
  v.gend = v.gstart + v.q;
  const int pstart = max(v.gstart, c & ~31);
  v.dist = c - pstart;
  // Rows of at most 32 leaves lie in one warp; wider rows start at lane 0 of a warp, so a group
  // stays inside one run of 32 leaves exactly when q divides 32.
  v.cross = g.lanes > 32 && (32 % v.q) != 0;
  return v;
}

// The sum over this lane's mean-square group of one value per leaf, in every lane of the group,
// in the canonical group order (docs/spec/normgate.md):
//   a piece is the part of the group inside one aligned run of 32 leaves of the row; a piece of
//   L leaves v_0 .. v_{L-1} is summed by the inclusive scan S_i <- S_i + S_{i-2^j} (j = 0..4,
//   terms with i - 2^j < 0 left out), its sum is S_{L-1}; the pieces are added left to right.
// The scan is relative to the piece's start, so the bits depend on D, G and the values only.
// `red` holds one float per thread (CTA-shared); every thread calls this (barriers when cross).
// kRunSums: groups of whole runs take their runs' sums from one slot a warp (fewer shared-memory
// reads and adds; the same bits). The one-leaf forward, which serves FP32 x and z only, keeps the
// general path, which fits its registers.
// kGuard: a barrier after the reads, so that the next call may write the same `red`. A caller
// that alternates two sites (two calls a trip, each at its own) passes false: a site's next
// write comes after the other site's barrier, which every thread reaches only after its reads.
template <bool kRunSums = true, bool kGuard = true, class Group>
__device__ __forceinline__ float variant_group_sum(float v, const Group &g, const VariantGroup &vg,
                                                   float *red) {
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const float t = __shfl_up_sync(0xffffffffu, v, off);
    if (vg.dist >= off) v = __fadd_rn(v, t);
  }
  if (!vg.cross) {
    // The group lies in this warp: its sum is the scan at its last leaf.
    return __shfl_sync(0xffffffffu, v, g.lane + (vg.gend - 1 - g.li));
  }
  const int tid = static_cast<int>(threadIdx.x);
  if (kRunSums && (vg.q & 31) == 0) {  // CTA-uniform: groups of whole runs, a run a warp
    // The pieces are the runs: each run's sum (its scan at lane 31) in one slot a warp, and a
    // group's sum its runs' left to right (consecutive slots).
    if (g.lane == 31) red[tid >> 5] = v;
    __syncthreads();
    float total = 0.0f;
    if (vg.gend <= g.lanes) {
      const float *runs = red + ((tid - g.li) >> 5) + (vg.gstart >> 5);
      total = runs[0];
      for (int i = 1; i < (vg.q >> 5); ++i) total = __fadd_rn(total, runs[i]);
    }
    if (kGuard) __syncthreads();  // red is reused by the next call
    return total;
  }
  red[tid] = v;
  __syncthreads();
  const int base = tid - g.li;  // the row's first thread
  int e = min(vg.gend, ((vg.gstart >> 5) + 1) << 5) - 1;  // the first piece's last leaf
  float total = 0.0f;
  if (vg.gend <= g.lanes) {  // padding lanes past the row's groups skip (their sums are unused)
    total = red[base + e];
    while (e < vg.gend - 1) {
      e = min(e + 32, vg.gend - 1);
      total = __fadd_rn(total, red[base + e]);
    }
  }
  if (kGuard) __syncthreads();  // red is reused by the next call
  return total;
}

}  // namespace ng
}  // namespace cake
