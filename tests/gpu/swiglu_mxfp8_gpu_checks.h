// Checks the SwiGLU + MXFP8 GPU tests run on device outputs copied back to the host. Host C++
// only (no CUDA): the test launches, copies, and calls these; each returns a report whose
// summary() names the first mismatches in logical coordinates, so a failure reads as
// "row_q (m=161, o=300): expected 0x3a got 0x3b" rather than a byte offset.
#pragma once
#include <stdint.h>

#include <string>
#include <vector>

#include "swiglu_mxfp8_ref.h"

namespace cake_gpu_checks {

struct Mismatch {
  std::string buffer;  // "row_q", "row_s", "col_q", "col_s", "sigmoid[...]", "e4m3"
  int64_t row = -1;    // q: m (row_q) or o (col_q); s: scale row; tables: index
  int64_t col = -1;    // q: o (row_q) or m (col_q); s: scale column; -1 for padding / tables
  bool padding = false;
  uint32_t expected = 0, got = 0;
};

struct CompareReport {
  bool ok = true;
  int64_t compared = 0;     // bytes (or table entries) compared
  int64_t mismatches = 0;
  std::vector<Mismatch> first;  // at most max_report of them
  std::string summary() const;  // one line, then one line per reported mismatch
};

// Device outputs against the host model, byte for byte: data and scales, padding included (the
// model's padding is 0x00). Pointers of orientations the form lacks are ignored.
CompareReport compare_outputs(int form, int64_t M, int64_t K, const cake_ref::Mxfp8Out &expected,
                              const uint8_t *row_q, const uint8_t *row_s, const uint8_t *col_q,
                              const uint8_t *col_s, int max_report = 8);

// `both` equals `rowwise` plus `colwise` byte for byte (all from the device): the both-form
// outputs against the rowwise form's and the colwise form's, same direction, same inputs.
CompareReport compare_both_with_parts(bool backward, int64_t M, int64_t K,
                                      const uint8_t *both_row_q, const uint8_t *both_row_s,
                                      const uint8_t *both_col_q, const uint8_t *both_col_s,
                                      const uint8_t *row_q, const uint8_t *row_s,
                                      const uint8_t *col_q, const uint8_t *col_s,
                                      int max_report = 8);

// Every padding byte of the scale buffers is 0x00 (run on buffers poisoned before the call).
CompareReport check_scale_padding(int form, int64_t M, int64_t K, const uint8_t *row_s,
                                  const uint8_t *col_s, int max_report = 8);

// A device sigmoid table (one sigmoid form x band form) against the exact sequence's table, bit
// for bit over all 65,536 gates; `name` labels the mismatches.
CompareReport compare_sigmoid_tables(const uint32_t *expected, const uint32_t *got,
                                     const std::string &name, int max_report = 8);

// The hardware E4M3 conversion table (kernels/common/swiglu_sigmoid_table.cuh,
// cake_e4m3_cvt_table: entry b = cvt(bf16 value b * 2^scale_exp)) against the software encoder.
// NaN inputs are skipped (the encoding of a NaN never reaches an output: such blocks are 0x7F).
CompareReport check_e4m3_cvt_table(const uint8_t *hw, int scale_exp, int max_report = 8);

}  // namespace cake_gpu_checks
