// The FP64 backward of wide groups (kernels/common/normgate_wide.cuh) run on the CPU
// (cuda_host_emulation.h), one leaf at a time as a thread computes it, on groups where one column
// dominates the sum of squares: x at BF16's largest value (or 2^100) among ordinary values,
// with dy and w large there too, so that du = rstd * (dn - n * mean) cancels far below FP64's
// precision. dx and dz against the float64 reference (which has no cancelling pair) within the
// spec's contract, for both placements, a group and the whole row; and no NaN. What the GPU
// range test checks through every program, here on any machine.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_host_emulation.h"

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

#include "cmocka_cxx.h"
#include "normgate_ref.h"
#include "normgate_variant_ref.h"
#include "normgate_wide.cuh"

CAKE_EMULATION_GLOBALS

namespace {

struct Case {
  int32_t d, group;
  int gate, placement;
  double big;  // x at the dominant column
};

std::mt19937_64 g_gen(2026);

uint16_t bf16(double v) { return cake_test::double_to_bf16(v); }
double value(uint16_t h) { return cake_test::bf16_to_double(h); }

void run_case(const Case &c) {
  const int64_t rows = 4;
  const int32_t d = c.d;
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<uint16_t> x(static_cast<size_t>(rows * d)), z(x.size()), dy(x.size());
  std::vector<uint16_t> w(static_cast<size_t>(d));
  std::vector<double> xv(x.size()), zv(x.size()), dyv(x.size()), wv(w.size());
  for (int32_t col = 0; col < d; ++col) {
    w[size_t(col)] = bf16(1.0 + 0.25 * dist(g_gen));
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t dom = int32_t(g_gen() % uint64_t(d));
    for (int32_t col = 0; col < d; ++col) {
      const size_t i = size_t(r * d + col);
      x[i] = bf16(col == dom ? (r % 2 ? -c.big : c.big) : dist(g_gen));
      z[i] = bf16(2.0 * dist(g_gen));
      dy[i] = bf16(col == dom ? 0x1p60 : dist(g_gen));
    }
    w[size_t(dom)] = bf16(0x1p40);
  }
  for (size_t i = 0; i < x.size(); ++i) {
    xv[i] = value(x[i]);
    zv[i] = value(z[i]);
    dyv[i] = value(dy[i]);
  }
  for (size_t i = 0; i < w.size(); ++i) wv[i] = value(w[i]);

  std::vector<uint16_t> dx(x.size(), 0x7fc0), dz(x.size(), 0x7fc0);  // poisoned: NaN
  cake_normgate_params p;
  std::memset(&p, 0, sizeof p);
  p.x = x.data();
  p.z = z.data();
  p.w = w.data();
  p.dy = dy.data();
  p.dx = dx.data();
  p.dz = dz.data();
  p.rows = rows;
  p.x_stride = p.z_stride = p.dy_stride = p.dx_stride = p.dz_stride = d;
  p.d = d;
  p.eps = 1e-6f;
  p.gate = c.gate;
  p.placement = c.placement;
  p.group = c.group;
  p.x_dtype = p.z_dtype = p.w_dtype = p.dw_dtype = CAKE_DTYPE_BF16;
  float t[8];
  for (int64_t r = 0; r < rows; ++r) {
    for (int32_t col = 0; col < d; col += 8) cake::ng::wide_backward_to(p, true, r, col, t);
  }

  const cake_test::VariantSpec s = {c.gate, c.placement, d, c.group, 1e-6};
  std::vector<double> rdx, rdz, rdw, rdwa;
  cake_test::variant_backward_ref(s, rows, dyv, xv, zv, wv, &rdx, &rdz, &rdw, &rdwa);
  std::string first;
  for (size_t i = 0; i < dx.size(); ++i) {
    if (std::isnan(value(dx[i])) || std::isnan(value(dz[i]))) {
      print_error("d %d G %d: NaN at %zu\n", d, c.group, i);
      fail();
    }
  }
  int64_t bad = cake_test::check_row_tensor("dx", CAKE_DTYPE_BF16, rows, d, rdx, dx.data(), d,
                                            true, false, &first);
  if (bad == 0) {
    bad = cake_test::check_row_tensor("dz", CAKE_DTYPE_BF16, rows, d, rdz, dz.data(), d, true,
                                      false, &first);
  }
  if (bad != 0) {
    print_error("d %d G %d gate %d placement %d big %g: %lld failures; first: %s\n", d, c.group,
                c.gate, c.placement, c.big, (long long)bad, first.c_str());
    fail();
  }
}

}  // namespace

static void test_dominant_column_backward(void **) {
  const int kAfter = CAKE_NORMGATE_GATE_AFTER_NORM, kBefore = CAKE_NORMGATE_GATE_BEFORE_NORM;
  const int kSilu = CAKE_NORMGATE_GATE_SILU, kSigmoid = CAKE_NORMGATE_GATE_SIGMOID;
  const Case cases[] = {
      {256, 256, kSilu, kAfter, 0x1.fep127},   {256, 256, kSilu, kAfter, 0x1p100},
      {512, 64, kSilu, kBefore, 0x1.fep127},   {512, 128, kSigmoid, kAfter, 0x1p100},
      {1000, 1000, kSilu, kAfter, 0x1.fep127}, {1024, 256, kSigmoid, kBefore, 0x1p100},
  };
  for (const Case &c : cases) run_case(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dominant_column_backward),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
