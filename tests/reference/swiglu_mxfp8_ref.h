// Host references of the SwiGLU + MXFP8 family (docs/spec/swiglu-mxfp8.md, "Guarantees" and "How the tests establish it").
//
//  1. The model: exactly the spec's steps in FP32 on the CPU (RN arithmetic, fmaf, RNE to BF16,
//     the MXFP8 encoder of kernels/common/mxfp8_encode.h). The one step the CPU cannot reproduce,
//     ex2.approx, enters through a table: sigmoid bits per BF16 gate value (65,536 entries,
//     indexed by the gate's bit pattern). The GPU test measures the device's table first
//     (kernels/common/swiglu_sigmoid_table.cuh), checks it with check_sigmoid_table(), and the
//     model then uses it; device outputs must match the model byte for byte.
//  2. The second oracle: the pure float64 formula, rounded once to BF16, encoded with the same
//     encoder, compared with FlashInfer's policy (oracle_check()).
//
// C++17, no CUDA. Build with -ffp-contract=off (no mul+add exists in the model, but keep it so).
#pragma once
#include <stdint.h>

#include <string>
#include <vector>

namespace cake_ref {

constexpr int kTableSize = 65536;

// The outputs of one call; a disabled orientation's vectors are empty. Scale vectors hold the
// whole padded swizzled matrix (padding 0x00).
struct Mxfp8Out {
  std::vector<uint8_t> row_q, row_s, col_q, col_s;
};

// cake_swiglu_form values: direction * 3 + orientation.
inline bool form_backward(int form) { return form >= 3; }
inline bool form_rowwise(int form) { return form % 3 != 1; }
inline bool form_colwise(int form) { return form % 3 != 0; }

// A host stand-in for the device table: the exact sequence with ex2.approx replaced by a
// correctly rounded 2^t. Not the device's bits (MUFU.EX2 differs by an ulp here and there); for
// host-only tests of the model and of the checker.
void host_sigmoid_table(std::vector<uint32_t> *table);

// The float64 sigmoid 1/(1+exp(-g)) of a BF16 gate.
double sigmoid_f64(uint16_t gate_bits);

// A SwiGLU variant (docs/spec/swiglu-mxfp8.md, "Variants"; swiglu_variant_ref.cc): the clamped
// activation with its alpha and limit, and, weighted, one p a row of the problem (p[0] is the
// problem's row 0). With a variant, the sigmoid table holds the sigmoid of z(g) per BF16 gate g
// (variant_sigmoid_table(), or the device's for the same alpha and limit).
struct SwigluVariant {
  bool clamped = false;
  float alpha = 1.702f, limit = 7.0f;
  const float *p = nullptr;  // non-NULL: weighted
};
// What the sigmoid is taken of: alpha * min(g, limit) (NaN kept) clamped, else g.
float variant_z(const SwigluVariant &v, float g);
// The host stand-in table (ex2 correctly rounded, as host_sigmoid_table()) of z(g).
void variant_sigmoid_table(const SwigluVariant &v, std::vector<uint32_t> *table);
// The spec's dp of one row from its K terms (a tree over each 32-column block, the blocks
// summed in order from +0).
float variant_dp_sum(const float *terms, int64_t K);

// Y, the BF16 values that get quantized, [M, O] row-major (O = K forward, 2K backward), from
// in [M, 2K] (gate | up), grad [M, K] (backward), and the sigmoid table. With a variant `v`, its
// Y, and, weighted backward, dp[0..M) (dp non-NULL).
void swiglu_y(bool backward, const uint16_t *in, const uint16_t *grad, int64_t M, int64_t K,
              const uint32_t *sigmoid_table, std::vector<uint16_t> *y,
              const SwigluVariant *v = nullptr, float *dp = nullptr);
void swiglu_variant_y(bool backward, const uint16_t *in, const uint16_t *grad, int64_t M,
                      int64_t K, const uint32_t *sigmoid_table, const SwigluVariant &v,
                      std::vector<uint16_t> *y, float *dp);

// The same from the pure float64 formula, rounded once to BF16 (round to nearest even).
void swiglu_y_f64(bool backward, const uint16_t *in, const uint16_t *grad, int64_t M, int64_t K,
                  std::vector<uint16_t> *y);

// MXFP8 of Y [M, O] (M and O multiples of 32): rowwise (row_q [M, O], row_s swizzled [M, O/32])
// and/or colwise (col_q [O, M] = transpose, col_s swizzled [O, M/32]).
void mxfp8_quantize(const uint16_t *y, int64_t M, int64_t O, bool rowwise, bool colwise,
                    Mxfp8Out *out);

// The model: swiglu_y then mxfp8_quantize for the form.
void swiglu_mxfp8_model(int form, const uint16_t *in, const uint16_t *grad, int64_t M, int64_t K,
                        const uint32_t *sigmoid_table, Mxfp8Out *out,
                        const SwigluVariant *v = nullptr, float *dp = nullptr);

// Second oracle. Forward: byte-exact except where the sigmoid differs (an element whose model Y
// differs from the float64 Y is excused, and so is the scale of its block and, when that scale
// differs, the whole block). Backward: every scale within 1 of the oracle's, every element within
// 1 E4M3 ordinal (compared at the coarser of the two scales when the scales differ), and at most
// max(8, 1e-5 * n) differing bytes, n = all q and s bytes compared.
struct OracleReport {
  bool ok = true;
  int64_t bytes = 0;           // bytes compared
  int64_t differing = 0;       // backward: scale bytes that differ, elements whose value differs
  int64_t scale_steps = 0;     // backward: blocks whose scale is one step from the oracle's
  int64_t allowed = 0;         // backward budget for `differing`
  int64_t excused = 0;         // forward: bytes skipped because the sigmoid differs
  int64_t violations = 0;      // hard failures (gap too large, unexcused difference)
  std::string detail;          // first violations, readable
};
// The pointers are the device's outputs copied to the host (NULL for a disabled orientation),
// in the spec's layouts. sigmoid_table is the device's measured table (used to find where the
// sigmoid differs).
OracleReport oracle_check(int form, const uint16_t *in, const uint16_t *grad, int64_t M, int64_t K,
                          const uint32_t *sigmoid_table, const uint8_t *row_q,
                          const uint8_t *row_s, const uint8_t *col_q, const uint8_t *col_s);

// Checks a sigmoid table (FP32 bits indexed by BF16 gate bits). Hard criteria (`ok`):
//   - finite and within [0, 1] for every non-NaN gate, monotone non-decreasing in the gate;
//   - where the value is a normal FP32 number: within kSeqUlp ulp of 1/(1 + 2^t) evaluated in
//     float64 with the sequence's own FP32 t = fl(g * c) (isolates ex2.approx, 1 + e and rcp),
//     and within 4 + 1.5|g| ulp of the float64 sigmoid (the error that rounding t to FP32 and c
//     to FP32 can cause: |dt| <= ulp(t)/2 + |t| * 1.34e-8, times ln 2, is at most ~0.92|t|).
// The spec's bound, 2 + |g|/2 ulp of the float64 sigmoid, is reported separately (`spec_*`): a
// table computed with a correctly rounded 2^t already exceeds it (50 ulp at g = -84, 1.69 times
// the bound at g = -49.25), because t = fl(g * c) is off by up to half an FP32 ulp of t.
constexpr double kSeqUlp = 6.0;  // ex2.approx (about 2 ulp) + 3 FP32 roundings, with margin
struct SigmoidTableReport {
  bool ok = true;
  int64_t failures = 0;
  double max_ulp_seq = 0;      // largest error vs 1/(1 + 2^fl(g*c)), in ulps
  double max_ulp = 0;          // largest error vs the float64 sigmoid, in ulps
  bool spec_ok = true;         // every normal value within 2 + |g|/2 ulp of the float64 sigmoid
  int64_t spec_violations = 0;
  uint16_t spec_worst_gate = 0;
  double spec_worst_ratio = 0; // error / (2 + |g|/2) at spec_worst_gate
  std::string detail;
};
SigmoidTableReport check_sigmoid_table(const uint32_t *table);

// Ordinal of an E4M3 code on the number line (sign-magnitude to integer; +0 and -0 are 0).
inline int e4m3_ordinal(uint8_t q) { return (q & 0x80) ? -(int)(q & 0x7F) : (int)(q & 0x7F); }

}  // namespace cake_ref
