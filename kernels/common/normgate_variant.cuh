// Normgate variant programs: every gated-norm variant of docs/spec/normgate.md in one program per
// operation (forward, backward of each package), for any D (a multiple of 8 up to 8192) and any
// group size G (a multiple of 8 dividing D):
//   gate after the norm   y = rmsnorm_G(x) * w * a(z)
//   gate before the norm  y = rmsnorm_G(x * a(z)) * w
//   no gate               y = rmsnorm_G(x) * w
// with a(z) = silu(z) or sigmoid(z), x / z / w each BF16, F16 or FP32. The variant, the group
// size and the dtypes are parameters read at run time (uniform branches outside the arithmetic),
// not template arguments: one instantiation per program keeps the build's time and the image's
// size flat whatever the number of combinations.
//
// Layout: the general programs' (normgate_general_layout.h): a row is held by a group of lanes,
// lane c the 8 columns of leaf c, read once into registers. A mean-square group of q = G/8
// leaves is reduced in the canonical group order (variant_group_sum), the same for every thread
// count, so both programs of an operation (256 and 1024 threads) give the same bits.
//
// Files: normgate_variant_group.cuh (the group sums), normgate_variant_fwd.cuh (element I/O, the
// gate, the forward; both run on the CPU in host tests), this file (the backward).
//
// Backward: each row group walks one dw chunk (16 consecutive rows) in row order, adding its
// columns' dw terms in FP32 (the canonical chunk sum); the chunk sums go into the deterministic
// tree (variant_det_node: combine_groups' order, from shared memory; tree_publish) or the
// non-deterministic FP64 accumulator (combine_groups, nondet_finish) as in the general programs
// (normgate_general.cuh), dw rounded once into BF16, F16 or FP32.
#pragma once
#include <stdint.h>

#include "normgate_dw.cuh"
#include "normgate_general.cuh"
#include "normgate_general_layout.h"
#include "normgate_math.cuh"
#include "normgate_params.h"
#include "normgate_variant_fwd.cuh"
#include "normgate_variant_group.cuh"
#include "vector_io.cuh"

namespace cake {
namespace ng {

// ---- dw into BF16, F16 or FP32 ---------------------------------------------------------------

// Double to F16 with one rounding: round to odd into FP32 (13 spare bits), then RNE to F16.
__device__ __forceinline__ unsigned short double_to_f16_rn(double v) {
  return static_cast<unsigned short>(pack_f16x2(double_to_f32_odd(v), 0.0f) & 0xffffu);
}

// The variant programs' rounding into dw: store_dw's, plus F16 (p.dw_dtype).
struct StoreDwVariant {
  __device__ __forceinline__ void operator()(const cake_normgate_params &p, int col,
                                             double sum) const {
    if (p.dw_dtype == CAKE_DTYPE_F16) {
      double v = sum + 0.0;
      unsigned short *dw = static_cast<unsigned short *>(p.dw);
      if (p.dw_flags & kDwAccumulate) v += static_cast<double>(f16_to_f32(__ldcg(dw + col)));
      __stcg(dw + col, double_to_f16_rn(v));
    } else {
      store_dw(p, col, sum);
    }
  }
};

// ---- Backward --------------------------------------------------------------------------------

// The deterministic package's level-0 node of a block: its row groups' FP32 chunk sums
// (value(group, column), read from shared memory) combined over the groups as an aligned
// subtree, adjacent pairs first, in FP64: the bits of combine_groups (normgate_general.cuh), read
// one value at a time instead of from eight doubles in registers (which the 1024-thread program
// cannot hold beside its row state). Every thread of the CTA calls this.
template <int kThreads, class Value>
__device__ __forceinline__ void variant_det_node_of(Value value, int groups, double *sums,
                                                    double *node, int d) {
  const int tid = static_cast<int>(threadIdx.x);
  __syncthreads();  // every group's chunk sums are in shared memory
  if (groups == 1) {
    for (int col = tid; col < d; col += kThreads) node[col] = value(0, col);
    return;
  }
  const int span = kCombineDoubles<kThreads> / groups;  // columns a pass
  for (int col0 = 0; col0 < d; col0 += span) {
    for (int i = tid; i < groups * span; i += kThreads) {
      const int k = i / span, c = i % span;
      if (col0 + c < d) sums[k * span + c] = value(k, col0 + c);
    }
    __syncthreads();
    if (tid < span && col0 + tid < d) {
      for (int h = 1; h < groups; h <<= 1) {
        for (int k = 0; k < groups; k += 2 * h) {
          sums[k * span + tid] = __dadd_rn(sums[k * span + tid], sums[(k + h) * span + tid]);
        }
      }
      node[col0 + tid] = sums[tid];
    }
    __syncthreads();
  }
}

// The one-leaf layout's node: thread t's 8 columns at acc[t] and acc[kThreads + t].
template <int kThreads>
__device__ __forceinline__ void variant_det_node(const float4 *acc, const GeneralGroup &g,
                                                 double *sums, double *node, int d) {
  auto value = [&](int group, int column) {
    const float4 *slot = acc + (column % 8 / 4) * kThreads + group * g.lanes + column / 8;
    const float *f = reinterpret_cast<const float *>(slot);
    return chunk_to_double(f[column % 4]);
  };
  variant_det_node_of<kThreads>(value, g.groups, sums, node, d);
}

template <class Cfg>
__device__ __forceinline__ void bwd_variant(const cake_normgate_params &p) {
  constexpr int kChunk = CAKE_NG_DW_CHUNK_ROWS;
  constexpr bool kDet = Cfg::kOp == CAKE_NG_OP_BWD_DET;
  constexpr int kThreads = Cfg::kThreads;
  // A ring program (kStages > 0, 16-bit x and z only) copies later trips' x, z and dy into
  // shared memory while this trip reduces: bytes in flight across the row's barriers, without
  // registers. With no ring each trip reads its row only after the previous trip's reductions.
  constexpr int kStages = Cfg::kPrefetch;
  static_assert(kStages == 0 || (kStages >= 2 && kStages <= 4), "no ring, or trips in flight");
  constexpr int kRing = kStages > 0 ? kStages : 1;  // the ring's stages, as a divisor
  // Two reduction sites, one for each of a trip's two group sums, so that neither needs a
  // barrier after its reads (variant_group_sum's kGuard). The deterministic programs keep one
  // site and that barrier: with their dw tree in the loop, either change makes them spill.
  constexpr bool kGuard = kDet;
  __shared__ float red[kGuard ? kThreads : 2 * kThreads];
  __shared__ double sums[kCombineDoubles<kThreads>];
  __shared__ int flag;
  // Each thread's two doubles for a wide group's statistics; a ring program uses its slot of
  // the stage just read instead (refilled only next trip), which leaves the 1024-thread
  // program's shared memory within the limit.
  __shared__ double wide_scratch[kStages == 0 ? 2 * kThreads : 1];
  // Dynamic shared memory (cake_ng_general_bwd_smem): the ring [stage][x, z, dy][thread] of
  // 16-byte vectors, each thread's FP32 chunk sums of its 8 columns, and (non-deterministic) its
  // FP64 sums over its chunks; each thread reads back only its own slots, so a commit-group wait
  // orders them: no barrier.
  extern __shared__ __align__(16) unsigned char smem[];
  uint4 *ring = reinterpret_cast<uint4 *>(smem);
  float4 *acc = reinterpret_cast<float4 *>(smem + cake_ng_general_acc_offset(kStages, kThreads)) + threadIdx.x;
  double *part = reinterpret_cast<double *>(smem + cake_ng_general_part_offset(kStages, kThreads)) + threadIdx.x;

  const GeneralGroup g = general_group<kThreads>(p.d);
  const bool want_dw = (p.dw_flags & kDwSkip) == 0;
  const int col = g.li * 8;
  // The CTA's trips: its blocks' 16 rows each, in order. 32 bits: a grid of up to 2^31 CTAs
  // over at most 2^55 blocks (the library's 64-bit byte counts) leaves at most 2^28 trips.
  const int my_blocks = static_cast<int>(cta_blocks(p.num_blocks));
  const int trips = my_blocks * kChunk;
  // The row of trip k. The row group is computed again each time, from a value the compiler
  // cannot hoist (a division): held across the trips, with the FP64 path of a wide group in the
  // loop, it would be spilled.
  auto row_of = [&](int k) {
    const int group = opaque_i32(static_cast<int>(threadIdx.x)) / g.lanes;
    const int64_t blk = blockIdx.x + (k / kChunk) * int64_t(gridDim.x);
    return blk * p.rows_per_block + int64_t(group) * kChunk + k % kChunk;
  };
  auto issue = [&](int k) {
    if (k < trips) {
      const int64_t row = row_of(k);
      const bool ok = row < p.rows && g.holds();
      const bool z_ok = ok && p.gate != CAKE_NORMGATE_GATE_NONE;  // no z: zeros, no read
      const int64_t src = ok ? row : 0;
      uint4 *v = ring + (k % kRing) * 3 * kThreads + threadIdx.x;
      cp_async16(v, p.x + src * p.x_stride + col, ok);
      cp_async16(v + kThreads, z_ok ? p.z + src * p.z_stride + col : p.x + col, z_ok);
      cp_async16(v + 2 * kThreads, p.dy + src * p.dy_stride + col, ok);
    }
    cp_async_commit();  // possibly empty: the group count stays uniform
  };
  if constexpr (kStages > 0) {
#pragma unroll
    for (int k = 0; k < kStages - 1; ++k) issue(k);
  }
  if constexpr (!kDet) {
#pragma unroll
    for (int i = 0; i < 8; ++i) part[i * kThreads] = 0.0;
  }

  for (int k = 0; k < trips; ++k) {
    if constexpr (kStages > 0) {
      issue(k + kStages - 1);
      cp_async_wait<kStages - 1>();
    }
    const int r = static_cast<int>(k % kChunk);
    const int64_t blk = blockIdx.x + (k / kChunk) * int64_t(gridDim.x);
    const int64_t row = row_of(k);
    const bool valid = row < p.rows;
    const bool ok = valid && g.holds();
    // Read from the parameters in each trip: cheaper to rematerialise than to keep.
    const bool gated = p.gate != CAKE_NORMGATE_GATE_NONE;
    const bool before = p.placement == CAKE_NORMGATE_GATE_BEFORE_NORM;
    const float inv_g = inverse_width(opaque_i32(p.group));  // see row_of
    const uint4 *slot = ring + (k % kRing) * 3 * kThreads + threadIdx.x;
    // This thread's 8 values of x (0), z (1) or dy (2) in the trip's row: from its ring slot,
    // or from memory (zeros for a row past the end, or for z when there is no gate).
    auto input = [&](int which, float (&f)[8]) {
      if constexpr (kStages > 0) {
        unpack16_as_f32(slot[which * kThreads], which == 1 ? p.z_dtype : p.x_dtype, f);
      } else if (which == 0) {
        load8_as_f32(p.x, row * p.x_stride + col, p.x_dtype, ok, f);
      } else if (which == 1) {
        load8_as_f32(p.z, row * p.z_stride + col, p.z_dtype, ok && gated, f);
      } else {
        load8_as_f32(p.dy, row * p.dy_stride + col, p.x_dtype, ok, f);
      }
    };
    float xf[8], zf[8], dyf[8];
    input(0, xf);
    input(1, zf);
    input(2, dyf);

    // s = sigmoid(z), a = a(z); u = x (after, none) or x * a (before); n = u * rstd;
    // pdy = dy * a (after) or dy: the gradient reaching n * w; dn = pdy * w. Only x, z and dy
    // stay in registers across the row's reductions (a ring program reads them again from its
    // slot): u, n and s are recomputed (the same bits; s three times a row, the SFU has the
    // room), w and z read again (L1 hits, or the slot), which keeps the 1024-thread program
    // within 64 registers without spilling.
    float sg[8], u[8], leaf = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      sg[i] = gated ? sigmoid(zf[i]) : 1.0f;
      u[i] = before ? __fmul_rn(xf[i], gate_of(zf[i], sg[i], p.gate)) : xf[i];
    }
    const float ss = variant_group_sum<true, kGuard>(chunk_sumsq<false>(u, 1.0f), g, variant_group(g, p.group), red);
    const float rstd = rstd_from_sumsq(ss, inv_g, p.eps);
    const bool in_range = stats_in_range(ss, inv_g, p.eps);
    {
      float wf[8];
      load8_as_f32(p.w, col, p.w_dtype, g.holds(), wf);
      if constexpr (kStages > 0) {
        input(0, xf);
        input(1, zf);
        input(2, dyf);
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        sg[i] = gated ? sigmoid(zf[i]) : 1.0f;  // again: s is not kept across the reduction
        const float a = gated ? gate_of(zf[i], sg[i], p.gate) : 1.0f;
        const float n = __fmul_rn(before ? __fmul_rn(xf[i], a) : xf[i], rstd);
        const float dn = __fmul_rn(before ? dyf[i] : __fmul_rn(dyf[i], a), wf[i]);
        leaf = i == 0 ? __fmul_rn(dn, n) : __fmaf_rn(dn, n, leaf);
      }
      // The backward marks a leaf with an input of 2^24 or more in its g * n sum: the group's
      // mean is then NaN (normgate_wide.cuh).
      const float amax = fmaxf(fmaxf(chunk_absmax(wf), chunk_absmax(xf)), fmaxf(chunk_absmax(zf), chunk_absmax(dyf)));
      leaf = mark_wide(leaf, amax);
    }
    const float m = mean_of(variant_group_sum<true, kGuard>(leaf, g, variant_group(g, p.group), red + (kGuard ? 0 : kThreads)), inv_g);
    if (ok && (!in_range || isnan(m))) {  // rare: a wide group, FP64 in place of FP32
      // The slot's address again, not `slot` held through the trip: the deterministic programs
      // have no register left for it.
      double *scratch = kStages > 0 ? reinterpret_cast<double *>(ring + (k % kRing) * 3 * kThreads + threadIdx.x)
                                    : wide_scratch + 2 * threadIdx.x;
      wide_backward_acc(p, true, row, col, reinterpret_cast<float *>(acc), 4 * kThreads, r == 0, scratch);
    } else {
    float dxf[8], dzf[8], t[8];
    {
      float wf[8];
      load8_as_f32(p.w, col, p.w_dtype, g.holds(), wf);
      input(1, zf);  // again (L1, or the slot)
      if constexpr (kStages > 0) {
        input(0, xf);
        input(2, dyf);
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        sg[i] = gated ? sigmoid(zf[i]) : 1.0f;  // again: s is not kept across the reduction
        const float a = gated ? gate_of(zf[i], sg[i], p.gate) : 1.0f;
        const float n = __fmul_rn(before ? __fmul_rn(xf[i], a) : xf[i], rstd);
        const float pdy = before ? dyf[i] : __fmul_rn(dyf[i], a);
        const float dn = __fmul_rn(pdy, wf[i]);
        const float du = __fmul_rn(__fmaf_rn(-n, m, dn), rstd);
        float da;
        if (before) {  // u = x * a: dx = du * a, da = du * x
          dxf[i] = du;
          if (gated) dxf[i] = __fmul_rn(du, a);
          da = __fmul_rn(du, xf[i]);
        } else {  // y = (n * w) * a: da = dy * (n * w)
          dxf[i] = du;
          da = __fmul_rn(dyf[i], __fmul_rn(n, wf[i]));
        }
        dzf[i] = gated ? __fmul_rn(da, gate_slope(zf[i], sg[i], p.gate)) : 0.0f;
        t[i] = valid ? __fmul_rn(pdy, n) : 0.0f;
      }
    }
    if (ok) {
      store8_from_f32(p.dx, row * p.dx_stride + col, p.x_dtype, dxf);
      if (gated) store8_from_f32(p.dz, row * p.dz_stride + col, p.z_dtype, dzf);
    }
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
    if constexpr (kDet) {
      // The tree's shape, once a chunk (16 rows) rather than held in registers through the walk.
      const cake_ng_tree tree = cake_ng_tree_of(p.rows, p.d, g.groups);
      double *node = tree_node(p, cake_ng_level_of(&tree, 0), blk);
      variant_det_node<kThreads>(acc - threadIdx.x, g, sums, node, p.d);
      tree_publish(p, tree, blk, &flag, StoreDwVariant{});
    } else {
      const float4 a = acc[0], b = acc[kThreads];
      const double c[8] = {chunk_to_double(a.x), chunk_to_double(a.y), chunk_to_double(a.z),
                           chunk_to_double(a.w), chunk_to_double(b.x), chunk_to_double(b.y),
                           chunk_to_double(b.z), chunk_to_double(b.w)};
#pragma unroll
      for (int i = 0; i < 8; ++i) part[i * kThreads] = __dadd_rn(part[i * kThreads], c[i]);
    }
  }
  if constexpr (kStages > 0) cp_async_wait<0>();
  if constexpr (!kDet) {
    if (!want_dw) return;
    double c[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) c[i] = part[i * kThreads];
    combine_groups<kThreads>(c, g, sums, [&](int column, double value) { nondet_add(p, column, value); });
    nondet_finish(p, &flag, StoreDwVariant{});
  }
}

}  // namespace ng
}  // namespace cake
