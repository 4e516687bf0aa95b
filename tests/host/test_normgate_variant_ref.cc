// The float64 reference of the normgate variants (tests/reference/normgate_variant_ref.h),
// checked on the host before the GPU tests lean on it:
//   - the F16 codec against every F16 bit pattern, and RNE at ties;
//   - the default form (SiLU after a whole-row norm) equals the reference of the tuned programs
//     (normgate_ref.h), which was written independently from the same spec;
//   - every variant's backward (dx, dz, dw as the spec writes them) equals central finite
//     differences of its forward: the spec's derivation, checked numerically.
#include <cmath>
#include <random>
#include <vector>

#include "cake.h"
#include "cmocka_cxx.h"
#include "normgate_ref.h"
#include "normgate_variant_ref.h"

using namespace cake_test;

static void test_f16_codec(void **) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const double v = f16_to_double(static_cast<uint16_t>(h));
    if (std::isnan(v)) {
      assert_true(std::isnan(f16_to_double(double_to_f16(v))));
      continue;
    }
    assert_int_equal(double_to_f16(v), h);
  }
  // Ties to even: 1 + 2^-11 is half way between 1 and 1 + 2^-10.
  assert_int_equal(double_to_f16(1.0 + std::ldexp(1.0, -11)), 0x3c00);
  assert_int_equal(double_to_f16(1.0 + 3 * std::ldexp(1.0, -11)), 0x3c02);
  assert_int_equal(double_to_f16(65504.0 + 15.9), 0x7bff);
  assert_int_equal(double_to_f16(65520.0), 0x7c00);             // the tie rounds to Inf
  assert_int_equal(double_to_f16(std::ldexp(1.0, -25)), 0x0000);  // tie to even (0)
  assert_int_equal(double_to_f16(std::ldexp(3.0, -25)), 0x0002);
  // Ordinals are adjacent across zero and the subnormal boundary.
  assert_int_equal(dtype_ordinal(CAKE_DTYPE_F16, std::ldexp(1.0, -14)) -
                       dtype_ordinal(CAKE_DTYPE_F16, std::ldexp(1023.0, -24)),
                   1);
  assert_int_equal(dtype_ordinal(CAKE_DTYPE_BF16, -0.0), dtype_ordinal(CAKE_DTYPE_BF16, 0.0));
}

namespace {

std::mt19937_64 g_gen(12345);

std::vector<double> normal(size_t n, double scale, double offset, int dtype) {
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<double> v(n);
  unsigned char tmp[4];
  for (double &e : v) {
    store_elem(dtype, tmp, 0, offset + scale * dist(g_gen));
    e = load_elem(dtype, tmp, 0);
  }
  return v;
}

}  // namespace

static void test_default_form_matches_reference(void **) {
  const int64_t rows = 7;
  for (int32_t d : {8, 64, 200}) {
    std::vector<double> x = normal(rows * d, 1.0, 0.0, CAKE_DTYPE_BF16);
    std::vector<double> z = normal(rows * d, 2.0, 0.0, CAKE_DTYPE_BF16);
    std::vector<double> w = normal(d, 0.5, 1.0, CAKE_DTYPE_BF16);
    std::vector<double> dy = normal(rows * d, 1.0, 0.0, CAKE_DTYPE_BF16);
    std::vector<uint16_t> xb(x.size()), zb(z.size()), wb(w.size()), dyb(dy.size());
    for (size_t i = 0; i < x.size(); ++i) {
      xb[i] = double_to_bf16(x[i]);
      zb[i] = double_to_bf16(z[i]);
      dyb[i] = double_to_bf16(dy[i]);
    }
    for (size_t i = 0; i < w.size(); ++i) wb[i] = double_to_bf16(w[i]);
    const VariantSpec s = {CAKE_NORMGATE_GATE_SILU, CAKE_NORMGATE_GATE_AFTER_NORM, d, d, 1e-6};
    std::vector<double> y, rstd, y0, rstd0;
    variant_forward_ref(s, rows, x, z, w, &y, &rstd);
    const NormgateShape shape = {rows, d, d, d, d, 1e-6f};
    normgate_forward_ref(shape, xb.data(), zb.data(), wb.data(), &y0, &rstd0);
    for (size_t i = 0; i < y.size(); ++i) assert_true(std::fabs(y[i] - y0[i]) <= 1e-12 * (1 + std::fabs(y0[i])));
    for (int64_t r = 0; r < rows; ++r) assert_true(std::fabs(rstd[r] - rstd0[r]) <= 1e-12 * rstd0[r]);
    std::vector<double> dx, dz, dw, dwa, dx0, dz0, dw0, dwa0;
    variant_backward_ref(s, rows, dy, x, z, w, &dx, &dz, &dw, &dwa);
    const NormgateBwdShape bs = {rows, d, d, d, d, d, d, 1e-6f};
    normgate_backward_ref(bs, dyb.data(), xb.data(), zb.data(), wb.data(), &dx0, &dz0, &dw0, &dwa0);
    for (size_t i = 0; i < dx.size(); ++i) {
      assert_true(std::fabs(dx[i] - dx0[i]) <= 1e-10 * (1 + std::fabs(dx0[i])));
      assert_true(std::fabs(dz[i] - dz0[i]) <= 1e-10 * (1 + std::fabs(dz0[i])));
    }
    for (int c = 0; c < d; ++c) {
      assert_true(std::fabs(dw[c] - dw0[c]) <= 1e-10 * (1 + std::fabs(dw0[c])));
      assert_true(std::fabs(dwa[c] - dwa0[c]) <= 1e-10 * (1 + dwa0[c]));
    }
  }
}

namespace {

// L = sum(dy * y): its gradients are what the backward gives.
double loss(const VariantSpec &s, int64_t rows, const std::vector<double> &dy,
            const std::vector<double> &x, const std::vector<double> &z,
            const std::vector<double> &w) {
  std::vector<double> y, rstd;
  variant_forward_ref(s, rows, x, z, w, &y, &rstd);
  double l = 0.0;
  for (size_t i = 0; i < y.size(); ++i) l += dy[i] * y[i];
  return l;
}

// Central difference of L along element i of v (h relative to the element).
double numeric(const VariantSpec &s, int64_t rows, const std::vector<double> &dy,
               std::vector<double> *v, size_t i, const std::vector<double> &x,
               const std::vector<double> &z, const std::vector<double> &w) {
  const double keep = (*v)[i];
  const double h = 1e-5 * (1.0 + std::fabs(keep));
  (*v)[i] = keep + h;
  const double lp = loss(s, rows, dy, v == &x ? *v : x, v == &z ? *v : z, v == &w ? *v : w);
  (*v)[i] = keep - h;
  const double lm = loss(s, rows, dy, v == &x ? *v : x, v == &z ? *v : z, v == &w ? *v : w);
  (*v)[i] = keep;
  return (lp - lm) / (2 * h);
}

}  // namespace

static void test_backward_is_the_gradient(void **) {
  const int64_t rows = 3;
  for (int gate : {CAKE_NORMGATE_GATE_SILU, CAKE_NORMGATE_GATE_SIGMOID, CAKE_NORMGATE_GATE_NONE}) {
    for (int placement : {CAKE_NORMGATE_GATE_AFTER_NORM, CAKE_NORMGATE_GATE_BEFORE_NORM}) {
      for (int32_t group : {24, 8}) {
        const int32_t d = 24;
        const VariantSpec s = {gate, placement, d, group, 1e-3};
        std::vector<double> x = normal(rows * d, 1.0, 0.0, CAKE_DTYPE_F32);
        std::vector<double> z = normal(rows * d, 1.5, 0.0, CAKE_DTYPE_F32);
        std::vector<double> w = normal(d, 0.5, 1.0, CAKE_DTYPE_F32);
        std::vector<double> dy = normal(rows * d, 1.0, 0.0, CAKE_DTYPE_F32);
        std::vector<double> dx, dz, dw, dwa;
        variant_backward_ref(s, rows, dy, x, z, w, &dx, &dz, &dw, &dwa);
        for (size_t i = 0; i < x.size(); ++i) {
          const double nx = numeric(s, rows, dy, &x, i, x, z, w);
          if (std::fabs(nx - dx[i]) > 1e-6 * (1 + std::fabs(nx))) {
            print_error("gate %d placement %d G %d: dx[%zu] %.12g, numeric %.12g\n", gate,
                        placement, group, i, dx[i], nx);
            fail();
          }
          const double nz = numeric(s, rows, dy, &z, i, x, z, w);
          if (std::fabs(nz - dz[i]) > 1e-6 * (1 + std::fabs(nz))) {
            print_error("gate %d placement %d G %d: dz[%zu] %.12g, numeric %.12g\n", gate,
                        placement, group, i, dz[i], nz);
            fail();
          }
        }
        for (int c = 0; c < d; ++c) {
          const double nw = numeric(s, rows, dy, &w, c, x, z, w);
          if (std::fabs(nw - dw[c]) > 1e-6 * (1 + std::fabs(nw))) {
            print_error("gate %d placement %d G %d: dw[%d] %.12g, numeric %.12g\n", gate,
                        placement, group, c, dw[c], nw);
            fail();
          }
        }
      }
    }
  }
}

// The contract checker fails what it should: a value 2 ulps off, a NaN where none is due.
static void test_checker_rejects(void **) {
  const int32_t d = 8;
  std::vector<double> ref(d, 1.0);
  for (int dtype : {CAKE_DTYPE_BF16, CAKE_DTYPE_F16, CAKE_DTYPE_F32}) {
    std::vector<unsigned char> got(d * 4);
    for (int c = 0; c < d; ++c) store_elem(dtype, got.data(), c, 1.0);
    std::string first;
    assert_int_equal(check_row_tensor("t", dtype, 1, d, ref, got.data(), d, true, false, &first), 0);
    // 2 ulps (BF16, F16: past the neighbour and the 2^-(p+2) slack); FP32: 2^-14, past its
    // 2^-16 slack.
    const double off = dtype == CAKE_DTYPE_F32 ? std::ldexp(1.0, -14)
                                               : 2 * std::ldexp(1.0, 1 - dtype_precision(dtype));
    store_elem(dtype, got.data(), 3, 1.0 + off);
    assert_int_equal(check_row_tensor("t", dtype, 1, d, ref, got.data(), d, true, false, &first), 1);
    store_elem(dtype, got.data(), 3, NAN);
    assert_int_equal(check_row_tensor("t", dtype, 1, d, ref, got.data(), d, true, false, &first), 1);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f16_codec),
      cmocka_unit_test(test_default_form_matches_reference),
      cmocka_unit_test(test_backward_is_the_gradient),
      cmocka_unit_test(test_checker_rejects),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
