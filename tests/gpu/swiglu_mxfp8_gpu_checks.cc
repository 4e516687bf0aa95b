#include "swiglu_mxfp8_gpu_checks.h"

#include <math.h>
#include <stdio.h>

#include "mxfp8_encode.h"

namespace cake_gpu_checks {

namespace mx = cake::mx;

namespace {

struct Layout {
  int64_t O = 0;
  int64_t q_bytes = 0;
  int64_t row_s_bytes = 0, row_s_cols = 0, row_s_cols_padded = 0;
  int64_t col_s_bytes = 0, col_s_cols = 0, col_s_cols_padded = 0;
};

Layout layout(bool backward, int64_t M, int64_t K) {
  Layout l;
  mx::SwigluBufferBytes b;
  if (!mx::swiglu_buffer_bytes(backward, M, K, &b)) return l;
  l.O = b.out_cols;
  l.q_bytes = b.q_bytes;
  l.row_s_bytes = b.row_s_bytes;
  l.row_s_cols = l.O / mx::kBlockElems;
  l.row_s_cols_padded = mx::scale_cols_padded(l.row_s_cols);
  l.col_s_bytes = b.col_s_bytes;
  l.col_s_cols = M / mx::kBlockElems;
  l.col_s_cols_padded = mx::scale_cols_padded(l.col_s_cols);
  return l;
}

void note(CompareReport *r, int max_report, Mismatch m) {
  r->ok = false;
  ++r->mismatches;
  if ((int)r->first.size() < max_report) r->first.push_back(std::move(m));
}

// q buffers: row_q byte i is (m, o) = (i / O, i % O); col_q byte i is (o, m) = (i / M, i % M).
void compare_q(CompareReport *r, const char *name, const uint8_t *want, const uint8_t *got,
               int64_t bytes, int64_t row_len, int max_report) {
  if (!got) return;
  for (int64_t i = 0; i < bytes; ++i) {
    ++r->compared;
    if (want[i] != got[i]) {
      Mismatch m;
      m.buffer = name;
      m.row = i / row_len;
      m.col = i % row_len;
      m.expected = want[i];
      m.got = got[i];
      note(r, max_report, m);
    }
  }
}

// s buffers: byte i is scale (r, c) by the inverse swizzle, or padding.
void compare_s(CompareReport *r, const char *name, const uint8_t *want, const uint8_t *got,
               int64_t bytes, int64_t rows, int64_t cols, int64_t cols_padded, int max_report) {
  if (!got) return;
  for (int64_t i = 0; i < bytes; ++i) {
    ++r->compared;
    if (want[i] != got[i]) {
      Mismatch m;
      m.buffer = name;
      mx::swizzle_position(i, cols_padded, &m.row, &m.col);
      m.padding = m.row >= rows || m.col >= cols;
      m.expected = want[i];
      m.got = got[i];
      note(r, max_report, m);
    }
  }
}

}  // namespace

std::string CompareReport::summary() const {
  char buf[256];
  snprintf(buf, sizeof buf, "%s: %lld of %lld differ\n", ok ? "ok" : "MISMATCH",
           (long long)mismatches, (long long)compared);
  std::string s = buf;
  for (const Mismatch &m : first) {
    if (m.buffer == "row_q") {
      snprintf(buf, sizeof buf, "  row_q (m=%lld, o=%lld): expected 0x%02x got 0x%02x\n",
               (long long)m.row, (long long)m.col, m.expected, m.got);
    } else if (m.buffer == "col_q") {
      snprintf(buf, sizeof buf, "  col_q (m=%lld, o=%lld): expected 0x%02x got 0x%02x\n",
               (long long)m.col, (long long)m.row, m.expected, m.got);
    } else if (m.col < 0) {
      snprintf(buf, sizeof buf, "  %s [%lld]: expected 0x%08x got 0x%08x\n", m.buffer.c_str(),
               (long long)m.row, m.expected, m.got);
    } else {
      snprintf(buf, sizeof buf, "  %s scale (r=%lld, c=%lld)%s: expected 0x%02x got 0x%02x\n",
               m.buffer.c_str(), (long long)m.row, (long long)m.col,
               m.padding ? " [padding]" : "", m.expected, m.got);
    }
    s += buf;
  }
  return s;
}

CompareReport compare_outputs(int form, int64_t M, int64_t K, const cake_ref::Mxfp8Out &expected,
                              const uint8_t *row_q, const uint8_t *row_s, const uint8_t *col_q,
                              const uint8_t *col_s, int max_report) {
  CompareReport r;
  const Layout l = layout(cake_ref::form_backward(form), M, K);
  if (cake_ref::form_rowwise(form)) {
    if ((int64_t)expected.row_q.size() != l.q_bytes ||
        (int64_t)expected.row_s.size() != l.row_s_bytes || !row_q || !row_s) {
      r.ok = false;
      r.mismatches = -1;  // shape disagreement: a test bug
      return r;
    }
    compare_q(&r, "row_q", expected.row_q.data(), row_q, l.q_bytes, l.O, max_report);
    compare_s(&r, "row_s", expected.row_s.data(), row_s, l.row_s_bytes, M, l.row_s_cols,
              l.row_s_cols_padded, max_report);
  }
  if (cake_ref::form_colwise(form)) {
    if ((int64_t)expected.col_q.size() != l.q_bytes ||
        (int64_t)expected.col_s.size() != l.col_s_bytes || !col_q || !col_s) {
      r.ok = false;
      r.mismatches = -1;
      return r;
    }
    compare_q(&r, "col_q", expected.col_q.data(), col_q, l.q_bytes, M, max_report);
    compare_s(&r, "col_s", expected.col_s.data(), col_s, l.col_s_bytes, l.O, l.col_s_cols,
              l.col_s_cols_padded, max_report);
  }
  return r;
}

CompareReport compare_both_with_parts(bool backward, int64_t M, int64_t K,
                                      const uint8_t *both_row_q, const uint8_t *both_row_s,
                                      const uint8_t *both_col_q, const uint8_t *both_col_s,
                                      const uint8_t *row_q, const uint8_t *row_s,
                                      const uint8_t *col_q, const uint8_t *col_s,
                                      int max_report) {
  CompareReport r;
  const Layout l = layout(backward, M, K);
  compare_q(&r, "row_q", row_q, both_row_q, l.q_bytes, l.O, max_report);
  compare_s(&r, "row_s", row_s, both_row_s, l.row_s_bytes, M, l.row_s_cols, l.row_s_cols_padded,
            max_report);
  compare_q(&r, "col_q", col_q, both_col_q, l.q_bytes, M, max_report);
  compare_s(&r, "col_s", col_s, both_col_s, l.col_s_bytes, l.O, l.col_s_cols, l.col_s_cols_padded,
            max_report);
  return r;
}

CompareReport check_scale_padding(int form, int64_t M, int64_t K, const uint8_t *row_s,
                                  const uint8_t *col_s, int max_report) {
  CompareReport r;
  const Layout l = layout(cake_ref::form_backward(form), M, K);
  auto scan = [&](const char *name, const uint8_t *s, int64_t bytes, int64_t rows, int64_t cols,
                  int64_t cols_padded) {
    if (!s) return;
    for (int64_t i = 0; i < bytes; ++i) {
      int64_t rr, cc;
      mx::swizzle_position(i, cols_padded, &rr, &cc);
      if (rr < rows && cc < cols) continue;
      ++r.compared;
      if (s[i] != 0) {
        Mismatch m;
        m.buffer = name;
        m.row = rr;
        m.col = cc;
        m.padding = true;
        m.expected = 0;
        m.got = s[i];
        note(&r, max_report, m);
      }
    }
  };
  if (cake_ref::form_rowwise(form)) {
    scan("row_s", row_s, l.row_s_bytes, M, l.row_s_cols, l.row_s_cols_padded);
  }
  if (cake_ref::form_colwise(form)) {
    scan("col_s", col_s, l.col_s_bytes, l.O, l.col_s_cols, l.col_s_cols_padded);
  }
  return r;
}

CompareReport compare_sigmoid_tables(const uint32_t *expected, const uint32_t *got,
                                     const std::string &name, int max_report) {
  CompareReport r;
  for (int64_t i = 0; i < cake_ref::kTableSize; ++i) {
    ++r.compared;
    if (expected[i] != got[i]) {
      Mismatch m;
      m.buffer = "sigmoid[" + name + "] gate";
      m.row = i;
      m.expected = expected[i];
      m.got = got[i];
      note(&r, max_report, m);
    }
  }
  return r;
}

CompareReport check_e4m3_cvt_table(const uint8_t *hw, int scale_exp, int max_report) {
  CompareReport r;
  for (int64_t b = 0; b < cake_ref::kTableSize; ++b) {
    const float x = mx::bf16_to_float((uint16_t)b);
    if (isnan(x)) continue;
    const float v = x * ldexpf(1.0f, scale_exp);
    const uint8_t want = mx::e4m3_rn_satfinite(v);
    ++r.compared;
    if (hw[b] != want) {
      Mismatch m;
      m.buffer = "e4m3 cvt of bf16";
      m.row = b;
      m.expected = want;
      m.got = hw[b];
      note(&r, max_report, m);
    }
  }
  return r;
}

}  // namespace cake_gpu_checks
