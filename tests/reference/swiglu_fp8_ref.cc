#include "swiglu_fp8_ref.h"

#include <math.h>
#include <string.h>

#include <algorithm>
#include <cstdio>

#include "mxfp8_encode.h"
#include "swiglu_mxfp8_ref.h"

namespace cake_ref {

namespace {

float f32(uint32_t b) {
  float f;
  memcpy(&f, &b, 4);
  return f;
}
uint32_t bits(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}
float bf(uint16_t h) { return f32((uint32_t)h << 16); }

}  // namespace

void fp8_block_scale_model(uint32_t amax_bits, int rule, float *s, float *r) {
  const float amax = bf((uint16_t)amax_bits);
  if (!isfinite(amax)) {
    *s = *r = f32(0x7FC00000u);
    return;
  }
  const float floor_ = 448.0f * ldexpf(1.0f, -126);  // exact: 1.75 * 2^-118
  const float a = amax > floor_ ? amax : floor_;
  if (rule == 1) {
    // a / 448 is exact in float64 whenever it is a power of two, so ceil(log2) is exact there.
    const int e = (int)ceil(log2((double)a / 448.0));
    *s = ldexpf(1.0f, e);
    *r = ldexpf(1.0f, -e);
  } else {
    volatile float num = 448.0f;  // keep the two IEEE divisions as written
    *s = a / num;
    *r = num / a;
  }
}

void fp8_blockwise_quantize(const uint16_t *y, int64_t M, int64_t O, bool rowwise, bool colwise,
                            int rule, Fp8Out *out) {
  const int64_t B = 128;
  // A block of n <= 128 values (n < 128: the last colwise block of a column when M is not a
  // multiple of 128; its amax is that of its own rows).
  auto encode = [&](const uint16_t *v, int64_t n, int64_t stride, uint8_t *q, uint32_t *s) {
    uint32_t amax = 0;
    for (int64_t i = 0; i < n; ++i) amax = std::max<uint32_t>(amax, v[i * stride] & 0x7FFFu);
    float sc, r;
    fp8_block_scale_model(amax, rule, &sc, &r);
    *s = bits(sc);
    for (int64_t i = 0; i < n; ++i) {
      volatile float p = bf(v[i * stride]) * r;  // one FP32 product, rounded
      q[i] = cake::mx::e4m3_rn_satfinite(p);
    }
  };
  out->row_q.clear();
  out->row_s.clear();
  out->col_q.clear();
  out->col_s.clear();
  if (rowwise) {
    out->row_q.assign((size_t)(M * O), 0);
    out->row_s.assign((size_t)(M * (O / B)), 0);
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t j = 0; j < O / B; ++j) {
        encode(y + m * O + j * B, B, 1, out->row_q.data() + m * O + j * B,
               out->row_s.data() + j * M + m);
      }
    }
  }
  if (colwise) {
    out->col_q.assign((size_t)(M * O), 0);
    const int64_t blocks = (M + B - 1) / B;
    out->col_s.assign((size_t)(O * blocks), 0);
    for (int64_t o = 0; o < O; ++o) {
      for (int64_t i = 0; i < blocks; ++i) {
        encode(y + i * B * O + o, std::min(B, M - i * B), O, out->col_q.data() + o * M + i * B,
               out->col_s.data() + i * O + o);
      }
    }
  }
}

void swiglu_fp8_model(int form, const uint16_t *in, const uint16_t *grad, int64_t M, int64_t K,
                      const uint32_t *sigmoid_table, int rule, Fp8Out *out,
                      const SwigluVariant *v, float *dp) {
  std::vector<uint16_t> y;
  swiglu_y(form_backward(form), in, grad, M, K, sigmoid_table, &y, v, dp);
  const int64_t O = form_backward(form) ? 2 * K : K;
  fp8_blockwise_quantize(y.data(), M, O, form_rowwise(form), form_colwise(form), rule, out);
}

Fp8Compare fp8_compare(int form, int64_t M, int64_t K, const Fp8Out &want, const uint8_t *row_q,
                       const uint32_t *row_s, const uint8_t *col_q, const uint32_t *col_s) {
  Fp8Compare c;
  const int64_t O = form_backward(form) ? 2 * K : K;
  int shown = 0;
  auto note = [&](const char *what, int64_t i, uint32_t w, uint32_t g) {
    ++c.differing;
    c.ok = false;
    if (shown++ < 8) {
      char buf[160];
      snprintf(buf, sizeof buf, "%s[%lld]: want 0x%x got 0x%x\n", what, (long long)i, w, g);
      c.detail += buf;
    }
  };
  if (form_rowwise(form)) {
    for (int64_t i = 0; i < M * O; ++i) {
      if (want.row_q[i] != row_q[i]) note("row_q", i, want.row_q[i], row_q[i]);
    }
    for (int64_t i = 0; i < M * (O / 128); ++i) {
      if (want.row_s[i] != row_s[i]) note("row_s", i, want.row_s[i], row_s[i]);
    }
    c.bytes += M * O + 4 * M * (O / 128);
  }
  if (form_colwise(form)) {
    for (int64_t i = 0; i < M * O; ++i) {
      if (want.col_q[i] != col_q[i]) note("col_q", i, want.col_q[i], col_q[i]);
    }
    const int64_t n_s = O * ((M + 127) / 128);
    for (int64_t i = 0; i < n_s; ++i) {
      if (want.col_s[i] != col_s[i]) note("col_s", i, want.col_s[i], col_s[i]);
    }
    c.bytes += M * O + 4 * n_s;
  }
  return c;
}

std::string fp8_block_semantics(const uint16_t *v, int64_t n, int64_t stride, const uint8_t *q,
                                int64_t qstride, uint32_t s_bits, int rule) {
  char buf[256];
  double amax = 0;
  bool special = false;
  for (int64_t i = 0; i < n; ++i) {
    const float x = bf(v[i * stride]);
    if (!isfinite(x)) special = true;
    amax = std::max(amax, fabs((double)x));
  }
  const float s = f32(s_bits);
  if (special) {
    if (!isnan(s)) return "NaN/Inf block without a NaN scale";
    for (int64_t i = 0; i < n; ++i) {
      if (q[i * qstride] != 0x7F) return "NaN/Inf block with a byte other than 0x7F";
    }
    return "";
  }
  if (!(s >= ldexpf(1.0f, -126)) || !isfinite(s)) {
    snprintf(buf, sizeof buf, "scale 0x%08x not a finite normal >= 2^-126", s_bits);
    return buf;
  }
  if (rule == 1 && (s_bits & 0x7FFFFFu) != 0) return "pow2 rule with a scale not a power of two";
  int qmax = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t b = q[i * qstride];
    if ((b & 0x7F) == 0x7F) return "NaN byte in a finite block";
    qmax = std::max(qmax, (int)(b & 0x7F));
    const double x = bf(v[i * stride]);
    const double d = (double)cake::mx::e4m3_to_float(b) * s;
    const double mag = fabs(x) / s;  // the scaled value
    // Half a step of E4M3 at mag (2^-10 below 2^-6), plus slack for the FP32 product's rounding
    // and the rounding of s and r (a few FP32 ulps of mag).
    const double step = mag < ldexp(1.0, -6) ? ldexp(1.0, -9) : ldexp(1.0, (int)floor(log2(mag)) - 3);
    const double tol = (0.5 * step + mag * 1e-6) * s;
    if (mag > 448.0 * (1 + 1e-6) || fabs(d - x) > tol) {
      snprintf(buf, sizeof buf, "element %lld: v %.9g decodes to %.9g (tol %.3g)", (long long)i, x,
               d, tol);
      return buf;
    }
  }
  if (amax > 448.0 * ldexp(1.0, -126)) {
    const double top = cake::mx::e4m3_to_float((uint8_t)qmax) * (double)s;
    if (!(top <= amax * 1.0625 && top >= amax * (rule == 1 ? 0.5 : 1.0) / 1.0625)) {
      snprintf(buf, sizeof buf, "largest code decodes to %.9g for amax %.9g", top, amax);
      return buf;
    }
  }
  return "";
}

}  // namespace cake_ref
