// Host model of the SwiGLU + FP8 blockwise 1x128 family (docs/spec/fp8-blockwise.md): the Y of
// the MXFP8 family's model (swiglu_mxfp8_ref.h, the same sigmoid table) encoded by the spec's
// block rule, written here on its own (the scale from float64 log2 and IEEE division, not the
// kernels' bit tricks), so that a test comparing the two checks the kernels' encoder.
// C++17, no CUDA. Build with -ffp-contract=off.
#pragma once
#include <stdint.h>

#include <string>
#include <vector>

namespace cake_ref {

// The outputs of one call; a disabled orientation's vectors are empty. Scales as FP32 bit
// patterns in the spec's MN-major layouts (rowwise (m, j) at j*M + m; colwise (o, i) at i*O + o).
struct Fp8Out {
  std::vector<uint8_t> row_q, col_q;
  std::vector<uint32_t> row_s, col_s;
};

// The spec's scale of a block from its BF16 amax bits (no sign): s (stored) and r (multiplier).
// rule 0: s = fp32(a/448), r = fp32(448/a); rule 1: s = 2^ceil(log2(a/448)), r = 1/s; with
// a = max(amax, 448 * 2^-126); amax Inf or NaN: both NaN (0x7FC00000).
void fp8_block_scale_model(uint32_t amax_bits, int rule, float *s, float *r);

// FP8 blockwise of Y [M, O] (O a multiple of 128, any M >= 1): rowwise (row_q [M, O], row_s
// [M, O/128] MN-major) and/or colwise (col_q [O, M] = transpose, col_s [O, ceil(M/128)]
// MN-major; the last block of a column holds rows [128 * (ceil(M/128) - 1), M)).
void fp8_blockwise_quantize(const uint16_t *y, int64_t M, int64_t O, bool rowwise, bool colwise,
                            int rule, Fp8Out *out);

// The model: swiglu_y (swiglu_mxfp8_ref.h) then fp8_blockwise_quantize for the form.
// With a variant `v` (swiglu_mxfp8_ref.h), its Y, and dp (weighted backward, dp non-NULL).
struct SwigluVariant;
void swiglu_fp8_model(int form, const uint16_t *in, const uint16_t *grad, int64_t M, int64_t K,
                      const uint32_t *sigmoid_table, int rule, Fp8Out *out,
                      const SwigluVariant *v = nullptr, float *dp = nullptr);

// Byte comparison of a call's outputs (host copies; NULL for a disabled orientation) with the
// model's. `detail` names the first differences.
struct Fp8Compare {
  bool ok = true;
  int64_t bytes = 0, differing = 0;
  std::string detail;
};
Fp8Compare fp8_compare(int form, int64_t M, int64_t K, const Fp8Out &want, const uint8_t *row_q,
                       const uint32_t *row_s, const uint8_t *col_q, const uint32_t *col_s);

// Semantic check of one block's encoding, independent of the rule's arithmetic: for a finite
// block, s is a positive normal FP32 (a power of two for rule 1); every decoded value
// e4m3(q) * s is within half an E4M3 step (at its magnitude, 2^-9 * s below 2^-6 * s) of v,
// allowing the extra FP32 rounding of v * r; the block's largest |q| decodes to within
// [amax / 2, amax] * (1 +- 2^-3) when amax is above the floor. For a NaN/Inf block: s NaN and
// every q 0x7F. Returns an empty string or the first violation.
std::string fp8_block_semantics(const uint16_t *v, int64_t n, int64_t stride, const uint8_t *q,
                                int64_t qstride, uint32_t s_bits, int rule);

}  // namespace cake_ref
