#include "normgate_variant_ref.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cake.h"
#include "normgate_ref.h"

namespace cake_test {

size_t dtype_size(int dtype) { return dtype == CAKE_DTYPE_F32 ? 4 : 2; }

const char *dtype_name(int dtype) {
  switch (dtype) {
    case CAKE_DTYPE_BF16: return "bf16";
    case CAKE_DTYPE_F32: return "f32";
    case CAKE_DTYPE_F16: return "f16";
    default: return "?";
  }
}

int dtype_precision(int dtype) {
  return dtype == CAKE_DTYPE_F32 ? 24 : dtype == CAKE_DTYPE_F16 ? 11 : 8;
}

double f16_to_double(uint16_t h) {
  const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0x1f) {
    v = mant ? NAN : INFINITY;
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -24);
  } else {
    v = std::ldexp(1024.0 + mant, exp - 25);
  }
  return sign ? -v : v;
}

// Double to F16 with one rounding (RNE), subnormals and overflow to Inf included.
uint16_t double_to_f16(double v) {
  if (std::isnan(v)) return 0x7e00;
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (a == 0.0) return sign;
  int e;
  std::frexp(a, &e);                    // a = m 2^e, m in [0.5, 1): 11 significand bits -> 2^(e-11)
  const int q = (e < -13 ? -13 : e) - 11;  // subnormal quantum 2^-24
  const double r = std::nearbyint(std::ldexp(a, -q)) * std::ldexp(1.0, q);
  if (r > 65504.0) return sign | 0x7c00;  // rounded past the largest finite F16
  if (r < std::ldexp(1.0, -14)) return sign | static_cast<uint16_t>(std::ldexp(r, 24));
  int er;
  const double m = std::frexp(r, &er);  // r = m 2^er, m in [0.5, 1)
  const int biased = er - 1 + 15;
  const uint16_t mant = static_cast<uint16_t>(std::ldexp(m, 11) - 1024.0);
  return sign | static_cast<uint16_t>(biased << 10) | mant;
}

double load_elem(int dtype, const void *base, size_t i) {
  if (dtype == CAKE_DTYPE_F32) return static_cast<double>(static_cast<const float *>(base)[i]);
  const uint16_t h = static_cast<const uint16_t *>(base)[i];
  return dtype == CAKE_DTYPE_F16 ? f16_to_double(h) : bf16_to_double(h);
}

void store_elem(int dtype, void *base, size_t i, double v) {
  if (dtype == CAKE_DTYPE_F32) {
    static_cast<float *>(base)[i] = static_cast<float>(v);  // RNE
  } else if (dtype == CAKE_DTYPE_F16) {
    static_cast<uint16_t *>(base)[i] = double_to_f16(v);
  } else {
    static_cast<uint16_t *>(base)[i] = double_to_bf16(v);
  }
}

static double round_to(int dtype, double v) {
  unsigned char tmp[4];
  store_elem(dtype, tmp, 0, v);
  return load_elem(dtype, tmp, 0);
}

int64_t dtype_ordinal(int dtype, double v) {
  int64_t mag;
  if (dtype == CAKE_DTYPE_F32) {
    const float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    mag = bits & 0x7fffffffu;
    return (bits >> 31) ? -mag : mag;
  }
  const uint16_t h = dtype == CAKE_DTYPE_F16 ? double_to_f16(v) : double_to_bf16(v);
  mag = h & 0x7fff;
  return (h & 0x8000) ? -mag : mag;
}

namespace {

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

double gate_of(int gate, double z) {
  if (gate == CAKE_NORMGATE_GATE_NONE) return 1.0;
  return gate == CAKE_NORMGATE_GATE_SILU ? z * sigmoid(z) : sigmoid(z);
}

double gate_slope(int gate, double z) {
  const double s = sigmoid(z);
  return gate == CAKE_NORMGATE_GATE_SILU ? s * (1.0 + z * (1.0 - s)) : s * (1.0 - s);
}

}  // namespace

void variant_forward_ref(const VariantSpec &s, int64_t rows, const std::vector<double> &x,
                         const std::vector<double> &z, const std::vector<double> &w,
                         std::vector<double> *y, std::vector<double> *rstd) {
  const bool gated = s.gate != CAKE_NORMGATE_GATE_NONE;
  const bool before = s.placement == CAKE_NORMGATE_GATE_BEFORE_NORM && gated;
  const int32_t groups = s.d / s.group;
  y->assign(static_cast<size_t>(rows) * s.d, 0.0);
  rstd->assign(static_cast<size_t>(rows) * groups, 0.0);
  std::vector<double> a(s.d), u(s.d);
  for (int64_t r = 0; r < rows; ++r) {
    const size_t o = static_cast<size_t>(r) * s.d;
    for (int c = 0; c < s.d; ++c) {
      a[c] = gated ? gate_of(s.gate, z[o + c]) : 1.0;
      u[c] = before ? x[o + c] * a[c] : x[o + c];
    }
    for (int k = 0; k < groups; ++k) {
      double ss = 0.0;
      for (int c = k * s.group; c < (k + 1) * s.group; ++c) ss += u[c] * u[c];
      const double rs = 1.0 / std::sqrt(ss / s.group + s.eps);
      (*rstd)[static_cast<size_t>(r) * groups + k] = rs;
      for (int c = k * s.group; c < (k + 1) * s.group; ++c) {
        const double nw = u[c] * rs * w[c];
        (*y)[o + c] = (gated && !before) ? nw * a[c] : nw;
      }
    }
  }
}

void variant_backward_ref(const VariantSpec &s, int64_t rows, const std::vector<double> &dy,
                          const std::vector<double> &x, const std::vector<double> &z,
                          const std::vector<double> &w, std::vector<double> *dx,
                          std::vector<double> *dz, std::vector<double> *dw,
                          std::vector<double> *dw_abs) {
  const bool gated = s.gate != CAKE_NORMGATE_GATE_NONE;
  const bool before = s.placement == CAKE_NORMGATE_GATE_BEFORE_NORM && gated;
  const int32_t groups = s.d / s.group;
  dx->assign(static_cast<size_t>(rows) * s.d, 0.0);
  dz->assign(static_cast<size_t>(rows) * s.d, 0.0);
  dw->assign(static_cast<size_t>(s.d), 0.0);
  dw_abs->assign(static_cast<size_t>(s.d), 0.0);
  std::vector<double> a(s.d), u(s.d), n(s.d), pdy(s.d), dn(s.d), suffix_ss, suffix_t;
  for (int64_t r = 0; r < rows; ++r) {
    const size_t o = static_cast<size_t>(r) * s.d;
    for (int c = 0; c < s.d; ++c) {
      a[c] = gated ? gate_of(s.gate, z[o + c]) : 1.0;
      u[c] = before ? x[o + c] * a[c] : x[o + c];
    }
    for (int k = 0; k < groups; ++k) {
      const int c0 = k * s.group, c1 = (k + 1) * s.group;
      double ss = 0.0;
      for (int c = c0; c < c1; ++c) ss += u[c] * u[c];
      const double rs = 1.0 / std::sqrt(ss / s.group + s.eps);
      for (int c = c0; c < c1; ++c) {
        n[c] = u[c] * rs;
        pdy[c] = (gated && !before) ? dy[o + c] * a[c] : dy[o + c];  // the gradient at n * w
        dn[c] = pdy[c] * w[c];
      }
      // du = rs * (dn - n * mean(dn * n)) cancels as far as column c dominates the group (at
      // BF16's largest u_c beside ordinary values, 2^-250 of dn): written with the sums over
      // the group's other columns, ss' and t', which no large term enters, it is
      //   du = rs^3 / G * (dn_c * (ss' + G * eps) - u_c * t'),
      // ss' and t' each a prefix sum plus a suffix sum.
      suffix_ss.assign(size_t(s.group) + 1, 0.0);
      suffix_t.assign(size_t(s.group) + 1, 0.0);
      for (int c = c1 - 1; c >= c0; --c) {
        suffix_ss[size_t(c - c0)] = suffix_ss[size_t(c - c0) + 1] + u[c] * u[c];
        suffix_t[size_t(c - c0)] = suffix_t[size_t(c - c0) + 1] + dn[c] * u[c];
      }
      double prefix_ss = 0.0, prefix_t = 0.0;
      for (int c = c0; c < c1; ++c) {
        const double ss_other = prefix_ss + suffix_ss[size_t(c - c0) + 1];
        const double t_other = prefix_t + suffix_t[size_t(c - c0) + 1];
        prefix_ss += u[c] * u[c];
        prefix_t += dn[c] * u[c];
        const double du =
            rs * (rs * rs / s.group) * (dn[c] * (ss_other + s.group * s.eps) - u[c] * t_other);
        (*dx)[o + c] = before ? du * a[c] : du;
        if (gated) {
          const double da = before ? du * x[o + c] : dy[o + c] * n[c] * w[c];
          (*dz)[o + c] = da * gate_slope(s.gate, z[o + c]);
        }
        const double t = pdy[c] * n[c];
        (*dw)[c] += t;
        (*dw_abs)[c] += std::fabs(t);
      }
    }
  }
}

int64_t check_row_tensor(const char *name, int dtype, int64_t rows, int32_t d,
                         const std::vector<double> &ref, const void *got, int64_t stride,
                         bool cancels, bool check_l2, std::string *first, double *rel_l2) {
  const int p = dtype_precision(dtype);
  const double slack = dtype == CAKE_DTYPE_F32 ? std::ldexp(1.0, -16) : std::ldexp(1.0, -(p + 2));
  int64_t bad = 0, finite = 0;
  double err2 = 0.0, ref2 = 0.0;
  char buf[256];
  for (int64_t r = 0; r < rows; ++r) {
    double row_max = 0.0;
    for (int c = 0; c < d; ++c) {
      const double v = ref[static_cast<size_t>(r) * d + c];
      if (std::isfinite(v)) row_max = std::fmax(row_max, std::fabs(v));
    }
    for (int c = 0; c < d; ++c) {
      const double want = ref[static_cast<size_t>(r) * d + c];
      const double g = load_elem(dtype, got, static_cast<size_t>(r * stride + c));
      bool ok;
      if (std::isnan(want)) {
        ok = std::isnan(g);
      } else if (!std::isfinite(g)) {
        ok = !std::isnan(g) && round_to(dtype, want) == g;  // an Inf the rounding gives
      } else {
        const double rounded = round_to(dtype, want);
        const bool near = std::isfinite(rounded) &&
                          std::llabs(dtype_ordinal(dtype, g) - dtype_ordinal(dtype, rounded)) <= 1;
        const double diff = std::fabs(g - want);
        ok = near || (cancels && diff <= slack * row_max) ||
             (dtype == CAKE_DTYPE_F32 &&
              (diff <= slack * std::fabs(want) || diff <= std::ldexp(1.0, -126)));
        if (std::isfinite(want)) {
          ++finite;
          err2 += (g - want) * (g - want);
          ref2 += want * want;
        }
      }
      if (!ok) {
        if (bad == 0 && first != nullptr) {
          std::snprintf(buf, sizeof buf, "%s (%s) row %lld col %d: got %.9g, want %.9g (row max %.3g)",
                        name, dtype_name(dtype), static_cast<long long>(r), c, g, want, row_max);
          *first = buf;
        }
        ++bad;
      }
    }
  }
  const double l2 = ref2 > 0.0 ? std::sqrt(err2 / ref2) : 0.0;
  if (rel_l2 != nullptr) *rel_l2 = l2;
  const double l2_max = dtype == CAKE_DTYPE_F32 ? 1e-5 : dtype == CAKE_DTYPE_F16 ? 1e-3 : 2e-3;
  if (check_l2 && finite >= 4096 && l2 > l2_max) {
    if (bad == 0 && first != nullptr) {
      std::snprintf(buf, sizeof buf, "%s (%s): relative L2 error %.3g > %.3g", name,
                    dtype_name(dtype), l2, l2_max);
      *first = buf;
    }
    ++bad;
  }
  return bad;
}

int64_t check_dw(int dtype, int32_t d, const std::vector<double> &ref,
                 const std::vector<double> &dw_abs, const void *got, std::string *first) {
  int64_t bad = 0;
  double err2 = 0.0, ref2 = 0.0;
  char buf[256];
  for (int c = 0; c < d; ++c) {
    const double want = ref[c], g = load_elem(dtype, got, static_cast<size_t>(c));
    bool ok;
    if (std::isnan(want)) {
      ok = std::isnan(g);
    } else if (dtype == CAKE_DTYPE_F32) {
      ok = std::fabs(g - want) <= 1e-5 * (std::fabs(want) + dw_abs[c]);
      err2 += (g - want) * (g - want);
      ref2 += want * want;
    } else {
      const double rounded = round_to(dtype, want);
      ok = std::isfinite(g) &&
           (std::llabs(dtype_ordinal(dtype, g) - dtype_ordinal(dtype, rounded)) <= 1 ||
            std::fabs(g - want) <= 20.0 * std::ldexp(1.0, -24) * dw_abs[c] +
                                       std::fabs(rounded - want));
    }
    if (!ok) {
      if (bad == 0 && first != nullptr) {
        std::snprintf(buf, sizeof buf, "dw (%s) col %d: got %.9g, want %.9g (sum |terms| %.3g)",
                      dtype_name(dtype), c, g, want, dw_abs[c]);
        *first = buf;
      }
      ++bad;
    }
  }
  if (dtype == CAKE_DTYPE_F32 && ref2 > 0.0 && std::sqrt(err2 / ref2) > 1e-5) {
    if (bad == 0 && first != nullptr) {
      std::snprintf(buf, sizeof buf, "dw (f32): relative L2 error %.3g > 1e-5", std::sqrt(err2 / ref2));
      *first = buf;
    }
    ++bad;
  }
  return bad;
}

}  // namespace cake_test
