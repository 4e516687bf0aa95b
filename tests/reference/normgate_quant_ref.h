// Host model of the norm-gate's quantized y (docs/spec/normgate.md, "Quantized y"): the BF16 y
// of the plain forward, viewed as the [rows / heads, heads * d] matrix, encoded by the format's
// host model (FP8 blockwise: swiglu_fp8_ref.h's rowwise rule, written apart from the kernels'
// encoder; MXFP8: swiglu_mxfp8_ref.h's rowwise encoder). C++17, no CUDA.
#pragma once
#include <stdint.h>

#include <string>
#include <vector>

namespace cake_ref {

// format: CAKE_NORMGATE_QUANT_FP8_BLOCKWISE (1) or CAKE_NORMGATE_QUANT_MXFP8 (2).
struct NormgateQuantOut {
  std::vector<uint8_t> q;      // E4M3 [rows, d] packed
  std::vector<uint8_t> scale;  // FP32 MN-major [T, K/128] as bytes, or the swizzled E8M0 matrix
};

// y: BF16 [rows, d] with row stride y_stride (elements).
void normgate_quant_model(const uint16_t *y, int64_t rows, int32_t d, int64_t y_stride,
                          int64_t heads, int format, int rule, NormgateQuantOut *out);

// Byte comparison with the model; an empty string when equal, else the first differences.
std::string normgate_quant_compare(const NormgateQuantOut &want, const uint8_t *q,
                                   const uint8_t *scale, int format, int64_t rows, int32_t d,
                                   int64_t heads);

}  // namespace cake_ref
