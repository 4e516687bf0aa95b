// Host model of the SwiGLU variants (docs/spec/swiglu-mxfp8.md, "Variants"): the spec's FP32
// sequences of the weighted and the clamped SwiGLU written as the spec states them, and dp's
// summation order. C++17, no CUDA. Build with -ffp-contract=off.
#include <math.h>

#include <cmath>
#include <vector>

#include "mxfp8_encode.h"
#include "swiglu_mxfp8_ref.h"

namespace cake_ref {

namespace mx = cake::mx;

namespace {

constexpr uint32_t kNegLog2eBits = 0xBFB8AA3Bu;

float bf(uint16_t h) { return mx::bf16_to_float(h); }

float gmin(const SwigluVariant &v, float g) { return g > v.limit ? v.limit : g; }
float uclamp(const SwigluVariant &v, float u) {
  return u > v.limit ? v.limit : (u < -v.limit ? -v.limit : u);
}

// The tree of n (a power of two) consecutive terms: the two halves' trees, left plus right.
float tree(const float *t, int n) {
  if (n == 1) return t[0];
  return tree(t, n / 2) + tree(t + n / 2, n / 2);
}

}  // namespace

float variant_z(const SwigluVariant &v, float g) { return v.clamped ? v.alpha * gmin(v, g) : g; }

void variant_sigmoid_table(const SwigluVariant &v, std::vector<uint32_t> *table) {
  table->assign(kTableSize, 0);
  const float c = mx::bits_to_float(kNegLog2eBits);
  for (int b = 0; b < kTableSize; ++b) {
    const float t = variant_z(v, bf((uint16_t)b)) * c;
    const float e = (float)exp2((double)t);
    (*table)[b] = mx::float_to_bits(1.0f / (1.0f + e));
  }
}

float variant_dp_sum(const float *terms, int64_t K) {
  float acc = 0.0f;
  for (int64_t j = 0; j < K / 32; ++j) acc = acc + tree(terms + 32 * j, 32);
  return acc;
}

void swiglu_variant_y(bool backward, const uint16_t *in, const uint16_t *grad, int64_t M,
                      int64_t K, const uint32_t *sigmoid_table, const SwigluVariant &v,
                      std::vector<uint16_t> *y, float *dp) {
  const int64_t O = backward ? 2 * K : K;
  const bool weighted = v.p != nullptr;
  y->assign((size_t)(M * O), 0);
  std::vector<float> terms((size_t)K);
  for (int64_t m = 0; m < M; ++m) {
    const float w = weighted ? v.p[m] : 0.0f;
    for (int64_t k = 0; k < K; ++k) {
      const uint16_t gb = in[m * 2 * K + k];
      const float g = bf(gb), u = bf(in[m * 2 * K + K + k]);
      const float s = mx::bits_to_float(sigmoid_table[gb]);  // sigmoid(z(g))
      const float g1 = v.clamped ? gmin(v, g) : g;
      const float b = v.clamped ? uclamp(v, u) + 1.0f : u;
      const float a = g1 * s;
      if (!backward) {
        (*y)[m * O + k] = mx::bf16_rn(weighted ? a * (b * w) : a * b);
        continue;
      }
      const float d = bf(grad[m * K + k]);
      const float za = variant_z(v, g) * s;
      const float q = weighted ? d * w : d;
      const float dact = fmaf(za, 1.0f - s, s);
      const float dd = dact * q;
      // dact * q past FP32's range: its exponent unbounded, as the plain SwiGLU's dgate.
      float dg = std::isinf(dd) ? (((dact * 0.5f) * q) * b) * 2.0f : dd * b;
      float du = a * q;
      if (v.clamped) {
        // The clamps' gradient (PyTorch's clamp): 1 inside and at the bounds, 0 outside or NaN.
        if (!(g <= v.limit)) dg = 0.0f;
        if (!(u >= -v.limit && u <= v.limit)) du = 0.0f;
      }
      (*y)[m * O + k] = mx::bf16_rn(dg);
      (*y)[m * O + K + k] = mx::bf16_rn(du);
      terms[(size_t)k] = weighted ? (a * d) * b : 0.0f;
    }
    if (backward && weighted && dp != nullptr) dp[m] = variant_dp_sum(terms.data(), K);
  }
}

}  // namespace cake_ref
