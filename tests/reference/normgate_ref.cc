#include "normgate_ref.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cake_test {

float bf16_to_float(uint16_t v) {
  const uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

double bf16_to_double(uint16_t v) { return static_cast<double>(bf16_to_float(v)); }

uint16_t float_to_bf16_rne(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint32_t lsb = (bits >> 16) & 1u;
  bits += 0x7fffu + lsb;
  return static_cast<uint16_t>(bits >> 16);
}

// Round a double to BF16 with one rounding (RNE): scale to the BF16 quantum of its binade
// (powers of two: exact), round to an integer, scale back.
static uint16_t double_to_bf16_rne(double v) {
  if (std::isnan(v)) return 0x7fc0;
  if (v == 0.0) return std::signbit(v) ? 0x8000 : 0x0000;
  int e;
  std::frexp(v, &e);  // |v| = m * 2^e, m in [0.5, 1)
  const int q = (e < -125 ? -125 : e) - 8;
  const double r = std::nearbyint(std::ldexp(v, -q));
  const double back = std::ldexp(r, q);
  const float f = static_cast<float>(back);  // exact, or +-inf past the largest BF16
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint16_t>(bits >> 16);
}

uint16_t double_to_bf16(double v) { return double_to_bf16_rne(v); }

int64_t bf16_ordinal(uint16_t v) {
  return (v & 0x8000) ? -static_cast<int64_t>(v & 0x7fff) : static_cast<int64_t>(v);
}

void normgate_forward_ref(const NormgateShape &s, const uint16_t *x, const uint16_t *z,
                          const uint16_t *w, std::vector<double> *y, std::vector<double> *rstd) {
  y->assign(static_cast<size_t>(s.rows) * s.d, 0.0);
  rstd->assign(static_cast<size_t>(s.rows), 0.0);
  for (int64_t r = 0; r < s.rows; ++r) {
    const uint16_t *xr = x + r * s.x_stride;
    const uint16_t *zr = z + r * s.z_stride;
    // Double holds the square of any BF16 value, so no scaling is needed; non-finite rows
    // follow IEEE (an Inf gives rstd 0, a NaN gives NaN), as the kernels do.
    double ss = 0.0;
    for (int c = 0; c < s.d; ++c) {
      const double v = bf16_to_double(xr[c]);
      ss += v * v;
    }
    const double rs = 1.0 / std::sqrt(ss / s.d + static_cast<double>(s.eps));
    (*rstd)[r] = rs;
    for (int c = 0; c < s.d; ++c) {
      const double xv = bf16_to_double(xr[c]);
      const double zv = bf16_to_double(zr[c]);
      const double n = xv * rs;
      const double sig = 1.0 / (1.0 + std::exp(-zv));
      (*y)[static_cast<size_t>(r) * s.d + c] = n * bf16_to_double(w[c]) * (zv * sig);
    }
  }
}

int64_t check_forward_y(const NormgateShape &s, const std::vector<double> &ref, const uint16_t *y,
                        char *first, size_t first_len) {
  int64_t bad = 0;
  for (int64_t r = 0; r < s.rows; ++r) {
    for (int c = 0; c < s.d; ++c) {
      const double want = ref[static_cast<size_t>(r) * s.d + c];
      const uint16_t got = y[r * s.y_stride + c];
      bool ok;
      if (std::isnan(want)) {
        ok = std::isnan(bf16_to_float(got));
      } else {
        const uint16_t rounded = double_to_bf16_rne(want);
        const bool got_nan = std::isnan(bf16_to_float(got));
        // Neighbours by ordinal; +0 and -0 are the same ordinal.
        ok = !got_nan && std::llabs(bf16_ordinal(got) - bf16_ordinal(rounded)) <= 1;
      }
      if (!ok) {
        if (bad == 0 && first != nullptr) {
          std::snprintf(first, first_len, "row %lld col %d: got 0x%04x (%g), want %.9g (0x%04x)",
                        static_cast<long long>(r), c, got, bf16_to_double(got), want,
                        double_to_bf16_rne(want));
        }
        ++bad;
      }
    }
  }
  return bad;
}

void normgate_backward_ref(const NormgateBwdShape &s, const uint16_t *dy, const uint16_t *x,
                           const uint16_t *z, const uint16_t *w, std::vector<double> *dx,
                           std::vector<double> *dz, std::vector<double> *dw,
                           std::vector<double> *dw_abs) {
  if (dw_abs != nullptr) dw_abs->assign(static_cast<size_t>(s.d), 0.0);
  dx->assign(static_cast<size_t>(s.rows) * s.d, 0.0);
  dz->assign(static_cast<size_t>(s.rows) * s.d, 0.0);
  dw->assign(static_cast<size_t>(s.d), 0.0);
  std::vector<double> n(s.d), g(s.d), a(s.d);
  for (int64_t r = 0; r < s.rows; ++r) {
    const uint16_t *xr = x + r * s.x_stride;
    const uint16_t *zr = z + r * s.z_stride;
    const uint16_t *dyr = dy + r * s.dy_stride;
    double ss = 0.0;
    for (int c = 0; c < s.d; ++c) ss += bf16_to_double(xr[c]) * bf16_to_double(xr[c]);
    const double rstd = 1.0 / std::sqrt(ss / s.d + static_cast<double>(s.eps));
    double gn = 0.0;
    for (int c = 0; c < s.d; ++c) {
      const double zv = bf16_to_double(zr[c]);
      const double sg = 1.0 / (1.0 + std::exp(-zv));
      n[c] = bf16_to_double(xr[c]) * rstd;
      a[c] = bf16_to_double(dyr[c]) * zv * sg;
      g[c] = a[c] * bf16_to_double(w[c]);
      gn += g[c] * n[c];
      const double h = n[c] * bf16_to_double(w[c]);
      (*dz)[static_cast<size_t>(r) * s.d + c] =
          bf16_to_double(dyr[c]) * h * sg * (1.0 + zv * (1.0 - sg));
      (*dw)[c] += a[c] * n[c];
      if (dw_abs != nullptr) (*dw_abs)[c] += std::fabs(a[c] * n[c]);
    }
    const double mean = gn / s.d;
    for (int c = 0; c < s.d; ++c) {
      (*dx)[static_cast<size_t>(r) * s.d + c] = rstd * (g[c] - n[c] * mean);
    }
  }
}

int64_t check_grad(const char *name, int64_t rows, int32_t d, const std::vector<double> &ref,
                   const uint16_t *got, int64_t stride, double *rel_l2, char *first,
                   size_t first_len, bool check_l2) {
  int64_t bad = 0, counted = 0;
  double err2 = 0.0, ref2 = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    double row_max = 0.0;
    for (int c = 0; c < d; ++c) {
      const double v = ref[static_cast<size_t>(r) * d + c];
      if (std::isfinite(v)) row_max = std::fmax(row_max, std::fabs(v));
    }
    for (int c = 0; c < d; ++c) {
      const double want = ref[static_cast<size_t>(r) * d + c];
      const uint16_t gbits = got[r * stride + c];
      const double gv = bf16_to_double(gbits);
      bool ok;
      if (std::isnan(want)) {
        ok = std::isnan(gv);
      } else if (std::isnan(gv)) {
        ok = false;
      } else {
        const uint16_t rounded = double_to_bf16_rne(want);
        ok = std::llabs(bf16_ordinal(gbits) - bf16_ordinal(rounded)) <= 1 ||
             std::fabs(gv - want) <= std::ldexp(row_max, -10);
      }
      if (std::isfinite(want) && std::isfinite(gv)) {
        err2 += (gv - want) * (gv - want);
        ref2 += want * want;
        ++counted;
      }
      if (!ok) {
        if (bad == 0 && first != nullptr) {
          std::snprintf(first, first_len, "%s row %lld col %d: got 0x%04x (%.9g), want %.9g (row max %.3g)",
                        name, static_cast<long long>(r), c, gbits, gv, want, row_max);
        }
        ++bad;
      }
    }
  }
  *rel_l2 = ref2 > 0 ? std::sqrt(err2 / ref2) : 0.0;
  if (check_l2 && counted >= 4096 && *rel_l2 > 2e-3) {
    if (bad == 0 && first != nullptr) {
      std::snprintf(first, first_len, "%s: relative L2 error %.3g > 2e-3", name, *rel_l2);
    }
    ++bad;
  }
  return bad;
}

}  // namespace cake_test
