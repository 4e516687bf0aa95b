// SwiGLU + MXFP8: the E4M3 block primitives every quantize step shares (rowwise from registers,
// rowwise from the Y tile, colwise from the Y tile): the packed amax, the block's multiplier, the
// conversion of BF16 words to E4M3 bytes. One encoder for every path, so that the both forms
// write the same bytes as the rowwise and colwise forms.
#pragma once
#include <stdint.h>

#include "mxfp8_encode.h"
#include "vector_io.cuh"

namespace cake {
namespace swiglu {

namespace mx = cake::mx;

// Packed per-half amax of n words: max |x| of each half, NaN-propagating (an integer max over
// |bits| orders NaN > Inf > finite). Without masking each word first: an unsigned max over the
// raw halves finds the negative of largest magnitude if there is one (the sign bit ranks it
// above every positive), a signed max the positive of largest magnitude if there is one (else
// the negative of largest magnitude again); the larger of the two magnitudes is the amax, the
// same bits as max(|x|). Two 3-input max instructions a word pair each, two masks in all.
template <int N>
__device__ __forceinline__ uint32_t amax2(const uint32_t (&w)[N]) {
  uint32_t u = w[0], s = w[0];
#pragma unroll
  for (int i = 1; i < N; ++i) {
    u = __vmaxu2(u, w[i]);
    s = __vmaxs2(s, w[i]);
  }
  return __vmaxu2(u & 0x7FFF7FFFu, s & 0x7FFF7FFFu);
}

__device__ __forceinline__ uint32_t halves_max(uint32_t a) { return max(a & 0xFFFFu, a >> 16); }

__device__ __forceinline__ uint32_t e4m3x4(float a, float b, float c, float d) {
  return (uint32_t)mx::e4m3x2_rn_satfinite(a, b) | ((uint32_t)mx::e4m3x2_rn_satfinite(c, d) << 16);
}

// The multiplier of a block with scale S as a BF16 pattern: 2^(127-S) (exponent field 254 - S,
// a normal BF16 for the S that occur below 255: at most 247) or, for the NaN scale, a NaN: every
// product is then a NaN and its E4M3 byte 0x7F, the spec's NaN block, with no select per word.
__device__ __forceinline__ uint32_t block_multiplier_bf16(uint32_t s) {
  return s <= 253u ? (254u - s) << 7 : 0x7FFFu;
}

// Two BF16 values (the halves of y) times their blocks' multipliers (the halves of k2) to four
// E4M3 bytes with the next word: the spec's e4m3(bf16(v * 2^(127-S))). The product is formed in
// BF16 (one mul.rn.bf16x2 for two values), exact unless it falls below the normal range, where
// both it and the spec's value give +-0 in E4M3; then each half widens to FP32 for the
// conversion (the sm_90 cvt to E4M3 takes FP32 pairs or FP16 pairs, not BF16).
__device__ __forceinline__ uint32_t quantize_word_pair(uint32_t y0, uint32_t y1, uint32_t k2) {
  const uint32_t p0 = mul_bf16x2(y0, k2), p1 = mul_bf16x2(y1, k2);
  return e4m3x4(bf16_lo(p0), bf16_hi(p0), bf16_lo(p1), bf16_hi(p1));
}

// N words (2N values of one block) with scale s: 2N E4M3 bytes, N/2 words.
template <int N>
__device__ __forceinline__ void quantize_words(const uint32_t (&w)[N], uint32_t s,
                                               uint32_t (&q)[N / 2]) {
  const uint32_t k2 = block_multiplier_bf16(s) * 0x10001u;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) q[i] = quantize_word_pair(w[2 * i], w[2 * i + 1], k2);
}

}  // namespace swiglu
}  // namespace cake
