// The FP8 blockwise 1x128 block quantizer of the device, for any kernel that holds a 128-value
// block of BF16 values spread over an aligned group of adjacent lanes (fp8_blockwise_encode.h
// has the rule; docs/spec/fp8-blockwise.md the format). The SwiGLU + FP8 kernels use it; the
// norm-gate's quantized y (a D = 128 row is one block) is meant to call it the same way:
//
//   uint32_t a = fp8b_amax16(words);              // the lane's packed amax, one value per half
//   a = fp8b_group_max<kLanes>(a);                // the block's amax over its lanes (shuffles)
//   const fp8b::BlockScale bs = fp8b::block_scale(a & 0xFFFF, rule);   // s to store, r
//   fp8b_quantize_words(words, bs.r, q);          // 2 values a word -> E4M3 bytes, 4 a word
//
// Two blocks can travel in one shuffle (one in each 16-bit half of the packed amax: SwiGLU's
// backward carries dgate's and dup's), which is why the amax stays packed until block_scale.
#pragma once
#include <stdint.h>

#include "fp8_blockwise_encode.h"
#include "mxfp8_encode.h"
#include "swiglu_quantize.cuh"
#include "vector_io.cuh"

namespace cake {

// max |x| of the BF16 values of N words, as one 16-bit value in both halves' max (low 16 bits).
template <int N>
__device__ __forceinline__ uint32_t fp8b_amax16(const uint32_t (&w)[N]) {
  return swiglu::halves_max(swiglu::amax2(w));
}

// The max over an aligned group of L adjacent lanes (L a power of two, 1..32) of packed 16-bit
// halves; every lane of the group gets it. The whole warp must call it (full-mask shuffles).
template <int L>
__device__ __forceinline__ uint32_t fp8b_group_max(uint32_t a) {
  static_assert(L >= 1 && L <= 32 && (L & (L - 1)) == 0, "lanes: a power of two up to 32");
#pragma unroll
  for (int lm = 1; lm < L; lm <<= 1) a = __vmaxu2(a, __shfl_xor_sync(0xFFFFFFFFu, a, lm));
  return a;
}

// Four values times r to four E4M3 bytes (lo first): e4m3(fp32(v * r)) each.
__device__ __forceinline__ uint32_t fp8b_e4m3x4(float a, float b, float c, float d, float r) {
  using fp8b::mul_rn;
  return (uint32_t)mx::e4m3x2_rn_satfinite(mul_rn(a, r), mul_rn(b, r)) |
         ((uint32_t)mx::e4m3x2_rn_satfinite(mul_rn(c, r), mul_rn(d, r)) << 16);
}

// N BF16 words (2N values of one block) with multiplier r: 2N E4M3 bytes, N/2 words, in order.
template <int N>
__device__ __forceinline__ void fp8b_quantize_words(const uint32_t (&w)[N], float r,
                                                    uint32_t (&q)[N / 2]) {
#pragma unroll
  for (int i = 0; i < N / 2; ++i) {
    q[i] = fp8b_e4m3x4(bf16_lo(w[2 * i]), bf16_hi(w[2 * i]), bf16_lo(w[2 * i + 1]),
                       bf16_hi(w[2 * i + 1]), r);
  }
}

}  // namespace cake
