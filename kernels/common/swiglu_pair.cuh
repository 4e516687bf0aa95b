// The SwiGLU arithmetic of one pair of outputs (docs/spec/swiglu-mxfp8.md, "Arithmetic"):
// y_pair, the only place the plain sequence is written, and PlainAct, the activation that hands
// it to compute_y (swiglu_phase1.cuh; the variants' activation is swiglu_variant.cuh).
#pragma once
#include <stdint.h>

#include "swiglu_sigmoid.cuh"
#include "vector_io.cuh"

namespace cake {
namespace swiglu {

// The smallest |grad| (BF16 bits) that compute_y sends to the wide dgate: 1.8125 * 2^127, with
// 1.8125 * 2^127 * 1.0999 below FLT_MAX for the BF16 value below it (1.8047 * 2^127).
constexpr uint32_t kHugeGradBits = 0x7F68u;

// dgate where dact * grad overflowed FP32: ((dact / 2) * grad) * u * 2 (y_pair says why).
__device__ __forceinline__ float wide_dgate(float dact, float grad, float u) {
  return __fmul_rn(__fmul_rn(__fmul_rn(__fmul_rn(dact, 0.5f), grad), u), 2.0f);
}

// ---- Y of one slot row ----
// One pair of outputs from one pair of gates and their sigmoid: the only place the SwiGLU
// arithmetic is written (emit and refix both call it). Forward: yw0 = Y. Backward: yw0 = dgate,
// yw1 = dup.
//
// dact * grad overflows FP32 for finite inputs when |grad| > FLT_MAX / |dact| (|dact| <= 1.0998,
// so |grad| above about 3.09e38, near BF16's largest value), although dgate = dact * grad * u is
// finite for |u| < 1 and +-0 for u = 0 (where Inf * 0 would give NaN). kWide (the refix path
// only) then evaluates dgate with that product's exponent unbounded: ((dact / 2) * grad) * u * 2,
// the bits the plain sequence gives with FP32's precision and a wider exponent, rounded to FP32
// (dact / 2 and the final doubling are exact there: |dact| > 1, and |((dact / 2) * grad) * u| is
// 0 or at least 2^127 * 2^-133, a normal number). Where the product is finite kWide changes
// nothing, so the fast pass keeps the plain sequence and compute_y sends a slot row with a huge
// grad to the refix path. docs/spec/swiglu-mxfp8.md, "Range".
template <class Cfg, bool kWide = false>
__device__ __forceinline__ void y_pair(float2 g, float2 s, uint32_t uw, uint32_t dw,
                                       uint32_t &yw0, uint32_t &yw1) {
  constexpr int kSig = Cfg::kSig;
  const float2 u = bf16x2_to_float2(uw);
  const float2 a = pmul<kSig>(g, s);  // silu(g) = g * sigmoid(g)
  if constexpr (!Cfg::kBackward) {
    const float2 y = pmul<kSig>(a, u);
    yw0 = pack_bf16x2(y.x, y.y);
  } else {
    const float2 d = bf16x2_to_float2(dw);
    const float2 oms = psub<kSig>(make_float2(1.0f, 1.0f), s);
    const float2 dact = pfma<kSig>(a, oms, s);  // d silu / dg, one rounding
    const float2 dd = pmul<kSig>(dact, d);
    float2 dg = pmul<kSig>(dd, u);
    if constexpr (kWide) {
      const float inf = __uint_as_float(0x7F800000u);
      if (fabsf(dd.x) == inf) dg.x = wide_dgate(dact.x, d.x, u.x);
      if (fabsf(dd.y) == inf) dg.y = wide_dgate(dact.y, d.y, u.y);
    }
    const float2 du = pmul<kSig>(a, d);
    yw0 = pack_bf16x2(dg.x, dg.y);
    yw1 = pack_bf16x2(du.x, du.y);
  }
}

// The plain SwiGLU: the sigmoid of g itself, y_pair's arithmetic, no dp.
struct PlainAct {
  __device__ __forceinline__ float2 pre(float2 g) const { return g; }
  __device__ __forceinline__ bool huge(bool huge_grad) const { return huge_grad; }
  template <class Cfg, bool kWide>
  __device__ __forceinline__ float pair(float2 g, float2 s, uint32_t uw, uint32_t dw,
                                        uint32_t &yw0, uint32_t &yw1) const {
    y_pair<Cfg, kWide>(g, s, uw, dw, yw0, yw1);
    return 0.0f;
  }
};

}  // namespace swiglu
}  // namespace cake
