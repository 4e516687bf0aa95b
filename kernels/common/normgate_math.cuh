// Normgate arithmetic every program shares, so that every program of a form computes the same
// bits. The row reduction has one canonical order, whatever the schedule:
//   leaf c  = sum of squares of columns [8c, 8c+8), in column order (one fma chain);
//   tree    = full binary tree over leaves 0..P-1 (P = D/8 rounded up to a power of two, missing
//             leaves are +0), adjacent pairs first.
// A program that holds leaf c in lane c of a group reproduces the tree with xor-shuffles of
// distance 1, 2, 4, ... (a+b and b+a are the same bits); one that stages leaves in shared memory
// runs the same levels there.
// All roundings are explicit (__f*_rn) so that no contraction changes them between programs;
// rstd uses the SFU's rsqrt.approx and the gate its ex2.approx and rcp.approx (one MUFU each
// instead of libm sequences with slow paths: the kernels are memory-bound only if the arithmetic
// stays this lean). Their results are a fixed function of the
// input on a given architecture; that they are the same function on sm_90 and sm_100 (what the
// deterministic package's "same dw on an H200 and a B200" rests on) is the assumption the
// SwiGLU + MXFP8 spec also makes of ex2.approx, and is checked on the H200 only.
#pragma once
#include <stdint.h>

#include "cake.h"

namespace cake {
namespace ng {

template <bool kScaled>
__device__ __forceinline__ float chunk_sumsq(const float (&v)[8], float scale) {
  float a = kScaled ? __fmul_rn(v[0], scale) : v[0];
  float acc = __fmul_rn(a, a);
#pragma unroll
  for (int i = 1; i < 8; ++i) {
    a = kScaled ? __fmul_rn(v[i], scale) : v[i];
    acc = __fmaf_rn(a, a, acc);
  }
  return acc;
}

__device__ __forceinline__ float chunk_absmax(const float (&v)[8]) {
  float m = fabsf(v[0]);
#pragma unroll
  for (int i = 1; i < 8; ++i) m = fmaxf(m, fabsf(v[i]));
  return m;
}

// Sum over the kLanes lanes of a group (lanes aligned to kLanes), canonical tree order.
template <int kLanes>
__device__ __forceinline__ float group_sum(float v, unsigned mask) {
#pragma unroll
  for (int off = 1; off < kLanes; off <<= 1) v = __fadd_rn(v, __shfl_xor_sync(mask, v, off));
  return v;
}

template <int kLanes>
__device__ __forceinline__ float group_max(float v, unsigned mask) {
#pragma unroll
  for (int off = 1; off < kLanes; off <<= 1) v = fmaxf(v, __shfl_xor_sync(mask, v, off));
  return v;
}

// Shuffle mask for a group's reductions: the whole warp. Every program runs its shuffles with
// all 32 lanes converged (loops and the overflow branch are warp-uniform), and xor distances
// below kLanes never leave the group; a partial mask would make the compiler emit collective
// (WARPSYNC/ENDCOLLECTIVE) sequences around every shuffle.
template <int kLanes>
__device__ __forceinline__ unsigned group_mask() {
  static_assert(kLanes >= 1 && kLanes <= 32 && (kLanes & (kLanes - 1)) == 0, "group lanes");
  return 0xffffffffu;
}

// threadIdx.x read again where it is used (a volatile read of %tid.x): an address derived from
// it is then recomputed in a loop, not kept in a register across it, which a program at its
// register budget would spill to local memory.
__device__ __forceinline__ unsigned thread_index() {
#if defined(CAKE_HOST_EMULATION)
  return threadIdx.x;
#else
  unsigned t;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
  return t;
#endif
}

// The blocks of a grid-stride walk over num_blocks blocks that this CTA takes:
// ceil((num_blocks - blockIdx.x) / gridDim.x). Without a 64-bit division, whose subroutine call
// makes the compiler keep the values live across it in local memory: a 32-bit division when
// the count fits, else bit by bit (a walk of 2^32 blocks or more, never hot).
__device__ __forceinline__ int64_t cta_blocks(int64_t num_blocks) {
  const uint64_t n = static_cast<uint64_t>(num_blocks - blockIdx.x + gridDim.x - 1);
  const uint32_t g = gridDim.x;
  if ((n >> 32) == 0u) return static_cast<int64_t>(static_cast<uint32_t>(n) / g);
  uint64_t q = 0, r = 0;
#pragma unroll 1
  for (int i = 63; i >= 0; --i) {
    r = (r << 1) | ((n >> i) & 1u);
    if (r >= g) {
      r -= g;
      q |= uint64_t(1) << i;
    }
  }
  return static_cast<int64_t>(q);
}

// 1/d, once per thread: the mean is sum * (1/d) (a multiply, not the division's slow path).
// For d in [8, 8192] the reciprocal's fast path (the SFU's estimate and one Newton step) is
// __frcp_rn's own result; its slow path (a subroutine call, which makes the general programs
// spill around it) is only for inputs near the ends of the exponent range.
__device__ __forceinline__ float inverse_width(int d) {
  const float x = static_cast<float>(d);
  float r;
#if defined(CAKE_HOST_EMULATION)
  r = 1.0f / x;
#else
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
#endif
  return __fmaf_rn(r, __fmaf_rn(-x, r, 1.0f), r);
}

// 1/sqrt(sumsq * (1/d) + eps): the mean rounded once, then the SFU's rsqrt (one MUFU instead
// of the correctly rounded sequence and its slow path, which every lane of a row repeats).
__device__ __forceinline__ float rstd_from_sumsq(float sumsq, float inv_d, float eps) {
  float r;
#if defined(CAKE_HOST_EMULATION)
  r = 1.0f / sqrtf(__fadd_rn(__fmul_rn(sumsq, inv_d), eps));
#else
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(__fadd_rn(__fmul_rn(sumsq, inv_d), eps)));
#endif
  return r;
}

// sigmoid(z) = 1 / (1 + 2^(-z log2 e)) on the SFU. Saturates to 0 or 1 without NaN for finite
// z: 2^t overflows to Inf (then 1/Inf = 0) or flushes to 0 (then 1/1 = 1).
__device__ __forceinline__ float sigmoid(float z) {
  float e, r;
#if defined(CAKE_HOST_EMULATION)  // the host's exp2 and division (tests/host/cuda_host_emulation.h)
  e = cake_emu::ex2_approx_ftz(__fmul_rn(z, -1.4426950408889634f));
  r = 1.0f / __fadd_rn(1.0f, e);
#else
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(__fmul_rn(z, -1.4426950408889634f)));
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(__fadd_rn(1.0f, e)));
#endif
  return r;
}

// y = (n * w) * (z * sigmoid(z)), one rounding to bf16 at the end (done by the caller).
__device__ __forceinline__ float gated(float n, float w, float z) {
  return __fmul_rn(__fmul_rn(n, w), __fmul_rn(z, sigmoid(z)));
}

// a(z) of the variant's gate (SiLU: z * sigmoid(z); sigmoid) and, for the backward, sigmoid(z).
__device__ __forceinline__ float gate_of(float z, float s, int32_t gate) {
  return gate == CAKE_NORMGATE_GATE_SILU ? __fmul_rn(z, s) : s;
}

// a'(z): SiLU s * (1 + z * (1 - s)); sigmoid s * (1 - s).
__device__ __forceinline__ float gate_slope(float z, float s, int32_t gate) {
  const float one_minus = __fsub_rn(1.0f, s);
  return gate == CAKE_NORMGATE_GATE_SILU ? __fmul_rn(s, __fmaf_rn(z, one_minus, 1.0f))
                                         : __fmul_rn(s, one_minus);
}

}  // namespace ng
}  // namespace cake
