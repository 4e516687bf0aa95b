// Normgate general programs: any D (a multiple of 8 up to 8192), forward and backward, the same
// bits as the tuned programs (normgate_math.cuh's canonical row tree, the dw chunk order of
// normgate_workspace.h).
//
// A group of lanes holds a row (normgate_general_layout.h), lane c the 16-byte vector of leaf c,
// so a row sum is xor-shuffles inside the warp and, for rows of more than 32 leaves (D > 256),
// one exchange of the warps' sums through shared memory, after which every lane of the group
// builds the tree's upper levels from the same values. Such a group spans warps, so its
// exchanges are CTA barriers: every thread walks the same trips, rows past the end compute on
// zeros and store nothing.
//
// Backward: each group walks one dw chunk (16 consecutive rows) in row order, each lane adding
// its columns' terms in FP32 in registers (the canonical chunk sum), later rows' loads in
// flight through a cp.async ring in shared memory (bytes in flight without registers). A block is the CTA's groups' chunks, consecutive; their FP64 chunk sums are
// combined as the block's aligned subtree (xor-shuffles across the groups of a warp, then one
// pass through shared memory across warps) into the block's level-0 tree node (deterministic),
// or are summed per thread over the CTA's blocks and combined once at the end (one FP64 atomic
// per column and CTA: non-deterministic).
#pragma once
#include <stdint.h>

#include "normgate_bwd.cuh"
#include "normgate_dw.cuh"
#include "normgate_general_fwd.cuh"
#include "normgate_general_group.cuh"
#include "normgate_general_layout.h"

namespace cake {
namespace ng {

// Doubles of shared memory for combining the groups' dw sums: two per thread, so that a pass
// takes at least 64 columns (there are at most threads / 32 holders).
template <int kThreads>
constexpr int kCombineDoubles = 2 * kThreads;

// The CTA's groups' FP64 column sums c (each group's in its lanes) combined over the groups as
// an aligned subtree, adjacent pairs first; sink(col, v) gets every column once. Every thread
// calls it. Groups of a warp are combined by xor-shuffles; then the holders (each warp when a
// group fits in one, else each group) meet in shared memory, `span` columns a pass, and one
// thread per column builds the tree over the holders in place.
template <int kThreads, class Sink>
__device__ __forceinline__ void combine_groups(double (&c)[8], const GeneralGroup &g, double *sums,
                                               Sink sink) {
  for (int off = g.lanes; off < 32; off <<= 1) {
#pragma unroll
    for (int i = 0; i < 8; ++i) c[i] = __dadd_rn(c[i], __shfl_xor_sync(0xffffffffu, c[i], off));
  }
  const int holders = kThreads / max(g.lanes, 32);
  const int holder = g.lanes <= 32 ? g.warp : g.group;
  const bool writes = g.holds() && (g.lanes >= 32 || g.lane < g.lanes);
  const int d = g.n * 8;
  if (holders == 1) {
    if (writes) {
#pragma unroll
      for (int i = 0; i < 8; ++i) sink(g.li * 8 + i, c[i]);
    }
    return;
  }
  const int span = kCombineDoubles<kThreads> / holders;  // a multiple of 64 columns
  const int tid = static_cast<int>(threadIdx.x);
  for (int col0 = 0; col0 < d; col0 += span) {
    if (writes && g.li * 8 >= col0 && g.li * 8 < col0 + span) {
#pragma unroll
      for (int i = 0; i < 8; ++i) sums[holder * span + g.li * 8 - col0 + i] = c[i];
    }
    __syncthreads();
    if (tid < span && col0 + tid < d) {
      for (int h = 1; h < holders; h <<= 1) {
        for (int k = 0; k < holders; k += 2 * h) {
          sums[k * span + tid] = __dadd_rn(sums[k * span + tid], sums[(k + h) * span + tid]);
        }
      }
      sink(col0 + tid, sums[tid]);
    }
    __syncthreads();
  }
}

template <class Cfg>
__device__ __forceinline__ void bwd_general(const cake_normgate_params &p) {
  constexpr int kChunk = CAKE_NG_DW_CHUNK_ROWS;
  constexpr bool kDet = Cfg::kOp == CAKE_NG_OP_BWD_DET;
  constexpr int kStages = Cfg::kPrefetch;
  constexpr int kThreads = Cfg::kThreads;
  static_assert(kStages >= 2 && kStages <= 4, "a row in flight while one is read");
  __shared__ float red[4 * 32];  // reduction sites: red (sums of squares), red + 96 (g * n)
  __shared__ double sums[kCombineDoubles<kThreads>];
  __shared__ int flag;
  // The load ring (cake_ng_general_bwd_smem): [stage][x, z, dy][thread] 16-byte vectors. Each
  // thread reads back only what it copied, so a commit-group wait orders it: no barrier. Then
  // each thread's chunk sums and (non-deterministic) FP64 sums, its own slots only.
  extern __shared__ __align__(16) unsigned char smem[];
  uint4 *ring = reinterpret_cast<uint4 *>(smem);
  float4 *acc =
      reinterpret_cast<float4 *>(smem + cake_ng_general_acc_offset(kStages, kThreads)) + threadIdx.x;
  double *part =
      reinterpret_cast<double *>(smem + cake_ng_general_part_offset(kStages, kThreads)) + threadIdx.x;

  const GeneralGroup g = general_group<kThreads>(p.d);
  const bool want_dw = (p.dw_flags & kDwSkip) == 0;
  const cake_ng_tree tree = cake_ng_tree_of(p.rows, p.d, g.groups);  // deterministic
  const float inv_d = inverse_width(p.d);
  const int64_t col = g.li * 8;
  // The CTA's trips: its blocks' 16 rows each, in order; the loads run kStages - 1 trips ahead,
  // across blocks (the next block's first rows arrive while this one's dw is combined).
  const int64_t my_blocks = cta_blocks(p.num_blocks);
  const int64_t trips = my_blocks * kChunk;
  auto row_of = [&](int64_t k) {
    return (blockIdx.x + (k / kChunk) * int64_t(gridDim.x)) * p.rows_per_block +
           int64_t(g.group) * kChunk + k % kChunk;
  };
  auto issue = [&](int64_t k) {
    if (k < trips) {
      const int64_t row = row_of(k);
      const bool ok = row < p.rows && g.holds();
      const int64_t src = ok ? row : 0;
      uint4 *v = ring + (k % kStages) * 3 * kThreads + threadIdx.x;
      cp_async16(v, p.x + src * p.x_stride + col, ok);
      cp_async16(v + kThreads, p.z + src * p.z_stride + col, ok);
      cp_async16(v + 2 * kThreads, p.dy + src * p.dy_stride + col, ok);
    }
    cp_async_commit();  // possibly empty: the group count stays uniform
  };
#pragma unroll
  for (int k = 0; k < kStages - 1; ++k) issue(k);

  // w waits in this thread's shared slot, read back each row (and its range test with it):
  // held in registers across the loop it would cost the program its 64 registers.
  __shared__ uint4 w_slot[kThreads];
  {
    const uint4 wv = load_or_zero(p.w + col, g.holds());
    w_slot[threadIdx.x] = wv;
  }
  if constexpr (!kDet) {
#pragma unroll
    for (int i = 0; i < 8; ++i) part[i * kThreads] = 0.0;
  }

  for (int64_t k = 0; k < trips; ++k) {
    issue(k + kStages - 1);
    cp_async_wait<kStages - 1>();
    const int r = static_cast<int>(k % kChunk);
    const int64_t row = row_of(k);
    const bool valid = row < p.rows;
    const uint4 *v = ring + (k % kStages) * 3 * kThreads + threadIdx.x;
    float xf[8], zf[8], dyf[8], wf[8];
    unpack8(v[0], xf);
    unpack8(v[kThreads], zf);
    unpack8(v[2 * kThreads], dyf);
    unpack8(w_slot[thread_index()], wf);

    float rstd;
    bool in_range;
    general_row_stats(xf, inv_d, p.eps, g, red,
                      bf16x8_wide(w_slot[thread_index()]) || bf16x8_wide(v[0]) || bf16x8_wide(v[kThreads]) || bf16x8_wide(v[2 * kThreads]),
                      rstd, in_range);
    RowGrad rg;
    const float leaf = grad_leaf(xf, zf, dyf, wf, rstd, rg);
    const float m = mean_of(group_reduce(leaf, g, red + 96, AddOp{}), inv_d);
    if (valid && g.holds() && !in_range) {  // rare: a wide row, FP64 in place of the FP32 sequence
      // Scratch: this thread's slot of the ring stage just read (refilled only next trip).
      wide_backward_acc(p, false, row, static_cast<int32_t>(col), reinterpret_cast<float *>(acc),
                        4 * kThreads, r == 0,
                        reinterpret_cast<double *>(ring + (k % kStages) * 3 * kThreads + threadIdx.x));
    } else {
      // z and dy re-read from the ring slot: held across the reductions' barriers they would
      // cost the program its 64 registers.
      unpack8(v[kThreads], zf);
      unpack8(v[2 * kThreads], dyf);
      float dxf[8], dzf[8], t[8];
      grad_out(zf, dyf, wf, rstd, m, rg, dxf, dzf, t);
      if (valid && g.holds()) {
        store16<kStoreStreaming>(p.dx + row * p.dx_stride + col, pack8(dxf));
        store16<kStoreStreaming>(p.dz + row * p.dz_stride + col, pack8(dzf));
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) t[i] = valid ? t[i] : 0.0f;
      if (r == 0) {
        acc[0] = make_float4(t[0], t[1], t[2], t[3]);
        acc[kThreads] = make_float4(t[4], t[5], t[6], t[7]);
      } else {
        const float4 a = acc[0], b = acc[kThreads];
        acc[0] = make_float4(__fadd_rn(a.x, t[0]), __fadd_rn(a.y, t[1]), __fadd_rn(a.z, t[2]), __fadd_rn(a.w, t[3]));
        acc[kThreads] = make_float4(__fadd_rn(b.x, t[4]), __fadd_rn(b.y, t[5]), __fadd_rn(b.z, t[6]), __fadd_rn(b.w, t[7]));
      }
    }
    if (r != kChunk - 1 || !want_dw) continue;  // CTA-uniform
    // The chunk's canonical sum is complete: into the block's node or this thread's sum.
    const float4 a = acc[0], b = acc[kThreads];
    double c[8] = {chunk_to_double(a.x), chunk_to_double(a.y), chunk_to_double(a.z),
                   chunk_to_double(a.w), chunk_to_double(b.x), chunk_to_double(b.y),
                   chunk_to_double(b.z), chunk_to_double(b.w)};
    if constexpr (kDet) {
      const int64_t b = blockIdx.x + (k / kChunk) * int64_t(gridDim.x);
      double *node = tree_node(p, cake_ng_level_of(&tree, 0), b);
      combine_groups<kThreads>(c, g, sums, [&](int column, double value) { node[column] = value; });
      tree_publish(p, tree, b, &flag);
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) part[i * kThreads] = __dadd_rn(part[i * kThreads], c[i]);
    }
  }
  cp_async_wait<0>();
  if constexpr (!kDet) {
    if (!want_dw) return;
    double c[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) c[i] = part[i * kThreads];
    combine_groups<kThreads>(c, g, sums, [&](int column, double value) { nondet_add(p, column, value); });
    nondet_finish(p, &flag);
  }
}

}  // namespace ng
}  // namespace cake
