#include "swiglu_grouped_ref.h"

#include <string.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "swiglu_fp8_ref.h"
#include "swiglu_mxfp8_ref.h"

namespace cake_ref {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t cols_padded4(int64_t c) { return ceil_div(c, 4) * 4; }
int64_t rows_padded128(int64_t r) { return ceil_div(r, 128) * 128; }

}  // namespace

GroupRows grouped_rows(const std::vector<int32_t> &offsets, int64_t T) {
  GroupRows g;
  int64_t c = 0, pad = 0, prev_raw = 0;
  for (size_t e = 0; e < offsets.size(); ++e) {
    const int64_t raw = offsets[e];
    if (raw < prev_raw) g.status |= 1;
    if (raw > T) g.status |= 2;
    prev_raw = raw;
    const int64_t end = std::min(T, std::max(c, raw));
    g.start.push_back(c);
    g.rows.push_back(end - c);
    g.pad.push_back(pad);
    pad += ceil_div(end - c, 128) * 128;
    c = end;
  }
  g.pad_total = pad;
  return g;
}

namespace {
// An expert's variant: its rows' weights start at its first token.
SwigluVariant expert_variant(const SwigluVariant *v, int64_t c0) {
  if (v == nullptr) return SwigluVariant{};
  SwigluVariant e = *v;
  if (e.p != nullptr) e.p += c0;
  return e;
}
}  // namespace

int64_t grouped_scale_rows(int64_t T, int64_t E) {
  return (T + 127 * std::min(E, T)) / 128 * 128;
}

void swiglu_mxfp8_grouped_model(int form, const uint16_t *in, const uint16_t *grad, int64_t T,
                                int64_t K, const std::vector<int32_t> &offsets,
                                const uint32_t *sigmoid_table, uint8_t poison, GroupedOut *out,
                                const SwigluVariant *v, float *dp) {
  const bool bwd = form_backward(form), row = form_rowwise(form), col = form_colwise(form);
  const int64_t O = bwd ? 2 * K : K, E = (int64_t)offsets.size();
  const int64_t P = grouped_scale_rows(T, E);
  const int64_t row_cp = cols_padded4(O / 32), col_rp = rows_padded128(O);
  *out = GroupedOut{};
  if (row) {
    out->row_q.assign((size_t)(T * O), poison);
    out->row_s.assign((size_t)(P * row_cp), poison);
  }
  if (col) {
    out->col_q.assign((size_t)(T * O), poison);
    out->col_s.assign((size_t)(col_rp * P / 32), poison);
  }
  const GroupRows g = grouped_rows(offsets, T);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t n = g.rows[e], c0 = g.start[e], p0 = g.pad[e];
    if (n == 0) continue;
    std::vector<uint16_t> y;
    const SwigluVariant ve = expert_variant(v, c0);
    swiglu_y(bwd, in + c0 * 2 * K, bwd ? grad + c0 * K : nullptr, n, K, sigmoid_table, &y,
             v ? &ve : nullptr, dp ? dp + c0 : nullptr);
    if (row) {
      Mxfp8Out q;
      mxfp8_quantize(y.data(), n, O, true, false, &q);
      memcpy(out->row_q.data() + c0 * O, q.row_q.data(), (size_t)(n * O));
      // Expert e's tiles: the ungrouped matrix of its n rows, from padded row p[e].
      memcpy(out->row_s.data() + p0 * row_cp, q.row_s.data(), q.row_s.size());
    }
    if (col) {
      // The partial last block: Y completed with zero rows, only the expert's rows kept.
      const int64_t n32 = ceil_div(n, 32) * 32;
      y.resize((size_t)(n32 * O), 0);
      Mxfp8Out q;
      mxfp8_quantize(y.data(), n32, O, false, true, &q);
      for (int64_t o = 0; o < O; ++o) {
        memcpy(out->col_q.data() + o * T + c0, q.col_q.data() + o * n32, (size_t)n);
      }
      memcpy(out->col_s.data() + col_rp * p0 / 32, q.col_s.data(), q.col_s.size());
    }
  }
}

void swiglu_fp8_grouped_model(int form, const uint16_t *in, const uint16_t *grad, int64_t T,
                              int64_t K, const std::vector<int32_t> &offsets,
                              const uint32_t *sigmoid_table, int rule, uint8_t poison,
                              GroupedOut *out, const SwigluVariant *v, float *dp) {
  const bool bwd = form_backward(form), row = form_rowwise(form), col = form_colwise(form);
  const int64_t O = bwd ? 2 * K : K, E = (int64_t)offsets.size(), J = O / 128;
  const int64_t P = grouped_scale_rows(T, E);
  *out = GroupedOut{};
  if (row) {
    out->row_q.assign((size_t)(T * O), poison);
    out->row_s.assign((size_t)(4 * P * J), poison);
  }
  if (col) {
    out->col_q.assign((size_t)(T * O), poison);
    out->col_s.assign((size_t)(4 * O * (P / 128)), poison);
  }
  const GroupRows g = grouped_rows(offsets, T);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t n = g.rows[e], c0 = g.start[e], p0 = g.pad[e];
    if (n == 0) continue;
    Fp8Out q;
    const SwigluVariant ve = expert_variant(v, c0);
    swiglu_fp8_model(form, in + c0 * 2 * K, bwd ? grad + c0 * K : nullptr, n, K, sigmoid_table,
                     rule, &q, v ? &ve : nullptr, dp ? dp + c0 : nullptr);
    // Every slice is the ungrouped call's buffer of the expert's rows.
    if (row) {
      memcpy(out->row_q.data() + c0 * O, q.row_q.data(), q.row_q.size());
      memcpy(out->row_s.data() + 4 * p0 * J, q.row_s.data(), 4 * q.row_s.size());
    }
    if (col) {
      memcpy(out->col_q.data() + c0 * O, q.col_q.data(), q.col_q.size());
      memcpy(out->col_s.data() + 4 * (p0 / 128) * O, q.col_s.data(), 4 * q.col_s.size());
    }
  }
}

GroupedCompare grouped_compare(int form, const GroupedOut &want, const uint8_t *row_q,
                               const uint8_t *row_s, const uint8_t *col_q, const uint8_t *col_s) {
  GroupedCompare c;
  int shown = 0;
  auto cmp = [&](const char *what, const std::vector<uint8_t> &w, const uint8_t *got) {
    for (size_t i = 0; i < w.size(); ++i) {
      ++c.bytes;
      if (w[i] == got[i]) continue;
      ++c.differing;
      c.ok = false;
      if (shown++ < 10) {
        char buf[160];
        snprintf(buf, sizeof buf, "%s[%zu]: want 0x%02x got 0x%02x\n", what, i, w[i], got[i]);
        c.detail += buf;
      }
    }
  };
  if (form_rowwise(form)) {
    cmp("row_q", want.row_q, row_q);
    cmp("row_s", want.row_s, row_s);
  }
  if (form_colwise(form)) {
    cmp("col_q", want.col_q, col_q);
    cmp("col_s", want.col_s, col_s);
  }
  return c;
}

std::vector<int32_t> grouped_test_offsets(int64_t T, int64_t E, uint32_t seed) {
  std::mt19937 rng(seed);
  static const int64_t kEdges[] = {0, 1, 31, 33, 127, 129};
  std::vector<int64_t> n((size_t)E, 0);
  int64_t left = T;
  for (int64_t e = 0; e < E && e < 6; ++e) {
    n[(size_t)e] = std::min(kEdges[e], left);
    left -= n[(size_t)e];
  }
  // The others: a random share of most of what is left (some rows may belong to no expert).
  if (E > 6 && left > 0) {
    std::uniform_real_distribution<double> w(0.0, 1.0);
    std::vector<double> share((size_t)(E - 6));
    double total = 0;
    for (double &s : share) total += (s = w(rng) * w(rng));
    const int64_t spread = left - (int64_t)(w(rng) * 0.1 * (double)left);
    for (int64_t e = 6; e < E; ++e) {
      const int64_t k = std::min(left, (int64_t)(share[(size_t)(e - 6)] / total * (double)spread));
      n[(size_t)e] = k;
      left -= k;
    }
  }
  std::shuffle(n.begin(), n.end(), rng);
  std::vector<int32_t> offsets;
  int64_t c = 0;
  for (int64_t k : n) offsets.push_back((int32_t)(c += k));
  return offsets;
}

}  // namespace cake_ref
