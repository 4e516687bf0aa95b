// Host model of the grouped SwiGLU forms (docs/spec/swiglu-grouped.md): the effective and padded
// offsets, and each expert's rows through the ungrouped family's model (swiglu_mxfp8_ref.h,
// swiglu_fp8_ref.h), its bytes written at the spec's grouped layouts into whole buffers that
// start as a poison value, so that the bytes the spec leaves unwritten keep it. An MXFP8 expert
// whose row count is not a multiple of 32 is modelled as the spec defines its partial colwise
// block: its Y completed with zero rows to the next multiple of 32, only its own rows kept.
// C++17, no CUDA. Build with -ffp-contract=off.
#pragma once
#include <stdint.h>

#include <string>
#include <vector>

namespace cake_ref {

// The experts of a call from its offsets and T (spec, "The rows of an expert").
struct GroupRows {
  std::vector<int64_t> start, rows, pad;  // per expert: c[e-1], n_e, p[e]
  int64_t pad_total = 0;                  // p[E]
  int32_t status = 0;                     // the status word's bits
};
GroupRows grouped_rows(const std::vector<int32_t> &offsets, int64_t T);

// P = 128 * floor((T + 127 * min(E, T)) / 128).
int64_t grouped_scale_rows(int64_t T, int64_t E);

// Whole grouped buffers (every orientation of the form; empty ones for a disabled orientation).
struct GroupedOut {
  std::vector<uint8_t> row_q, row_s, col_q, col_s;  // FP8 blockwise scales as bytes (FP32 LE)
};

// The model of a grouped call of base form `form` (0..5) with `offsets`: buffers of the spec's
// sizes filled with `poison`, then each expert's bytes. in [T, 2K], grad [T, K].
// With a variant `v` (swiglu_mxfp8_ref.h; its p one a token, [T]), its Y, and, weighted
// backward, dp[c] for every token c of an expert (dp [T] non-NULL; other tokens untouched).
struct SwigluVariant;
void swiglu_mxfp8_grouped_model(int form, const uint16_t *in, const uint16_t *grad, int64_t T,
                                int64_t K, const std::vector<int32_t> &offsets,
                                const uint32_t *sigmoid_table, uint8_t poison, GroupedOut *out,
                                const SwigluVariant *v = nullptr, float *dp = nullptr);
void swiglu_fp8_grouped_model(int form, const uint16_t *in, const uint16_t *grad, int64_t T,
                              int64_t K, const std::vector<int32_t> &offsets,
                              const uint32_t *sigmoid_table, int rule, uint8_t poison,
                              GroupedOut *out, const SwigluVariant *v = nullptr,
                              float *dp = nullptr);

// Byte comparison of a call's buffers (host copies; NULL for a disabled orientation) with the
// model's; `detail` names the first differences by buffer and byte.
struct GroupedCompare {
  bool ok = true;
  int64_t bytes = 0, differing = 0;
  std::string detail;
};
GroupedCompare grouped_compare(int form, const GroupedOut &want, const uint8_t *row_q,
                               const uint8_t *row_s, const uint8_t *col_q, const uint8_t *col_s);

// Expert sizes for tests: E counts summing to at most T with the edge sizes 0, 1, 31, 33, 127,
// 129 among them where they fit, the rest random; returned as end offsets (the last may be
// below T: rows of no expert).
std::vector<int32_t> grouped_test_offsets(int64_t T, int64_t E, uint32_t seed);

}  // namespace cake_ref
