#include "swiglu_range_ref.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include <algorithm>
#include <cmath>

#include "mxfp8_encode.h"

namespace cake_ref {

namespace {

namespace mx = cake::mx;

float bf(uint16_t h) { return mx::bf16_to_float(h); }
float f32(uint32_t b) { return mx::bits_to_float(b); }

// BF16's rounding threshold to Inf: the midpoint between its largest value and 2^128.
const double kInfThreshold = ldexp(1.0, 128) - ldexp(1.0, 119);

void note(std::string *detail, int *noted, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void note(std::string *detail, int *noted, const char *fmt, ...) {
  if (++*noted > 8) return;
  char buf[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  *detail += buf;
}

bool bf16_nonfinite(uint16_t h) { return (h & 0x7F80u) == 0x7F80u; }

// One value of Y against its reference v and tolerance tol.
void check_value(RangeReport *r, int *noted, uint16_t y, double v, double tol, const char *what,
                 int64_t m, int64_t o) {
  ++r->checked;
  const double yv = (double)bf(y);
  if (std::isnan(yv)) {
    ++r->nan;
    note(&r->detail, noted, "%s (m=%lld, o=%lld): NaN, reference %.6g\n", what, (long long)m,
         (long long)o, v);
  } else if (std::isinf(yv)) {
    ++r->inf;
    if (fabs(v) + tol < kInfThreshold || (fabs(v) > tol && (yv > 0) != (v > 0))) {
      ++r->wrong_inf;
      note(&r->detail, noted, "%s (m=%lld, o=%lld): %g, reference %.6g (tol %.3g)\n", what,
           (long long)m, (long long)o, yv, v, tol);
    }
  } else if (fabs(v) - tol >= kInfThreshold) {
    ++r->missing_inf;
    note(&r->detail, noted, "%s (m=%lld, o=%lld): %.6g, reference %.6g overflows BF16\n", what,
         (long long)m, (long long)o, yv, v);
  } else if (!(fabs(yv - v) <= tol)) {
    ++r->far;
    note(&r->detail, noted, "%s (m=%lld, o=%lld): %.6g, reference %.6g (tol %.3g)\n", what,
         (long long)m, (long long)o, yv, v, tol);
  }
}

void finish(RangeReport *r) {
  r->ok = r->nan == 0 && r->wrong_inf == 0 && r->missing_inf == 0 && r->far == 0;
}

bool e4m3_nan(uint8_t q) { return (q & 0x7Fu) == 0x7Fu; }
bool f32_nan(uint32_t s) { return (s & 0x7FFFFFFFu) > 0x7F800000u; }

// One encoded block of n values (y at stride ys, its bytes q at stride qs) with its scale's NaN
// test: NaN bytes or scale allowed only where y holds a non-finite value.
void check_block(RangeReport *r, int *noted, const uint16_t *y, int64_t ys, const uint8_t *q,
                 int64_t qs, int64_t n, bool nan_scale, const char *what, int64_t a, int64_t b) {
  bool inf_block = false;
  int64_t nan_bytes = 0;
  for (int64_t i = 0; i < n; ++i) {
    inf_block |= bf16_nonfinite(y[i * ys]);
    nan_bytes += e4m3_nan(q[i * qs]);
  }
  ++r->checked;
  if (inf_block) {
    ++r->inf;
  } else if (nan_bytes || nan_scale) {
    ++r->nan;
    note(&r->detail, noted, "%s block (%lld, %lld): %lld NaN bytes%s in a finite block\n", what,
         (long long)a, (long long)b, (long long)nan_bytes, nan_scale ? " and a NaN scale" : "");
  }
}

}  // namespace

std::vector<uint16_t> finite_bf16_values() {
  std::vector<uint16_t> v;
  v.reserve(65280);
  for (uint32_t b = 0; b < 65536; ++b) {
    if (!bf16_nonfinite((uint16_t)b)) v.push_back((uint16_t)b);
  }
  return v;
}

std::vector<uint16_t> range_gate_sample() {
  std::vector<uint16_t> v = {kBf16Max, 0xFF7F, kBf16MinNormal, 0x8080, 0x0000, 0x8000};
  for (uint32_t b = 0x3FA0; b <= 0x4100; ++b) v.push_back((uint16_t)b);  // [1.25, 8]
  const std::vector<uint16_t> all = finite_bf16_values();
  for (size_t i = 0; i < all.size(); i += 61) v.push_back(all[i]);
  return v;
}

void swiglu_range_inputs(int layout, const std::vector<uint16_t> &gates, int64_t M, int64_t K,
                         std::vector<uint16_t> *in, std::vector<uint16_t> *grad) {
  const int64_t n_g = (int64_t)gates.size();
  in->assign((size_t)(M * 2 * K), 0);
  grad->assign((size_t)(M * K), 0);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < K; ++k) {
      const int64_t i = m * K + k;
      const int64_t gi = layout == 0 ? i % n_g : (i / 16) % n_g;
      const int64_t pair = layout == 0 ? (i / n_g) % 16 : i % 16;
      (*in)[(size_t)(m * 2 * K + k)] = gates[(size_t)gi];
      (*in)[(size_t)(m * 2 * K + K + k)] = kRangeExtremes[pair / 4];
      (*grad)[(size_t)i] = kRangeExtremes[pair % 4];
    }
  }
}

RangeReport check_range_y(bool backward, const uint16_t *in, const uint16_t *grad, int64_t M,
                          int64_t K, const uint32_t *sigmoid_table, const std::vector<uint16_t> &y) {
  RangeReport r;
  int noted = 0;
  const int64_t O = backward ? 2 * K : K;
  const double rel = ldexp(1.0, -7), cancel = ldexp(1.0, -20), under = ldexp(1.0, -147);
  const double sub = ldexp(1.0, -133);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < K; ++k) {
      const uint16_t gb = in[m * 2 * K + k];
      const float s32 = f32(sigmoid_table[gb]);
      const double g = bf(gb), u = bf(in[m * 2 * K + K + k]), s = s32;
      if (!backward) {
        const double v = g * s * u;
        const double tol = rel * fabs(v) + cancel * fabs(v) + under * (fabs(u) + 1) + sub;
        check_value(&r, &noted, y[(size_t)(m * O + k)], v, tol, "Y", m, k);
        continue;
      }
      const double d = bf(grad[m * K + k]);
      const double gs1 = g * s * (1.0 - s);
      const double v_dg = d * u * (s + gs1);
      const double t_dg = rel * fabs(v_dg) + cancel * fabs(d * u) * (fabs(s) + fabs(gs1)) +
                          under * (fabs(d * u) + fabs(u) + fabs(d) + 1) + sub;
      check_value(&r, &noted, y[(size_t)(m * O + k)], v_dg, t_dg, "dgate", m, k);
      const double v_du = d * g * s;
      const double t_du = (rel + cancel) * fabs(v_du) + under * (fabs(d) + 1) + sub;
      check_value(&r, &noted, y[(size_t)(m * O + K + k)], v_du, t_du, "dup", m, K + k);
      // The model's own FP32 steps: where dact * grad overflows (the wide dgate).
      const float g32 = bf(gb), a32 = g32 * s32;
      const float dact = fmaf(a32, 1.0f - s32, s32);
      if (std::isinf(dact * bf(grad[m * K + k]))) ++r.wide;
    }
  }
  finish(&r);
  return r;
}

RangeReport check_range_mxfp8(int form, int64_t M, int64_t K, const std::vector<uint16_t> &y,
                              const uint8_t *row_q, const uint8_t *row_s, const uint8_t *col_q,
                              const uint8_t *col_s) {
  RangeReport r;
  int noted = 0;
  const int64_t O = form >= 3 ? 2 * K : K, B = mx::kBlockElems;
  if (form % 3 != 1) {
    const int64_t Cp = mx::scale_cols_padded(O / B);
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t j = 0; j < O / B; ++j) {
        check_block(&r, &noted, y.data() + m * O + j * B, 1, row_q + m * O + j * B, 1, B,
                    row_s[mx::swizzle_offset(m, j, Cp)] == 255, "row", m, j);
      }
    }
  }
  if (form % 3 != 0) {
    const int64_t Cp = mx::scale_cols_padded(M / B);
    for (int64_t o = 0; o < O; ++o) {
      for (int64_t j = 0; j < M / B; ++j) {
        check_block(&r, &noted, y.data() + j * B * O + o, O, col_q + o * M + j * B, 1, B,
                    col_s[mx::swizzle_offset(o, j, Cp)] == 255, "col", o, j);
      }
    }
  }
  finish(&r);
  return r;
}

RangeReport check_range_fp8(int form, int64_t M, int64_t K, const std::vector<uint16_t> &y,
                            const uint8_t *row_q, const uint32_t *row_s, const uint8_t *col_q,
                            const uint32_t *col_s) {
  RangeReport r;
  int noted = 0;
  const int64_t O = form >= 3 ? 2 * K : K, B = 128;
  if (form % 3 != 1) {
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t j = 0; j < O / B; ++j) {
        check_block(&r, &noted, y.data() + m * O + j * B, 1, row_q + m * O + j * B, 1, B,
                    f32_nan(row_s[j * M + m]), "row", m, j);
      }
    }
  }
  if (form % 3 != 0) {
    for (int64_t o = 0; o < O; ++o) {
      for (int64_t j = 0; j * B < M; ++j) {  // the last block of a column may be partial
        check_block(&r, &noted, y.data() + j * B * O + o, O, col_q + o * M + j * B, 1,
                    std::min(B, M - j * B), f32_nan(col_s[j * O + o]), "col", o, j);
      }
    }
  }
  finish(&r);
  return r;
}

}  // namespace cake_ref
