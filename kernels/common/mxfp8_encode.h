// MXFP8 block encoding (E4M3 values, one E8M0 scale per 32, RCEIL), bit-exact, shared by the
// device kernels (nvcc), the launch code in lib/ and the host reference and tests (g++).
//
// Everything here is integer or exact float arithmetic, so the host and the device compute the
// same bytes by construction. The only device-specific choice is the E4M3 conversion: on sm_89+
// the hardware cvt.rn.satfinite.e4m3x2.f32 (one F2FP per two values) is used; it is checked to be
// bit-identical to e4m3_rn_satfinite() on all 65,536 BF16 inputs by the GPU test
// (kernels/common/swiglu_sigmoid_table.cuh, cake_e4m3_cvt_table).
//
// Spec: docs/spec/swiglu-mxfp8.md, "MXFP8 block encoding" and "Layouts".
#pragma once
#include <stdint.h>
#include <string.h>

#include "hd.h"

namespace cake {
namespace mx {

constexpr int kBlockElems = 32;       // values per scale
constexpr int kSwizzleRows = 128;     // scale tile: 128 rows x 4 columns = 512 bytes
constexpr int kSwizzleCols = 4;
constexpr int kSwizzleTileBytes = 512;
constexpr uint32_t kScaleNaN = 255;   // E8M0 NaN: amax was Inf or NaN
constexpr uint8_t kE4m3NaN = 0x7F;    // every element of a kScaleNaN block
constexpr uint8_t kE4m3MaxFinite = 0x7E;  // 448

CAKE_HD CAKE_FORCEINLINE float bits_to_float(uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(b);
#else
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
#endif
}

CAKE_HD CAKE_FORCEINLINE uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
#endif
}

CAKE_HD CAKE_FORCEINLINE float bf16_to_float(uint16_t h) {
  return bits_to_float((uint32_t)h << 16);
}

// FP32 -> BF16, round to nearest even. NaN gives 0x7FFF with the sign kept (what
// cvt.rn.bf16.f32 returns; the bits of a NaN Y never reach an output byte, only its NaN-ness).
CAKE_HD CAKE_FORCEINLINE uint16_t bf16_rn(float f) {
  const uint32_t b = float_to_bits(f);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((b >> 16) | 0x7FFFu);
  return (uint16_t)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

// E8M0 scale byte (RCEIL) from the BF16 amax bits without sign (0..0x7FFF; any NaN pattern is
// above 0x7F80 so an integer max over |bits| is a NaN-propagating amax).
//   finite: S = max(0, ((B + 0x001F0000) >> 23) - 8) with B = amax_bits << 16, i.e.
//           2^(S-127) = 2^ceil(log2(amax/448)) clamped at 0 (adding 0x1F to the 7-bit mantissa
//           carries into the exponent exactly when mantissa > 1.75 = 448/256).
//   Inf or NaN: 255.
CAKE_HD CAKE_FORCEINLINE uint32_t scale_from_amax_bits(uint32_t amax_bits) {
  if (amax_bits >= 0x7F80u) return kScaleNaN;
  const int32_t s = (int32_t)(((amax_bits << 16) + 0x001F0000u) >> 23) - 8;
  return s > 0 ? (uint32_t)s : 0u;
}

// The multiplier 2^(127-S) that maps a block onto the E4M3 range, for S in [0, 254]. For the
// S that occur (0..247, never 254) it is a normal float; S = 254 would be 2^-127 (subnormal).
CAKE_HD CAKE_FORCEINLINE float inv_scale(uint32_t s) {
  return s <= 253u ? bits_to_float((254u - s) << 23) : bits_to_float(0x00400000u);
}

// FP32 -> E4M3 (OCP "FN": bias 7, max 448, 0x7F/0xFF NaN, no Inf), round to nearest even,
// saturating to +-448 (Inf included), NaN -> 0x7F. Negative values that round to zero give 0x80.
// Software and exact; the reference for the hardware cvt.
CAKE_HD inline uint8_t e4m3_rn_satfinite(float x) {
  const uint32_t b = float_to_bits(x);
  const uint32_t sign = (b >> 24) & 0x80u;
  const uint32_t a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return kE4m3NaN;
  if (a >= 0x43E00000u) return (uint8_t)(sign | kE4m3MaxFinite);  // |x| >= 448 (also Inf)
  const uint32_t exp = a >> 23;
  if (exp >= 121u) {  // |x| >= 2^-6: E4M3 normal; keep 3 of 23 mantissa bits, RNE
    uint32_t r = (a + 0x7FFFFu + ((a >> 20) & 1u)) >> 20;  // (exp << 3) | mant, carry included
    r -= (127u - 7u) << 3;                                 // rebias 127 -> 7
    if (r > kE4m3MaxFinite) r = kE4m3MaxFinite;            // 448 < |x| rounding up: saturate
    return (uint8_t)(sign | r);
  }
  // |x| < 2^-6: E4M3 subnormal, units of 2^-9; the result 8 is the smallest normal (0x08).
  if (exp == 0) return (uint8_t)sign;  // FP32 subnormal or zero: far below 2^-10
  const uint32_t m = (a & 0x7FFFFFu) | 0x800000u;  // value = m * 2^(exp - 150)
  const uint32_t shift = 141u - exp;               // value / 2^-9 = m >> shift; shift >= 21
  if (shift > 24u) return (uint8_t)sign;           // < 2^-10 (half the smallest subnormal)
  uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return (uint8_t)(sign | q);
}

// E4M3 -> FP32 (exact). NaN codes give a quiet NaN.
CAKE_HD inline float e4m3_to_float(uint8_t q) {
  const uint32_t sign = (uint32_t)(q & 0x80u) << 24;
  const uint32_t e = (q >> 3) & 0xFu, m = q & 7u;
  if ((q & 0x7Fu) == 0x7Fu) return bits_to_float(0x7FC00000u | sign);
  float v;
  if (e == 0) {
    v = (float)m * bits_to_float(0x3B000000u);  // m * 2^-9
  } else {
    v = bits_to_float(((e + 120u) << 23) | (m << 20));
  }
  return bits_to_float(float_to_bits(v) | sign);
}

// Two values at once: lo -> bits 0..7, hi -> bits 8..15 (the cvt...e4m3x2 operand order).
CAKE_HD CAKE_FORCEINLINE uint16_t e4m3x2_rn_satfinite(float lo, float hi) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 890)
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return (uint16_t)(e4m3_rn_satfinite(lo) | ((uint32_t)e4m3_rn_satfinite(hi) << 8));
#endif
}

// Byte offset of scale (r, c) in the swizzled 128x4 layout of a scale matrix whose column count
// padded to a multiple of 4 is cols_padded:
//   ((r/128)*(C'/4) + c/4)*512 + (r%32)*16 + ((r%128)/32)*4 + c%4
// 128 rows x 4 columns form one contiguous 512-byte tile; tiles are row-major over the matrix.
CAKE_HD CAKE_FORCEINLINE int64_t swizzle_offset(int64_t r, int64_t c, int64_t cols_padded) {
  return ((r >> 7) * (cols_padded >> 2) + (c >> 2)) * kSwizzleTileBytes + (r & 31) * 16 +
         ((r & 127) >> 5) * 4 + (c & 3);
}

// Inverse of swizzle_offset: the (row, column) a byte of the scale buffer holds.
CAKE_HD CAKE_FORCEINLINE void swizzle_position(int64_t offset, int64_t cols_padded, int64_t *r,
                                               int64_t *c) {
  const int64_t tile = offset / kSwizzleTileBytes, within = offset % kSwizzleTileBytes;
  const int64_t tiles_per_row = cols_padded / kSwizzleCols;
  *r = (tile / tiles_per_row) * kSwizzleRows + ((within % 16) / 4) * 32 + within / 16;
  *c = (tile % tiles_per_row) * kSwizzleCols + within % 4;
}

// ---- sizes, 64-bit, overflow-checked (false on overflow or a non-positive operand) ----

CAKE_HD CAKE_FORCEINLINE bool checked_mul(int64_t a, int64_t b, int64_t *out) {
  if (a < 0 || b < 0) return false;
  if (a != 0 && b > INT64_MAX / a) return false;
  *out = a * b;
  return true;
}

CAKE_HD CAKE_FORCEINLINE int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Rows and columns of a scale matrix after padding to the 128x4 swizzle tile.
CAKE_HD CAKE_FORCEINLINE int64_t scale_rows_padded(int64_t rows) {
  return ceil_div(rows, kSwizzleRows) * kSwizzleRows;
}
CAKE_HD CAKE_FORCEINLINE int64_t scale_cols_padded(int64_t cols) {
  return ceil_div(cols, kSwizzleCols) * kSwizzleCols;
}

// Bytes of a swizzled scale matrix of R rows and C columns: R' * C'.
CAKE_HD CAKE_FORCEINLINE bool scale_matrix_bytes(int64_t rows, int64_t cols, int64_t *bytes) {
  if (rows <= 0 || cols <= 0 || rows > INT64_MAX - kSwizzleRows) return false;
  return checked_mul(scale_rows_padded(rows), scale_cols_padded(cols), bytes);
}

// The buffers of one SwiGLU + MXFP8 call. O = K forward, 2K backward.
struct SwigluBufferBytes {
  int64_t out_cols;     // O
  int64_t q_bytes;      // row_q and col_q each: M * O
  int64_t row_s_bytes;  // swizzled [M, O/32] padded
  int64_t col_s_bytes;  // swizzled [O, M/32] padded
};

// M and K are positive; the block count of a dimension is rounded up (only multiples of 32
// occur under the current validation, where it is exact).
CAKE_HD inline bool swiglu_buffer_bytes(bool backward, int64_t M, int64_t K,
                                        SwigluBufferBytes *out) {
  if (M <= 0 || K <= 0) return false;
  if (K > INT64_MAX / 4) return false;  // 2K columns of input, 2K outputs backward
  const int64_t O = backward ? 2 * K : K;
  SwigluBufferBytes b;
  b.out_cols = O;
  if (!checked_mul(M, O, &b.q_bytes)) return false;
  int64_t in_elems;
  if (!checked_mul(M, 2 * K, &in_elems) || in_elems > INT64_MAX / 2) return false;  // in bytes
  if (!scale_matrix_bytes(M, ceil_div(O, kBlockElems), &b.row_s_bytes)) return false;
  if (!scale_matrix_bytes(O, ceil_div(M, kBlockElems), &b.col_s_bytes)) return false;
  *out = b;
  return true;
}

}  // namespace mx
}  // namespace cake
