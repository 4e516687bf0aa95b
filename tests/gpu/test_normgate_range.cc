// The norm-gate range rows on the GPU (docs/spec/normgate.md, "Range"): rows whose x, z and dy
// are each all at the dtype's largest value, all at its smallest normal, ordinary values, or
// ordinary values with one at the largest (every one of the 64 combinations), against columns
// whose w takes the same four kinds, both signs at random. For the default form (the tuned and
// general programs) and for variants (both placements, groups, sigmoid, no gate, F16 and FP32
// tensors): no NaN in any output, each y, dx and dz the float64 value rounded (or a neighbour;
// within the cancelling bound for dx and dz), an infinity exactly where that rounding
// overflows; dw free of NaN and within its contract wherever no chunk sum can leave FP32's
// range; every serving program of every table (the sm_90 cross-check images too) forced to the
// same bytes, the non-deterministic package's dx and dz those bytes too. Skips without a GPU.
#include <cfloat>

#include "normgate_variant_harness.h"

namespace {

// A value kind of the range rows: the dtype's largest finite value, its smallest normal,
// ordinary values, ordinary values with one (at a random column) at the largest.
enum Kind { kLargest = 0, kSmallestNormal = 1, kOrdinary = 2, kOneLargest = 3 };

double largest(int dtype) {
  return dtype == CAKE_DTYPE_F16 ? 65504.0 : dtype == CAKE_DTYPE_F32 ? double(FLT_MAX) : 0x1.fep127;
}

double smallest_normal(int dtype) { return dtype == CAKE_DTYPE_F16 ? 0x1p-14 : 0x1p-126; }

double signed_value(Kind k, int dtype, double ordinary) {
  const double sign = (cake_test::rng()() & 1u) ? -1.0 : 1.0;
  switch (k) {
    case kLargest: return sign * largest(dtype);
    case kSmallestNormal: return sign * smallest_normal(dtype);
    default: return ordinary;
  }
}

void set(Tensor &t, int64_t r, int64_t c, double v) {
  cake_test::store_elem(t.dtype, t.bytes.data(), size_t(r * t.stride + c), v);
  t.vals[size_t(r * t.d + c)] = cake_test::load_elem(t.dtype, t.bytes.data(), size_t(r * t.stride + c));
}

void fill_row(Tensor &t, int64_t r, Kind k) {
  const int64_t one = int64_t(cake_test::rng()() % uint64_t(t.d));
  for (int64_t c = 0; c < t.d; ++c) {
    const double ordinary = t.vals[size_t(r * t.d + c)];
    set(t, r, c, k == kOneLargest && c == one ? signed_value(kLargest, t.dtype, 0.0)
                                               : signed_value(k, t.dtype, ordinary));
  }
}

// Row r = 16 kx + 4 kz + kdy for r < 64, then ordinary rows; w's columns in four bands of kinds.
Inputs range_inputs(const Case &c) {
  Inputs in = make_inputs(c);
  for (int64_t r = 0; r < 64 && r < c.rows; ++r) {
    fill_row(in.x, r, Kind(r / 16));
    fill_row(in.z, r, Kind(r / 4 % 4));
    fill_row(in.dy, r, Kind(r % 4));
  }
  for (int64_t col = 0; col < c.d; ++col) {
    const Kind k = Kind(col * 4 / c.d);
    const double ordinary = in.w.vals[size_t(col)];
    set(in.w, 0, col, k == kOneLargest ? ordinary : signed_value(k, c.wdt, ordinary));
  }
  return in;
}

// y, dx or dz of the range rows: no NaN; where the float64 value rounded to the dtype overflows,
// that infinity (or the largest finite value of its sign, the neighbour); elsewhere a finite
// value within 1 ulp of the rounded value (FP32: within 2^-16 relative), or (cancels) within
// 2^-(p+2) (FP32: 2^-16) of the row's largest |reference|. Returns the failures; the first is described in *first.
int64_t check_range_tensor(const char *name, int dtype, int64_t rows, int32_t d,
                           const std::vector<double> &ref, const void *got, int64_t stride,
                           bool cancels, std::string *first) {
  int64_t bad = 0;
  const double bound = std::ldexp(1.0, -(cake_test::dtype_precision(dtype) + 2));
  for (int64_t r = 0; r < rows; ++r) {
    double row_max = 0.0;
    for (int32_t c = 0; c < d; ++c) row_max = std::fmax(row_max, std::fabs(ref[size_t(r * d + c)]));
    for (int32_t c = 0; c < d; ++c) {
      const double want = ref[size_t(r * d + c)];
      const double g = cake_test::load_elem(dtype, got, size_t(r * stride + c));
      unsigned char buf[8];
      cake_test::store_elem(dtype, buf, 0, want);
      const double rounded = cake_test::load_elem(dtype, buf, 0);
      bool ok;
      if (std::isnan(g)) {
        ok = false;
      } else if (std::isinf(rounded)) {
        ok = std::signbit(g) == std::signbit(rounded) && (std::isinf(g) || std::fabs(g) == largest(dtype));
      } else if (std::isinf(g)) {
        ok = std::fabs(rounded) == largest(dtype) && std::signbit(g) == std::signbit(rounded);
      } else if (dtype == CAKE_DTYPE_F32) {  // the FP32 contract: relative, or underflow
        ok = std::fabs(g - want) <= 0x1p-16 * std::fabs(want) + 0x1p-126 ||
             (cancels && std::fabs(g - want) <= 0x1p-16 * row_max);
      } else {
        ok = std::llabs(cake_test::dtype_ordinal(dtype, g) - cake_test::dtype_ordinal(dtype, rounded)) <= 1 ||
             (cancels && std::fabs(g - want) <= bound * row_max);
      }
      if (!ok && bad++ == 0) {
        char b[256];
        std::snprintf(b, sizeof b, "%s[%lld, %d] = %.9g, float64 %.9g (rounded %.9g)", name,
                      (long long)r, c, g, want, rounded);
        *first = b;
      }
    }
  }
  return bad;
}

// dw of the range rows: no NaN; within the contract (check_dw) for the columns whose sum of
// |terms| stays below FLT_MAX / 2, where no FP32 chunk sum can overflow. Returns the failures.
int64_t check_range_dw(int dtype, int32_t d, const BwdRef &ref, const std::vector<unsigned char> &got,
                       std::string *first) {
  std::vector<double> want, abs;
  std::vector<unsigned char> kept;
  const size_t es = cake_test::dtype_size(dtype);
  int64_t bad = 0;
  for (int32_t c = 0; c < d; ++c) {
    const double g = cake_test::load_elem(dtype, got.data(), size_t(c));
    if (std::isnan(g)) {
      if (bad++ == 0) *first = "dw[" + std::to_string(c) + "] is NaN";
      continue;
    }
    if (ref.dw_abs[size_t(c)] < double(FLT_MAX) / 2) {
      want.push_back(ref.dw[size_t(c)]);
      abs.push_back(ref.dw_abs[size_t(c)]);
      kept.insert(kept.end(), got.begin() + c * es, got.begin() + (c + 1) * es);
    }
  }
  if (bad == 0 && !want.empty()) {
    bad = cake_test::check_dw(dtype, int32_t(want.size()), want, abs, kept.data(), first);
  }
  return bad;
}

void check_range_forward(const Inputs &in, const FwdOut &out) {
  const Case &c = in.c;
  std::vector<double> y, rstd;
  cake_test::variant_forward_ref(spec_of(c), c.rows, in.x.vals, in.z.vals, in.w.vals, &y, &rstd);
  std::string first;
  const int64_t bad = check_range_tensor("y", c.xdt, c.rows, c.d, y, out.y.data(), in.ys, false, &first);
  if (bad != 0) {
    print_error("%s range forward (%s): %lld failures; first: %s\n", c.label().c_str(),
                out.program.c_str(), (long long)bad, first.c_str());
    fail();
  }
  for (size_t i = 0; i < rstd.size(); ++i) {
    // rstd of a row at the largest values is an FP32 subnormal: an absolute bound of its ulp.
    if (!(std::fabs(out.rstd[i] - rstd[i]) <= 1e-5 * rstd[i] + 0x1p-149)) {
      print_error("%s range forward (%s): rstd[%zu] = %.9g, float64 %.9g\n", c.label().c_str(),
                  out.program.c_str(), i, out.rstd[i], rstd[i]);
      fail();
    }
  }
}

// Returns whether the outputs pass (a failure is printed; the caller fails after every case ran,
// so that one run reports every program and case that fails).
bool check_range_backward(const Inputs &in, const BwdRef &ref, int dw_dtype, const BwdOut &out) {
  const Case &c = in.c;
  std::string first;
  int64_t bad = check_range_tensor("dx", c.xdt, c.rows, c.d, ref.dx, out.dx.data(), in.dxs, true, &first);
  if (bad == 0 && gated(c)) {
    bad = check_range_tensor("dz", c.zdt, c.rows, c.d, ref.dz, out.dz.data(), in.dzs, true, &first);
  }
  if (bad == 0) bad = check_range_dw(dw_dtype, c.d, ref, out.dw, &first);
  if (bad != 0) {
    print_error("%s range backward dw %s (%s): %lld failures; first: %s\n", c.label().c_str(),
                cake_test::dtype_name(dw_dtype), out.program.c_str(), (long long)bad, first.c_str());
  }
  return bad == 0;
}

constexpr int kBF = CAKE_DTYPE_BF16, kF16 = CAKE_DTYPE_F16, kF32 = CAKE_DTYPE_F32;
constexpr int kSilu = CAKE_NORMGATE_GATE_SILU, kSigmoid = CAKE_NORMGATE_GATE_SIGMOID,
              kNone = CAKE_NORMGATE_GATE_NONE;
constexpr int kAfter = CAKE_NORMGATE_GATE_AFTER_NORM, kBefore = CAKE_NORMGATE_GATE_BEFORE_NORM;

// The default form at the tuned widths (64, 128, 256) and the general ones (both thread counts),
// then variants: each placement, groups, sigmoid, no gate, F16 and FP32 tensors, the tile
// programs' widths.
const Case kCases[] = {
    {100, 64, 64, kSilu, kAfter, kBF, kBF, kBF, 0},
    {100, 128, 128, kSilu, kAfter, kBF, kBF, kBF, 8},
    {100, 256, 256, kSilu, kAfter, kBF, kBF, kBF, 0},
    {80, 1000, 1000, kSilu, kAfter, kBF, kBF, kBF, 0},
    {70, 5120, 5120, kSilu, kAfter, kBF, kBF, kBF, 0},
    {80, 1024, 256, kSilu, kBefore, kBF, kBF, kBF, 0},
    {70, 8192, 1024, kSilu, kBefore, kBF, kBF, kBF, 0},
    {80, 768, 768, kSigmoid, kAfter, kBF, kBF, kBF, 24},
    {80, 512, 8, kNone, kAfter, kBF, kBF, kBF, 0},
    {80, 2048, 2048, kSilu, kAfter, kF16, kF16, kF16, 0},
    {80, 320, 64, kSigmoid, kBefore, kF32, kBF, kF32, 0},
    {80, 128, 128, kSilu, kAfter, kBF, kBF, kF32, 0},
};

}  // namespace

static int setup(void **) { return cake_test::open_handles(&g_handle, &g_cross); }
static int teardown(void **) {
  cake_test::close_handles(g_handle, &g_cross);
  return 0;
}

static void test_range_forward(void **) {
  SKIP_WITHOUT_GPU();
  int forced = 0;
  for (const Case &c : kCases) {
    const Inputs in = range_inputs(c);
    const FwdOut out = run_forward(g_handle, in, nullptr);
    check_range_forward(in, out);
    forced += forward_every_program(in, out);
  }
  print_message("%zu range forward cases, %d forced program runs byte-identical\n",
                sizeof kCases / sizeof kCases[0], forced);
  assert_true(forced >= int(sizeof kCases / sizeof kCases[0]));
}

static void test_range_backward(void **) {
  SKIP_WITHOUT_GPU();
  std::vector<cake_handle_t> handles = {g_handle};
  handles.insert(handles.end(), g_cross.begin(), g_cross.end());
  int forced = 0, k = 0, failed = 0;
  for (const Case &c : kCases) {
    const Inputs in = range_inputs(c);
    const BwdRef ref = backward_ref(in);
    BwdRun run;
    run.dw_dtype = (k++ % 2) ? kF32 : kBF;
    const BwdOut det = run_backward(g_handle, in, run);
    failed += !check_range_backward(in, ref, run.dw_dtype, det);
    cake_normgate_desc desc = desc_of(in, nullptr);
    desc.dw_dtype = static_cast<cake_dtype_t>(run.dw_dtype);
    const auto det_same = [&](const std::string &name, const BwdOut &got) {
      if (!same_grads(det, got) || got.dw != det.dw) {
        print_error("%s range rows: deterministic %s differs from routed %s\n",
                    c.label().c_str(), name.c_str(), det.program.c_str());
        ++failed;
      }
    };
    forced += backward_every_program(handles, in, desc, run, det_same);
    BwdRun nd = run;
    nd.package = CAKE_NORMGATE_NONDETERMINISTIC;
    desc.package = CAKE_NORMGATE_NONDETERMINISTIC;
    const auto nd_check = [&](const std::string &name, const BwdOut &got) {
      failed += !check_range_backward(in, ref, nd.dw_dtype, got);
      if (!same_grads(det, got)) {
        print_error("%s range rows: non-deterministic %s dx/dz differ from the deterministic package\n",
                    c.label().c_str(), name.c_str());
        ++failed;
      }
    };
    forced += backward_every_program(handles, in, desc, nd, nd_check);
  }
  print_message("%zu range backward cases, %d forced program runs checked, %d failures\n",
                sizeof kCases / sizeof kCases[0], forced, failed);
  assert_int_equal(failed, 0);
  assert_true(forced >= 2 * int(sizeof kCases / sizeof kCases[0]));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_range_forward),
      cmocka_unit_test(test_range_backward),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
