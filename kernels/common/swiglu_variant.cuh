// The SwiGLU variants of both families' variant programs (docs/spec/swiglu-mxfp8.md,
// "Variants"): the router-weighted SwiGLU (y * p, one weight a row, and the backward's dp) and
// the clamped SwiGLU of gpt-oss, from the call's run-time cake_swiglu_variant. compute_y
// (swiglu_phase1.cuh) takes the arithmetic of a pair from an activation: PlainAct
// (swiglu_pair.cuh), the plain SwiGLU every other program compiles, or VariantAct. dp of a row is a fixed tree over each 32-column block and a sequential sum of the
// blocks in column order (dp_add_tile), so its bits do not depend on the program.
#pragma once
#include <stdint.h>

#include "swiglu_pair.cuh"
#include "swiglu_variant_params.h"

namespace cake {
namespace swiglu {

// The variants of one slot row: the call's activation and, weighted, the row's p.
struct VariantAct {
  bool clamped, weighted;
  float alpha, limit, w;

  // g' = min(g, limit) with NaN kept (a compare, not fminf, which would return limit).
  __device__ __forceinline__ float gmin(float g) const { return g > limit ? limit : g; }
  __device__ __forceinline__ float uclamp(float u) const {
    return u > limit ? limit : (u < -limit ? -limit : u);
  }
  // What the sigmoid is taken of: alpha * g' (clamped), g (silu).
  __device__ __forceinline__ float zof(float g) const {
    return clamped ? __fmul_rn(alpha, gmin(g)) : g;
  }
  __device__ __forceinline__ float2 pre(float2 g) const {
    return make_float2(zof(g.x), zof(g.y));
  }
  // A weight outside [-1, 1] (or NaN) can take grad * p past the bound the plain huge-grad test
  // relies on: the whole slot row goes to the wide refix, which changes no finite product.
  __device__ __forceinline__ bool huge(bool huge_grad) const {
    return huge_grad || (weighted && !(fabsf(w) <= 1.0f));
  }

  // One element; returns the dp term (backward, weighted; else 0).
  template <bool kBackward, bool kWide>
  __device__ __forceinline__ float one(float g, float s, float u, float d, float &y0,
                                       float &y1) const {
    const float g1 = clamped ? gmin(g) : g;
    const float b = clamped ? __fadd_rn(uclamp(u), 1.0f) : u;
    const float a = __fmul_rn(g1, s);
    if constexpr (!kBackward) {
      y0 = weighted ? __fmul_rn(a, __fmul_rn(b, w)) : __fmul_rn(a, b);
      return 0.0f;
    } else {
      const float z = clamped ? __fmul_rn(alpha, g1) : g;
      const float za = __fmul_rn(z, s);
      const float q = weighted ? __fmul_rn(d, w) : d;
      const float dact = __fmaf_rn(za, __fsub_rn(1.0f, s), s);
      const float dd = __fmul_rn(dact, q);
      float dg = __fmul_rn(dd, b);
      if constexpr (kWide) {
        if (fabsf(dd) == __uint_as_float(0x7F800000u)) dg = wide_dgate(dact, q, b);
      }
      float du = __fmul_rn(a, q);
      if (clamped) {  // the clamps' gradient: 1 inside, at the bound included (PyTorch's clamp)
        dg = g <= limit ? dg : 0.0f;
        du = (u >= -limit && u <= limit) ? du : 0.0f;
      }
      y0 = dg;
      y1 = du;
      return weighted ? __fmul_rn(__fmul_rn(a, d), b) : 0.0f;
    }
  }

  // A pair; returns the pair's dp sum (its first column's term plus its second's).
  template <class Cfg, bool kWide>
  __device__ __forceinline__ float pair(float2 g, float2 s, uint32_t uw, uint32_t dw,
                                        uint32_t &yw0, uint32_t &yw1) const {
    const float2 u = bf16x2_to_float2(uw);
    const float2 d = bf16x2_to_float2(dw);
    float a0 = 0.0f, a1 = 0.0f, b0 = 0.0f, b1 = 0.0f;
    const float t0 = one<Cfg::kBackward, kWide>(g.x, s.x, u.x, d.x, a0, b0);
    const float t1 = one<Cfg::kBackward, kWide>(g.y, s.y, u.y, d.y, a1, b1);
    yw0 = pack_bf16x2(a0, a1);
    if constexpr (Cfg::kBackward) yw1 = pack_bf16x2(b0, b1);
    return __fadd_rn(t0, t1);
  }
};

// The activation of a slot row of row m; `loaded`: the slot row holds inputs of the problem (else
// it is zero-filled, and its weight 0 keeps it off the wide refix, which reads the inputs again).
__device__ __forceinline__ VariantAct variant_act(const cake_swiglu_variant &v, int64_t m,
                                                  bool loaded) {
  VariantAct a;
  a.clamped = v.clamped != 0;
  a.weighted = v.weighted != 0;
  a.alpha = v.alpha;
  a.limit = v.limit;
  a.w = (a.weighted && loaded) ? v.p[m] : 0.0f;
  return a;
}

// The dp tree of a slot's pair sums (the 16 or 8 columns of one thread): adjacent halves added
// level by level, the first half on the left.
template <int W>
__device__ __forceinline__ float dp_slot_tree(const float (&ps)[W]) {
  float t[W];
#pragma unroll
  for (int i = 0; i < W; ++i) t[i] = ps[i];
#pragma unroll
  for (int n = W; n > 1; n /= 2) {
#pragma unroll
    for (int i = 0; i < n / 2; ++i) t[i] = __fadd_rn(t[2 * i], t[2 * i + 1]);
  }
  return t[0];
}

// One tile's part of a row's dp: the slot sums of the kBlockLanes adjacent lanes of each
// 32-column block complete the block's tree (a lane pair's sum is the same bits in either
// order), then the kRowLanes / kBlockLanes blocks of the tile row, in column order, are added
// to the row's running sum `acc`, which every lane of the row holds alike. The row's lanes are
// kRowLanes adjacent lanes, kRowLanes a power of two up to 32.
template <int kRowLanes, int kBlockLanes>
__device__ __forceinline__ float dp_add_tile(float slot_sum, float acc) {
  static_assert(kRowLanes <= 32 && (kRowLanes & (kRowLanes - 1)) == 0, "a row's lanes in a warp");
  float b = slot_sum;
#pragma unroll
  for (int l = 1; l < kBlockLanes; l <<= 1) b = __fadd_rn(b, __shfl_xor_sync(0xFFFFFFFFu, b, l));
  const int first = (int)(threadIdx.x & 31u) & ~(kRowLanes - 1);  // the row's first lane
#pragma unroll
  for (int j = 0; j < kRowLanes / kBlockLanes; ++j) {
    acc = __fadd_rn(acc, __shfl_sync(0xFFFFFFFFu, b, first + j * kBlockLanes));
  }
  return acc;
}

}  // namespace swiglu
}  // namespace cake
