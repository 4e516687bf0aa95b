// The normgate variant forward (kernels/common/normgate_variant_fwd.cuh) run on the CPU, one OS
// thread per CUDA thread (cuda_host_emulation.h; the SFU's rsqrt, exp2 and reciprocal replaced
// by the host's, the F16 conversions by host code), in both programs' layouts (256 threads, two
// rows a group; 1024 threads, two rows a group): every gate x placement, group sizes inside a
// warp, across warps and crossing 32-leaf runs, BF16 / F16 / FP32 tensors that differ, strided
// rows; y within the spec's contract against the float64 reference, rstd per group, and the
// same bytes from both layouts and from the tile programs (normgate_variant_tile.cuh: 512
// threads with a load ring, 320 threads whose rows take every warp, 128 threads with none).
// What the GPU test checks on the device, here on any machine.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_host_emulation.h"

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

#include "cmocka_cxx.h"
#include "normgate_variant_fwd.cuh"
#include "normgate_variant_ref.h"
#include "normgate_variant_tile.cuh"

CAKE_EMULATION_GLOBALS

namespace {

template <int kThreads_>
struct Cfg {
  static constexpr int kThreads = kThreads_;
  static constexpr int kRowsPerGroup = 2;
};

template <int kThreads_, int kSlots_, int kPrefetch_>
struct TileCfg {
  static constexpr int kThreads = kThreads_;
  static constexpr int kSlots = kSlots_;
  static constexpr int kPrefetch = kPrefetch_;  // the load ring's trips (0: none)
};

struct Case {
  int64_t rows;
  int32_t d, group;
  int gate, placement, xdt, zdt, wdt;
  int64_t pad;
};

struct Out {
  std::vector<unsigned char> y;
  std::vector<float> rstd;
};

std::mt19937_64 g_gen(99);

std::vector<unsigned char> random_bytes(int dtype, int64_t rows, int64_t d, int64_t stride,
                                        double scale, double offset, std::vector<double> *vals) {
  std::vector<unsigned char> b(size_t(rows * stride) * cake_test::dtype_size(dtype), 0xff);
  vals->assign(size_t(rows * d), 0.0);
  std::normal_distribution<double> dist(0.0, 1.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < d; ++c) {
      cake_test::store_elem(dtype, b.data(), size_t(r * stride + c), offset + scale * dist(g_gen));
      (*vals)[size_t(r * d + c)] = cake_test::load_elem(dtype, b.data(), size_t(r * stride + c));
    }
  }
  return b;
}

// kSlots 0: the one-leaf variant program of kThreads threads; else the tile program (with a
// load ring of kDepth trips).
template <int kThreads, int kSlots = 0, int kDepth = 0>
Out run(const Case &c, const std::vector<unsigned char> &x, const std::vector<unsigned char> &z,
        const std::vector<unsigned char> &w) {
  const int64_t stride = c.d + c.pad;
  Out o;
  o.y.assign(size_t(c.rows * stride) * cake_test::dtype_size(c.xdt), 0xff);  // poisoned
  o.rstd.assign(size_t(c.rows) * (c.d / c.group), NAN);
  cake_normgate_params p;
  std::memset(&p, 0, sizeof p);
  p.x = reinterpret_cast<const uint16_t *>(x.data());
  p.z = c.gate == CAKE_NORMGATE_GATE_NONE ? nullptr : reinterpret_cast<const uint16_t *>(z.data());
  p.w = reinterpret_cast<const uint16_t *>(w.data());
  p.y = reinterpret_cast<uint16_t *>(o.y.data());
  p.rstd = o.rstd.data();
  p.rows = c.rows;
  p.x_stride = p.z_stride = p.y_stride = stride;
  p.d = c.d;
  p.eps = 1e-6f;
  p.gate = c.gate;
  p.placement = c.placement;
  p.group = c.group;
  p.x_dtype = c.xdt;
  p.z_dtype = c.zdt;
  p.w_dtype = c.wdt;
  cake_ng_tile t = {0, 0, 0, 0};
  if (kSlots != 0 && !cake_ng_tile_of(c.d, kThreads, kSlots, &t)) fail();
  p.rows_per_block = kSlots != 0
                         ? int64_t(t.row_groups) * t.rows_per_thread
                         : int64_t(cake_ng_general_groups(c.d, kThreads)) * Cfg<kThreads>::kRowsPerGroup;
  p.num_blocks = (c.rows + p.rows_per_block - 1) / p.rows_per_block;
  // A grid of half the blocks (at least one): CTAs stride over blocks, as a persistent launch.
  const unsigned grid = static_cast<unsigned>(std::max<int64_t>(1, (p.num_blocks + 1) / 2));
  if constexpr (kSlots != 0) {
    cake_emu::launch([&] { cake::ng::fwd_variant_tile<TileCfg<kThreads, kSlots, kDepth>>(p); }, grid,
                     kThreads);
  } else {
    cake_emu::launch([&] { cake::ng::fwd_variant<Cfg<kThreads>>(p); }, grid, kThreads);
  }
  return o;
}

void check(const Case &c, const Out &o, const std::vector<double> &xv,
           const std::vector<double> &zv, const std::vector<double> &wv, const char *label) {
  std::vector<double> y, rstd;
  const cake_test::VariantSpec s = {c.gate, c.placement, c.d, c.group, 1e-6};
  cake_test::variant_forward_ref(s, c.rows, xv, zv, wv, &y, &rstd);
  std::string first;
  const int64_t bad = cake_test::check_row_tensor("y", c.xdt, c.rows, c.d, y, o.y.data(),
                                                  c.d + c.pad, false, false, &first);
  if (bad != 0) {
    print_error("%s d %d G %d gate %d placement %d x/z/w %d/%d/%d: %lld bad, first %s\n", label,
                c.d, c.group, c.gate, c.placement, c.xdt, c.zdt, c.wdt, (long long)bad,
                first.c_str());
    fail();
  }
  for (size_t i = 0; i < rstd.size(); ++i) {
    if (!(std::fabs(o.rstd[i] - rstd[i]) <= 1e-5 * rstd[i])) {
      print_error("%s d %d G %d: rstd[%zu] %.9g, want %.9g\n", label, c.d, c.group, i, o.rstd[i],
                  rstd[i]);
      fail();
    }
  }
  // The row padding is not written.
  const size_t es = cake_test::dtype_size(c.xdt);
  for (int64_t r = 0; r < c.rows && c.pad > 0; ++r) {
    for (size_t b = size_t(r * (c.d + c.pad) + c.d) * es; b < size_t((r + 1) * (c.d + c.pad)) * es; ++b) {
      assert_int_equal(o.y[b], 0xff);
    }
  }
}

}  // namespace

static void test_forward_emulated(void **) {
  const int dtypes[][3] = {{CAKE_DTYPE_BF16, CAKE_DTYPE_BF16, CAKE_DTYPE_F32},
                           {CAKE_DTYPE_F16, CAKE_DTYPE_F16, CAKE_DTYPE_F16},
                           {CAKE_DTYPE_F32, CAKE_DTYPE_F32, CAKE_DTYPE_F32},
                           {CAKE_DTYPE_BF16, CAKE_DTYPE_F32, CAKE_DTYPE_F16},
                           {CAKE_DTYPE_F32, CAKE_DTYPE_BF16, CAKE_DTYPE_BF16},
                           {CAKE_DTYPE_F16, CAKE_DTYPE_BF16, CAKE_DTYPE_F32}};
  struct Shape {
    int64_t rows;
    int32_t d;
    std::vector<int> groups;
  };
  const Shape shapes[] = {{37, 24, {8, 24}},        {40, 128, {8, 32, 128}},
                          {33, 256, {64, 256}},     {9, 768, {96, 768}},
                          {7, 1000, {40, 1000}},    {6, 2048, {1024, 2048}},
                          {5, 5120, {640, 1024}},   {3, 8192, {1024, 8192}}};
  int k = 0, runs = 0;
  for (const Shape &sh : shapes) {
    for (int group : sh.groups) {
      for (int gate : {CAKE_NORMGATE_GATE_SILU, CAKE_NORMGATE_GATE_SIGMOID, CAKE_NORMGATE_GATE_NONE}) {
        for (int placement : {CAKE_NORMGATE_GATE_AFTER_NORM, CAKE_NORMGATE_GATE_BEFORE_NORM}) {
          const int *dt = dtypes[k % 6];
          const Case c = {sh.rows, sh.d, group, gate, placement, dt[0], dt[1], dt[2], (k % 2) * 8};
          ++k;
          std::vector<double> xv, zv, wv;
          const int64_t stride = c.d + c.pad;
          const auto x = random_bytes(c.xdt, c.rows, c.d, stride, 1.0, 0.0, &xv);
          const auto z = random_bytes(c.zdt, c.rows, c.d, stride, 2.0, 0.0, &zv);
          const auto w = random_bytes(c.wdt, 1, c.d, c.d, 0.5, 1.0, &wv);
          const Out wide = run<1024>(c, x, z, w);
          check(c, wide, xv, zv, wv, "1024 threads");
          ++runs;
          if (cake_ng_general_serves(c.d, 256)) {
            const Out narrow = run<256>(c, x, z, w);
            check(c, narrow, xv, zv, wv, "256 threads");
            assert_true(narrow.y == wide.y);
            assert_memory_equal(narrow.rstd.data(), wide.rstd.data(), wide.rstd.size() * 4);
            ++runs;
          }
          // The tile programs (16-bit x and z): the same bytes as the one-leaf layout.
          if (c.xdt != CAKE_DTYPE_F32 && c.zdt != CAKE_DTYPE_F32) {
            const Out tile = run<512, 2, 3>(c, x, z, w);
            assert_true(tile.y == wide.y);
            assert_memory_equal(tile.rstd.data(), wide.rstd.data(), wide.rstd.size() * 4);
            ++runs;
            cake_ng_tile t;
            if (cake_ng_tile_of(c.d, 128, 2, &t)) {  // 128 threads: rows up to 2048 columns
              const Out tile128 = run<128, 2, 0>(c, x, z, w);
              assert_true(tile128.y == wide.y);
              assert_memory_equal(tile128.rstd.data(), wide.rstd.data(), wide.rstd.size() * 4);
              ++runs;
            }
            if (cake_ng_tile_of(c.d, 320, 2, &t)) {  // a row over all of a CTA's 10 warps
              const Out tile320 = run<320, 2, 3>(c, x, z, w);
              assert_true(tile320.y == wide.y);
              assert_memory_equal(tile320.rstd.data(), wide.rstd.data(), wide.rstd.size() * 4);
              ++runs;
            }
          }
        }
      }
    }
  }
  assert_true(runs > 100);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_forward_emulated)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
