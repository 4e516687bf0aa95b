// FP8 blockwise 1x128 encoding (E4M3 values, one FP32 scale per 128 consecutive values along the
// GEMM's K), bit-exact, shared by the device kernels (nvcc), the launch code in lib/ and the
// host model and tests (g++). The format Hopper FP8 GEMMs consume: F.scaled_mm with
// ScalingType.BlockWise1x128, DeepGEMM on sm_90.
//
// The rule for one block of 128 BF16 values v (spec docs/spec/fp8-blockwise.md):
//   amax   = max |v_i| on the BF16 bits, NaN-propagating (an integer max over |bits|)
//   amax Inf or NaN:  s = NaN (0x7FC00000), every element 0x7F (E4M3 NaN)
//   else   a = max(amax, 448 * 2^-126)   (BF16 0x04E0: keeps s a normal FP32 >= 2^-126 and
//                                         the multiplier finite; all-zero blocks take it too)
//     exact scales: s = fp32(a / 448), r = fp32(448 / a)            (IEEE division, RN)
//     pow2 scales:  s = 2^ceil(log2(a / 448)), r = 1 / s (exact)    (UE8M0-compatible)
//   q_i   = e4m3_rn_satfinite(fp32(v_i * r))                        (one FP32 product, RN)
//   decode: v_i ~= e4m3_value(q_i) * s
// Everything is IEEE FP32 arithmetic or integer bit work, so the host and the device compute the
// same bytes by construction; the device's E4M3 conversion (cvt.rn.satfinite.e4m3x2.f32) is
// checked equal to mx::e4m3_rn_satfinite on every FP32 input by the GPU test.
#pragma once
#include <stdint.h>

#include "hd.h"
#include "mxfp8_encode.h"

namespace cake {
namespace fp8b {

constexpr int kBlockElems = 128;             // values per scale
constexpr uint32_t kAmaxFloorBf16 = 0x04E0u;  // 448 * 2^-126 = 1.75 * 2^-118 as BF16 bits
constexpr uint32_t kScaleNaNBits = 0x7FC00000u;
constexpr uint8_t kE4m3NaN = 0x7F;

// Scale rules (the public CAKE_FP8_SCALE_* values).
enum ScaleRule : int { kScaleExact = 0, kScalePow2 = 1 };

// A block's stored scale s and the multiplier r its values are quantized with.
struct BlockScale {
  float s, r;
};

CAKE_HD CAKE_FORCEINLINE float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

CAKE_HD CAKE_FORCEINLINE float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

// Biased FP32 exponent S of the pow2 scale 2^(S-127) = 2^ceil(log2(a/448)) from the BF16 bits
// of a >= the floor (so S >= 1): adding 0x1F to the 7-bit mantissa carries into the exponent
// exactly when the mantissa exceeds 1.75 = 448/256 (the MXFP8 rule, mx::scale_from_amax_bits).
CAKE_HD CAKE_FORCEINLINE uint32_t pow2_exponent(uint32_t a_bits) {
  return (((a_bits << 16) + 0x001F0000u) >> 23) - 8u;
}

// The scale of a block from its BF16 amax bits without sign (0..0x7FFF, NaN above 0x7F80).
CAKE_HD CAKE_FORCEINLINE BlockScale block_scale(uint32_t amax_bits, int rule) {
  BlockScale b;
  if (amax_bits >= 0x7F80u) {
    b.s = b.r = mx::bits_to_float(kScaleNaNBits);  // every product NaN: every byte 0x7F
    return b;
  }
  const uint32_t a = amax_bits > kAmaxFloorBf16 ? amax_bits : kAmaxFloorBf16;
  if (rule == kScalePow2) {
    const uint32_t e = pow2_exponent(a);  // 1..247
    b.s = mx::bits_to_float(e << 23);
    b.r = mx::bits_to_float((254u - e) << 23);
  } else {
    const float af = mx::bf16_to_float((uint16_t)a);
    b.s = div_rn(af, 448.0f);
    b.r = div_rn(448.0f, af);
  }
  return b;
}

// One element: e4m3_rn_satfinite(fp32(v * r)). Software; the device pairs use the hardware cvt.
CAKE_HD CAKE_FORCEINLINE uint8_t quantize_value(float v, float r) {
  return mx::e4m3_rn_satfinite(mul_rn(v, r));
}

// The BF16 amax bits of n BF16 values (host model and tests).
CAKE_HD inline uint32_t amax_bits_of(const uint16_t *v, int64_t n, int64_t stride) {
  uint32_t m = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t a = v[i * stride] & 0x7FFFu;
    m = a > m ? a : m;
  }
  return m;
}

}  // namespace fp8b
}  // namespace cake
