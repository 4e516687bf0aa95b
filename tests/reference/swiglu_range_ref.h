// The SwiGLU range rows (docs/spec/swiglu-mxfp8.md, "Range"): inputs at the ends of BF16's range
// and the checks that the outputs hold no NaN for them and agree with float64 where that is
// finite. Shared by the host test of the model (tests/host/test_swiglu_range_model.cc), the
// emulated kernels and the GPU test of every program (tests/gpu/test_swiglu_range.cu).
//
// Inputs: every finite BF16 gate (or a given list) against every pair (u, grad) of the four
// extremes BF16 max, -max, the smallest normal 2^-126 and 0, in two layouts of the M x K
// problem (layout 0: the gates run along k, one (u, grad) pair for 65,280 consecutive
// elements; layout 1: the 16 pairs run along k, so every 32- and 128-value block mixes them).
//
// The reference is float64 arithmetic on the sigmoid table's FP32 s (the spec's sequence with
// exact products): the model's Y is checked against it, not against the float64 sigmoid, whose
// distance to the table check_sigmoid_table() bounds. For gates below about -87 s is an FP32
// subnormal (0 below about -103.3), and products with |u|, |grad| near 2^128 scale that
// representation error; the tolerance carries it explicitly.
// C++17, no CUDA. Build with -ffp-contract=off.
#pragma once
#include <stdint.h>

#include <string>
#include <vector>

namespace cake_ref {

constexpr uint16_t kBf16Max = 0x7F7F;        // (2 - 2^-7) * 2^127
constexpr uint16_t kBf16MinNormal = 0x0080;  // 2^-126
// The four extremes of the range rows: max, -max, smallest normal, 0.
constexpr uint16_t kRangeExtremes[4] = {kBf16Max, 0xFF7F, kBf16MinNormal, 0x0000};

// Every finite BF16 gate bit pattern, ascending by pattern (65,280 of them).
std::vector<uint16_t> finite_bf16_values();

// A shorter list for the emulated kernels: the extremes (both signs of the smallest normal and
// of 0), every gate in [1.25, 8] (where |dact| > 1.0039 lets dact * grad overflow FP32 for a
// grad near BF16 max) and every 61st finite gate.
std::vector<uint16_t> range_gate_sample();

// in [M, 2K] (gate | up) and grad [M, K] of the range rows for `gates` (cycled), layout 0 or 1.
void swiglu_range_inputs(int layout, const std::vector<uint16_t> &gates, int64_t M, int64_t K,
                         std::vector<uint16_t> *in, std::vector<uint16_t> *grad);

struct RangeReport {
  bool ok = true;
  int64_t checked = 0;      // values (check_range_y) or blocks (the byte checks)
  int64_t nan = 0;          // NaN values of Y, or NaN bytes/scales outside an Inf block
  int64_t wrong_inf = 0;    // Y infinite where the reference is finite (with the tolerance)
  int64_t missing_inf = 0;  // Y finite where the reference overflows BF16 (with the tolerance)
  int64_t far = 0;          // finite Y farther from the reference than the tolerance
  int64_t inf = 0;          // infinite values of Y (or Inf blocks), all allowed
  int64_t wide = 0;         // backward: elements where FP32 dact * grad overflowed
  std::string detail;       // the first violations, readable
};

// The model's Y (swiglu_y with the same table) for finite inputs: no NaN; +-Inf only where the
// reference's magnitude, plus the tolerance, reaches BF16's rounding threshold to Inf
// (2^128 - 2^119); finite where it stays below the threshold by more than the tolerance; and
// within the tolerance of the reference otherwise. Tolerance: 2^-7 of the value (the BF16
// rounding and four FP32 ones), 2^-20 of the magnitudes of the terms (dact = s + a (1 - s)
// cancels near g = -1.28), and 2^-147 times the factors multiplying a, s and dact (their FP32
// underflow), plus 2^-133 (BF16 subnormals).
RangeReport check_range_y(bool backward, const uint16_t *in, const uint16_t *grad, int64_t M,
                          int64_t K, const uint32_t *sigmoid_table, const std::vector<uint16_t> &y);

// Encoded outputs (host copies; NULL for a disabled orientation; y the model's Y [M, O]): a NaN
// element (E4M3 0x7F, 0xFF) or NaN scale (MXFP8 byte 255, FP8 a NaN FP32) only in a block of y
// that holds an Inf (E4M3 has none; check_range_y bounds where Y may be Inf).
RangeReport check_range_mxfp8(int form, int64_t M, int64_t K, const std::vector<uint16_t> &y,
                              const uint8_t *row_q, const uint8_t *row_s, const uint8_t *col_q,
                              const uint8_t *col_s);
RangeReport check_range_fp8(int form, int64_t M, int64_t K, const std::vector<uint16_t> &y,
                            const uint8_t *row_q, const uint32_t *row_s, const uint8_t *col_q,
                            const uint32_t *col_s);

}  // namespace cake_ref
