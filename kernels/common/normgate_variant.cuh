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

// The deterministic package's level-0 node of block `blk`: the CTA's groups' FP32 chunk sums
// (in shared memory, `acc`: thread t's 8 columns at acc[t] and acc[kThreads + t]) combined over
// the groups as an aligned subtree, adjacent pairs first, in FP64: the bits of combine_groups
// (normgate_general.cuh), read from shared memory one value at a time instead of from eight
// doubles in registers (which the 1024-thread program cannot hold beside its row state).
template <int kThreads>
__device__ __forceinline__ void variant_det_node(const float4 *acc, const GeneralGroup &g,
                                                 double *sums, double *node, int d) {
  auto value = [&](int group, int column) {
    const float4 *slot = acc + (column % 8 / 4) * kThreads + group * g.lanes + column / 8;
    const float *f = reinterpret_cast<const float *>(slot);
    return chunk_to_double(f[column % 4]);
  };
  const int tid = static_cast<int>(threadIdx.x);
  __syncthreads();  // every group's chunk sums are in shared memory
  if (g.groups == 1) {
    for (int col = tid; col < d; col += kThreads) node[col] = value(0, col);
    return;
  }
  const int span = kCombineDoubles<kThreads> / g.groups;  // columns a pass
  for (int col0 = 0; col0 < d; col0 += span) {
    for (int i = tid; i < g.groups * span; i += kThreads) {
      const int k = i / span, c = i % span;
      if (col0 + c < d) sums[k * span + c] = value(k, col0 + c);
    }
    __syncthreads();
    if (tid < span && col0 + tid < d) {
      for (int h = 1; h < g.groups; h <<= 1) {
        for (int k = 0; k < g.groups; k += 2 * h) {
          sums[k * span + tid] = __dadd_rn(sums[k * span + tid], sums[(k + h) * span + tid]);
        }
      }
      node[col0 + tid] = sums[tid];
    }
    __syncthreads();
  }
}

template <class Cfg>
__device__ __forceinline__ void bwd_variant(const cake_normgate_params &p) {
  constexpr int kChunk = CAKE_NG_DW_CHUNK_ROWS;
  constexpr bool kDet = Cfg::kOp == CAKE_NG_OP_BWD_DET;
  constexpr int kThreads = Cfg::kThreads;
  __shared__ float red[kThreads];
  __shared__ double sums[kCombineDoubles<kThreads>];
  __shared__ int flag;
  __shared__ double wide_scratch[2 * kThreads];  // each thread's two: wide groups' statistics
  // Dynamic shared memory (cake_ng_general_bwd_smem with no ring): each thread's FP32 chunk sums
  // of its 8 columns, and (non-deterministic) its FP64 sums over its chunks; its own slots only.
  extern __shared__ __align__(16) unsigned char smem[];
  float4 *acc = reinterpret_cast<float4 *>(smem + cake_ng_general_acc_offset(0, kThreads)) + threadIdx.x;
  double *part = reinterpret_cast<double *>(smem + cake_ng_general_part_offset(0, kThreads)) + threadIdx.x;

  const GeneralGroup g = general_group<kThreads>(p.d);
  const bool want_dw = (p.dw_flags & kDwSkip) == 0;
  const int col = g.li * 8;
  // The CTA's trips: its blocks' 16 rows each, in order. 32 bits: a grid of up to 2^31 CTAs
  // over at most 2^55 blocks (the library's 64-bit byte counts) leaves at most 2^28 trips.
  const int my_blocks = static_cast<int>(cta_blocks(p.num_blocks));
  const int trips = my_blocks * kChunk;
  if constexpr (!kDet) {
#pragma unroll
    for (int i = 0; i < 8; ++i) part[i * kThreads] = 0.0;
  }

  for (int k = 0; k < trips; ++k) {
    const int r = static_cast<int>(k % kChunk);
    const int64_t blk = blockIdx.x + (k / kChunk) * int64_t(gridDim.x);
    // The row group and 1 / G again each trip, from values the compiler cannot hoist (a
    // division and a reciprocal): held across the trips, with the FP64 path of a wide group in
    // the loop, they would be spilled.
    const int group = opaque_i32(static_cast<int>(threadIdx.x)) / g.lanes;
    const int64_t row = blk * p.rows_per_block + int64_t(group) * kChunk + r;
    const bool valid = row < p.rows;
    const bool ok = valid && g.holds();
    // Read from the parameters in each trip: cheaper to rematerialise than to keep.
    const bool gated = p.gate != CAKE_NORMGATE_GATE_NONE;
    const bool before = p.placement == CAKE_NORMGATE_GATE_BEFORE_NORM;
    const float inv_g = inverse_width(opaque_i32(p.group));  // see group above
    float xf[8], zf[8], dyf[8];
    load8_as_f32(p.x, row * p.x_stride + col, p.x_dtype, ok, xf);
    load8_as_f32(p.z, row * p.z_stride + col, p.z_dtype, ok && gated, zf);
    load8_as_f32(p.dy, row * p.dy_stride + col, p.x_dtype, ok, dyf);

    // s = sigmoid(z), a = a(z); u = x (after, none) or x * a (before); n = u * rstd;
    // pdy = dy * a (after) or dy: the gradient reaching n * w; dn = pdy * w. Only x, z and dy
    // stay in registers across the row's reductions: u, n and s are recomputed (the same bits;
    // s three times a row, the SFU has the room), w and z read again (L1 hits), which keeps the
    // 1024-thread program within 64 registers without spilling.
    float sg[8], u[8], leaf = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      sg[i] = gated ? sigmoid(zf[i]) : 1.0f;
      u[i] = before ? __fmul_rn(xf[i], gate_of(zf[i], sg[i], p.gate)) : xf[i];
    }
    const float ss = variant_group_sum(chunk_sumsq<false>(u, 1.0f), g, variant_group(g, p.group), red);
    const float rstd = rstd_from_sumsq(ss, inv_g, p.eps);
    const bool in_range = stats_in_range(ss, inv_g, p.eps);
    {
      float wf[8];
      load8_as_f32(p.w, col, p.w_dtype, g.holds(), wf);
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
    const float m = mean_of(variant_group_sum(leaf, g, variant_group(g, p.group), red), inv_g);
    if (ok && (!in_range || isnan(m))) {  // rare: a wide group, FP64 in place of FP32
      wide_backward_acc(p, true, row, col, reinterpret_cast<float *>(acc), 4 * kThreads, r == 0,
                        wide_scratch + 2 * threadIdx.x);
    } else {
    float dxf[8], dzf[8], t[8];
    {
      float wf[8];
      load8_as_f32(p.w, col, p.w_dtype, g.holds(), wf);
      load8_as_f32(p.z, row * p.z_stride + col, p.z_dtype, ok && gated, zf);  // again (L1)
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
