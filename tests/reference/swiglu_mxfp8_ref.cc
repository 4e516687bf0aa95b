#include "swiglu_mxfp8_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>

#include "mxfp8_encode.h"

namespace cake_ref {

namespace mx = cake::mx;

namespace {

constexpr uint32_t kNegLog2eBits = 0xBFB8AA3Bu;

float f32(uint32_t b) { return mx::bits_to_float(b); }
uint32_t bits(float f) { return mx::float_to_bits(f); }
float bf(uint16_t h) { return mx::bf16_to_float(h); }

// double -> BF16, one rounding (round to nearest even), overflow to Inf.
uint16_t bf16_rn_f64(double x) {
  if (isnan(x)) return 0x7FC0;
  const uint16_t sign = signbit(x) ? 0x8000 : 0;
  const double a = fabs(x);
  if (isinf(a)) return sign | 0x7F80;
  if (a == 0) return sign;
  double quantum;
  if (a >= ldexp(1.0, -126)) {
    int e;
    frexp(a, &e);                 // a = f * 2^e, f in [0.5, 1)
    quantum = ldexp(1.0, e - 8);  // 8 significant bits
  } else {
    quantum = ldexp(1.0, -133);   // BF16 subnormal spacing
  }
  const double r = nearbyint(a / quantum) * quantum;  // exact scaling; RNE (default mode)
  if (r >= ldexp(1.0, 128)) return sign | 0x7F80;
  return (uint16_t)(sign | (bits((float)r) >> 16));  // r is a BF16 value: exact in float
}

int64_t scale_matrix_bytes(int64_t rows, int64_t cols) {
  return mx::scale_rows_padded(rows) * mx::scale_cols_padded(cols);
}

// Encodes one block of 32 BF16 values (stride apart in y) into q (stride qstride) and returns S.
uint8_t encode_block(const uint16_t *v, int64_t stride, uint8_t *q, int64_t qstride) {
  uint32_t amax = 0;
  for (int i = 0; i < mx::kBlockElems; ++i) {
    amax = std::max<uint32_t>(amax, v[i * stride] & 0x7FFFu);
  }
  const uint32_t s = mx::scale_from_amax_bits(amax);
  const float k = mx::inv_scale(s);
  for (int i = 0; i < mx::kBlockElems; ++i) {
    uint8_t b;
    if (s == mx::kScaleNaN) {
      b = mx::kE4m3NaN;
    } else {
      // The spec's literal step: e4m3(bf16(v * 2^(127-S))).
      b = mx::e4m3_rn_satfinite(bf(mx::bf16_rn(bf(v[i * stride]) * k)));
    }
    q[i * qstride] = b;
  }
  return (uint8_t)s;
}

void append(std::string *d, int64_t *count, const char *fmt, long long a, long long b,
            long long c, long long e) {
  if (++*count > 12) return;
  char buf[256];
  snprintf(buf, sizeof buf, fmt, a, b, c, e);
  *d += buf;
}

}  // namespace

void host_sigmoid_table(std::vector<uint32_t> *table) {
  table->assign(kTableSize, 0);
  const float c = f32(kNegLog2eBits);
  for (int b = 0; b < kTableSize; ++b) {
    const float g = bf((uint16_t)b);
    const float t = g * c;
    const float e = (float)exp2((double)t);
    const float d = 1.0f + e;
    (*table)[b] = bits(1.0f / d);
  }
}

double sigmoid_f64(uint16_t gate_bits) {
  const double g = (double)bf(gate_bits);
  return 1.0 / (1.0 + exp(-g));
}

void swiglu_y(bool backward, const uint16_t *in, const uint16_t *grad, int64_t M, int64_t K,
              const uint32_t *sigmoid_table, std::vector<uint16_t> *y, const SwigluVariant *v,
              float *dp) {
  if (v != nullptr) {
    swiglu_variant_y(backward, in, grad, M, K, sigmoid_table, *v, y, dp);
    return;
  }
  const int64_t O = backward ? 2 * K : K;
  y->assign((size_t)(M * O), 0);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < K; ++k) {
      const uint16_t gb = in[m * 2 * K + k];
      const float g = bf(gb), u = bf(in[m * 2 * K + K + k]);
      const float s = f32(sigmoid_table[gb]);
      const float a = g * s;
      if (!backward) {
        (*y)[m * O + k] = mx::bf16_rn(a * u);
      } else {
        const float d = bf(grad[m * K + k]);
        const float dact = fmaf(a, 1.0f - s, s);
        const float dd = dact * d;
        // dact * grad past FP32's range (|grad| near BF16's largest value): the product's
        // exponent unbounded, ((dact / 2) * grad) * u * 2 (docs/spec/swiglu-mxfp8.md, "Range").
        const float dg = std::isinf(dd) ? (((dact * 0.5f) * d) * u) * 2.0f : dd * u;
        (*y)[m * O + k] = mx::bf16_rn(dg);
        (*y)[m * O + K + k] = mx::bf16_rn(a * d);
      }
    }
  }
}

void swiglu_y_f64(bool backward, const uint16_t *in, const uint16_t *grad, int64_t M, int64_t K,
                  std::vector<uint16_t> *y) {
  const int64_t O = backward ? 2 * K : K;
  y->assign((size_t)(M * O), 0);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < K; ++k) {
      const uint16_t gb = in[m * 2 * K + k];
      const double g = bf(gb), u = bf(in[m * 2 * K + K + k]);
      const double s = 1.0 / (1.0 + exp(-g));
      if (!backward) {
        (*y)[m * O + k] = bf16_rn_f64(g * s * u);
      } else {
        const double d = bf(grad[m * K + k]);
        (*y)[m * O + k] = bf16_rn_f64(d * u * (s + g * s * (1.0 - s)));
        (*y)[m * O + K + k] = bf16_rn_f64(d * g * s);
      }
    }
  }
}

void mxfp8_quantize(const uint16_t *y, int64_t M, int64_t O, bool rowwise, bool colwise,
                    Mxfp8Out *out) {
  const int B = mx::kBlockElems;
  out->row_q.clear();
  out->row_s.clear();
  out->col_q.clear();
  out->col_s.clear();
  if (rowwise) {
    const int64_t C = O / B, Cp = mx::scale_cols_padded(C);
    out->row_q.assign((size_t)(M * O), 0);
    out->row_s.assign((size_t)scale_matrix_bytes(M, C), 0);
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t j = 0; j < C; ++j) {
        const uint8_t s = encode_block(y + m * O + j * B, 1, out->row_q.data() + m * O + j * B, 1);
        out->row_s[(size_t)mx::swizzle_offset(m, j, Cp)] = s;
      }
    }
  }
  if (colwise) {
    const int64_t C = M / B, Cp = mx::scale_cols_padded(C);
    out->col_q.assign((size_t)(M * O), 0);
    out->col_s.assign((size_t)scale_matrix_bytes(O, C), 0);
    for (int64_t o = 0; o < O; ++o) {
      for (int64_t i = 0; i < C; ++i) {
        // Column o, rows [32i, 32i+32): y stride O; col_q row o is contiguous in m.
        const uint8_t s = encode_block(y + i * B * O + o, O, out->col_q.data() + o * M + i * B, 1);
        out->col_s[(size_t)mx::swizzle_offset(o, i, Cp)] = s;
      }
    }
  }
}

void swiglu_mxfp8_model(int form, const uint16_t *in, const uint16_t *grad, int64_t M, int64_t K,
                        const uint32_t *sigmoid_table, Mxfp8Out *out, const SwigluVariant *v,
                        float *dp) {
  std::vector<uint16_t> y;
  const bool bwd = form_backward(form);
  swiglu_y(bwd, in, grad, M, K, sigmoid_table, &y, v, dp);
  mxfp8_quantize(y.data(), M, bwd ? 2 * K : K, form_rowwise(form), form_colwise(form), out);
}

OracleReport oracle_check(int form, const uint16_t *in, const uint16_t *grad, int64_t M, int64_t K,
                          const uint32_t *sigmoid_table, const uint8_t *row_q,
                          const uint8_t *row_s, const uint8_t *col_q, const uint8_t *col_s) {
  OracleReport rep;
  const bool bwd = form_backward(form);
  const int64_t O = bwd ? 2 * K : K;
  const int B = mx::kBlockElems;
  std::vector<uint16_t> y_model, y64;
  swiglu_y(bwd, in, grad, M, K, sigmoid_table, &y_model);
  swiglu_y_f64(bwd, in, grad, M, K, &y64);
  Mxfp8Out ora;
  mxfp8_quantize(y64.data(), M, O, form_rowwise(form), form_colwise(form), &ora);
  int64_t shown = 0;

  // One block: n = 32 elements, element i at y index yi(i), device/oracle byte at qi(i).
  auto check_block = [&](int64_t r, int64_t c, auto yi, const uint8_t *q_dev,
                         const uint8_t *q_or, auto qi, uint8_t s_dev, uint8_t s_or) {
    rep.bytes += B + 1;
    bool excused_block = false;
    bool excused[32];
    for (int i = 0; i < B; ++i) {
      excused[i] = y_model[(size_t)yi(i)] != y64[(size_t)yi(i)];
      excused_block |= excused[i];
    }
    if (!bwd) {
      if (s_dev != s_or) {
        if (!excused_block) {
          ++rep.violations;
          append(&rep.detail, &shown,
                 "block (%lld,%lld): scale %lld, oracle %lld (unexcused)\n", r, c,
                 s_dev, s_or);
        } else {
          rep.excused += B + 1;
        }
        return;
      }
      for (int i = 0; i < B; ++i) {
        const uint8_t a = q_dev[qi(i)], b = q_or[qi(i)];
        if (a == b) continue;
        if (excused[i] || e4m3_ordinal(a) == e4m3_ordinal(b)) {  // +-0 counts as excused
          ++rep.excused;
        } else {
          ++rep.violations;
          append(&rep.detail, &shown, "block (%lld,%lld) element %lld: 0x%02llx unexcused\n", r,
                 c, i, a);
        }
      }
      return;
    }
    // Backward policy.
    const bool nan_dev = s_dev == mx::kScaleNaN, nan_or = s_or == mx::kScaleNaN;
    if (nan_dev != nan_or || std::abs((int)s_dev - (int)s_or) > 1) {
      ++rep.violations;
      append(&rep.detail, &shown, "block (%lld,%lld): scale %lld vs oracle %lld (gap > 1)\n", r, c,
             s_dev, s_or);
      return;
    }
    // A differing byte: the scale byte when the scales differ, and an element whose value
    // differs at the two blocks' common (coarser) scale. Counting every element of a block
    // whose scale moved by the allowed one step would let a single legitimate scale step (an
    // amax on a power-of-two boundary rounded the other way in float64) exceed the allowance.
    if (s_dev != s_or) {
      ++rep.differing;
      ++rep.scale_steps;
    }
    if (nan_dev) return;
    const int coarse = std::max<int>(s_dev, s_or);
    for (int i = 0; i < B; ++i) {
      const uint8_t a = q_dev[qi(i)], b = q_or[qi(i)];
      // Numeric comparison: +0 (0x00) and -0 (0x80) are the same value. The sign of a zero
      // follows the sign of an underflowed product, which FP32 and float64 can disagree on
      // (e.g. s = 0 in FP32, 1e-76 in float64 for g = -174).
      if (e4m3_ordinal(a) == e4m3_ordinal(b) && s_dev == s_or) continue;
      int oa = e4m3_ordinal(a), ob = e4m3_ordinal(b);
      if (s_dev != s_or) {  // re-express the finer-scaled code at the coarser scale
        const float va = mx::e4m3_to_float(a) * ldexpf(1.0f, (int)s_dev - coarse);
        const float vb = mx::e4m3_to_float(b) * ldexpf(1.0f, (int)s_or - coarse);
        oa = e4m3_ordinal(mx::e4m3_rn_satfinite(va));
        ob = e4m3_ordinal(mx::e4m3_rn_satfinite(vb));
      }
      if (oa == ob) continue;
      ++rep.differing;
      if (std::abs(oa - ob) > 1) {
        ++rep.violations;
        append(&rep.detail, &shown, "block (%lld,%lld) element %lld: ordinal gap %lld\n", r, c, i,
               std::abs(oa - ob));
      }
    }
  };

  if (form_rowwise(form) && row_q && row_s) {
    const int64_t C = O / B, Cp = mx::scale_cols_padded(C);
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t j = 0; j < C; ++j) {
        const int64_t off = mx::swizzle_offset(m, j, Cp);
        check_block(
            m, j, [&](int i) { return m * O + j * B + i; }, row_q, ora.row_q.data(),
            [&](int i) { return m * O + j * B + i; }, row_s[off], ora.row_s[(size_t)off]);
      }
    }
  }
  if (form_colwise(form) && col_q && col_s) {
    const int64_t C = M / B, Cp = mx::scale_cols_padded(C);
    for (int64_t o = 0; o < O; ++o) {
      for (int64_t i = 0; i < C; ++i) {
        const int64_t off = mx::swizzle_offset(o, i, Cp);
        check_block(
            o, i, [&](int e) { return (i * B + e) * O + o; }, col_q, ora.col_q.data(),
            [&](int e) { return o * M + i * B + e; }, col_s[off], ora.col_s[(size_t)off]);
      }
    }
  }
  if (bwd) {
    rep.allowed = std::max<int64_t>(8, (int64_t)(1e-5 * (double)rep.bytes));
    if (rep.differing > rep.allowed) {
      char buf[160];
      snprintf(buf, sizeof buf, "%lld differing bytes > allowed %lld\n", (long long)rep.differing,
               (long long)rep.allowed);
      rep.detail += buf;
      rep.ok = false;
    }
  }
  if (rep.violations > 0) rep.ok = false;
  return rep;
}

SigmoidTableReport check_sigmoid_table(const uint32_t *table) {
  SigmoidTableReport rep;
  int64_t shown = 0;
  auto fail = [&](const char *fmt, long long a, long long b, long long c) {
    rep.ok = false;
    ++rep.failures;
    append(&rep.detail, &shown, fmt, a, b, c, 0);
  };
  const float c = f32(kNegLog2eBits);
  // Non-NaN gates in ascending value order: -Inf .. -0 (bits 0xFF80 down to 0x8000), then
  // +0 .. +Inf (0x0000 up to 0x7F80).
  std::vector<uint16_t> order;
  for (int b = 0xFF80; b >= 0x8000; --b) order.push_back((uint16_t)b);
  for (int b = 0x0000; b <= 0x7F80; ++b) order.push_back((uint16_t)b);
  float prev = -1.0f;
  for (uint16_t gb : order) {
    const float s = f32(table[gb]);
    const float g = bf(gb);
    if (!(s >= 0.0f && s <= 1.0f)) {  // also catches NaN
      fail("gate 0x%04llx: sigmoid bits 0x%08llx outside [0, 1]\n", gb, table[gb], 0);
      continue;
    }
    if (s < prev) fail("gate 0x%04llx: not monotone (bits 0x%08llx)\n", gb, table[gb], 0);
    prev = s;
    if (isinf(g) || s < ldexpf(1.0f, -126)) continue;  // the ulp bounds are for normal results
    int e;
    const double ref = sigmoid_f64(gb);
    frexp(ref, &e);                         // ref = f * 2^e, f in [0.5, 1)
    const double err = fabs((double)s - ref) / ldexp(1.0, e - 24);  // FP32 ulps at ref
    const double t = (double)(g * c);       // the sequence's FP32 t
    const double seq = 1.0 / (1.0 + exp2(t));
    frexp(seq, &e);
    const double err_seq = fabs((double)s - seq) / ldexp(1.0, e - 24);
    rep.max_ulp = std::max(rep.max_ulp, err);
    rep.max_ulp_seq = std::max(rep.max_ulp_seq, err_seq);
    if (err_seq > kSeqUlp) {
      fail("gate 0x%04llx: %lld/100 ulp from 1/(1+2^fl(g*c)) (bits 0x%08llx)\n", gb,
           (long long)(err_seq * 100), table[gb]);
    }
    if (err > 4.0 + 1.5 * fabs((double)g)) {
      fail("gate 0x%04llx: %lld/100 ulp from the float64 sigmoid (bits 0x%08llx)\n", gb,
           (long long)(err * 100), table[gb]);
    }
    const double spec_bound = 2.0 + fabs((double)g) / 2.0;
    if (err / spec_bound > rep.spec_worst_ratio) {
      rep.spec_worst_ratio = err / spec_bound;
      rep.spec_worst_gate = gb;
    }
    if (err > spec_bound) {
      rep.spec_ok = false;
      ++rep.spec_violations;
    }
  }
  return rep;
}

}  // namespace cake_ref
