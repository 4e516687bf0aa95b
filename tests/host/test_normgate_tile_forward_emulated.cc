// The default form's tile forward (kernels/common/normgate_variant_tile.cuh, fwd_default_tile:
// the tile layout summing each row in the default form's row tree) run on the CPU, one OS
// thread per CUDA thread (cuda_host_emulation.h), beside the general forward
// (normgate_general_fwd.cuh) on the same inputs: y and rstd byte for byte, for every tile shape
// of the manifests (256, 320 and 512 threads with a load ring; 128 without, a candidate), at widths of one
// warp or less a row (several rows a thread), of whole and partial 32-leaf runs, whose leaves
// are not a power of two, of a row over all of a CTA's warps, up to 8192 columns; packed and
// strided rows; rows with zeros, a NaN, an Inf and an input of 2^24 or more (the FP64 path), and
// a w column of 2^24 or more (every row wide). What the GPU test checks on the device, here on
// any machine.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cuda_host_emulation.h"

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }

#include "cmocka_cxx.h"
#include "mxfp8_encode.h"
#include "normgate_fwd.cuh"
#include "normgate_general_fwd.cuh"
#include "normgate_variant_tile.cuh"

CAKE_EMULATION_GLOBALS

namespace {

std::mt19937_64 g_gen(71);

uint16_t bf16(float f) { return cake::mx::bf16_rn(f); }

template <int kThreads_, int kSlots_, int kPrefetch_>
struct TileCfg {
  static constexpr int kThreads = kThreads_;
  static constexpr int kSlots = kSlots_;
  static constexpr int kPrefetch = kPrefetch_;  // the load ring's trips (0: none)
};

template <int kThreads>
using GeneralCfg = cake::NormgateCfg<CAKE_NG_OP_FWD, 0, kThreads, 2, 0, 0>;

struct Inputs {
  int64_t rows, stride;
  int32_t d;
  std::vector<uint16_t> x, z, w;
};

// x, z normal (z twice as wide), w about 1; the row padding NaN. Specials: row 1 all zero,
// row 2 a NaN in x, row 3 +Inf in z, row 4 an x of 2^25 (wide); wide_w: one w of 2^25.
Inputs make_inputs(int64_t rows, int32_t d, int64_t pad, bool wide_w) {
  Inputs in{rows, d + pad, d, {}, {}, {}};
  std::normal_distribution<float> n(0.0f, 1.0f);
  in.x.assign(size_t(rows * in.stride), 0x7FC0);
  in.z.assign(size_t(rows * in.stride), 0x7FC0);
  in.w.resize(size_t(d));
  for (int64_t r = 0; r < rows; ++r) {
    for (int32_t c = 0; c < d; ++c) {
      in.x[size_t(r * in.stride + c)] = bf16(n(g_gen));
      in.z[size_t(r * in.stride + c)] = bf16(2.0f * n(g_gen));
    }
  }
  for (auto &v : in.w) v = bf16(1.0f + 0.5f * n(g_gen));
  if (rows > 4) {
    for (int32_t c = 0; c < d; ++c) in.x[size_t(1 * in.stride + c)] = 0;
    in.x[size_t(2 * in.stride + d / 2)] = 0x7FC0;
    in.z[size_t(3 * in.stride + d - 3)] = 0x7F80;
    in.x[size_t(4 * in.stride + d / 3)] = bf16(std::ldexp(1.0f, 25));
  }
  if (wide_w) in.w[size_t(d - 1)] = bf16(std::ldexp(1.0f, 25));
  return in;
}

struct Out {
  std::vector<uint16_t> y;
  std::vector<float> rstd;
};

// One program's body over a grid of half the blocks (CTAs stride over blocks, as a persistent
// launch). kSlots 0: the general forward of kThreads threads; else the tile forward.
template <int kThreads, int kSlots = 0, int kDepth = 0>
Out run(const Inputs &in) {
  Out o;
  o.y.assign(size_t(in.rows * in.stride), 0xABAB);  // poisoned, padding included
  o.rstd.assign(size_t(in.rows), NAN);
  cake_normgate_params p;
  std::memset(&p, 0, sizeof p);
  p.x = in.x.data();
  p.z = in.z.data();
  p.w = in.w.data();
  p.y = o.y.data();
  p.rstd = o.rstd.data();
  p.rows = in.rows;
  p.x_stride = p.z_stride = p.y_stride = in.stride;
  p.d = in.d;
  p.eps = 1e-6f;
  // The default form as the library fills it (normgate_launch.cc, fill_variant).
  p.gate = CAKE_NORMGATE_GATE_SILU;
  p.placement = CAKE_NORMGATE_GATE_AFTER_NORM;
  p.group = in.d;
  p.x_dtype = p.z_dtype = p.w_dtype = CAKE_DTYPE_BF16;
  cake_ng_tile t = {0, 0, 0, 0};
  if (kSlots != 0 && !cake_ng_tile_of(in.d, kThreads, kSlots, &t)) fail();
  p.rows_per_block = kSlots != 0 ? int64_t(t.row_groups) * t.rows_per_thread
                                 : int64_t(cake_ng_general_groups(in.d, kThreads)) * 2;
  p.num_blocks = (in.rows + p.rows_per_block - 1) / p.rows_per_block;
  const unsigned grid = static_cast<unsigned>(std::max<int64_t>(1, (p.num_blocks + 1) / 2));
  cake_emu::launch(
      [&] {
        if constexpr (kSlots != 0) {
          cake::ng::fwd_default_tile<TileCfg<kThreads, kSlots, kDepth>>(p);
        } else {
          cake::ng::fwd_general<GeneralCfg<kThreads>>(p);
        }
      },
      grid, kThreads);
  return o;
}

void expect_same(const Out &got, const Out &want, const Inputs &in, const char *label) {
  for (size_t i = 0; i < want.y.size(); ++i) {
    if (got.y[i] != want.y[i]) {
      print_error("%s rows %lld d %d stride %lld: y[%lld, %lld] %04x, the general program's %04x\n",
                  label, (long long)in.rows, in.d, (long long)in.stride,
                  (long long)(int64_t(i) / in.stride), (long long)(int64_t(i) % in.stride),
                  got.y[i], want.y[i]);
      fail();
    }
  }
  assert_memory_equal(got.rstd.data(), want.rstd.data(), want.rstd.size() * sizeof(float));
}

}  // namespace

static void test_tile_forward_matches_general(void **) {
  struct Shape {
    int64_t rows;
    int32_t d;
  };
  // Rows of 1..32 leaves (several a warp), 33..64 (one warp, two runs), whole and partial runs,
  // leaf counts off powers of two, the 320-thread row over all warps, the widest.
  const Shape shapes[] = {{37, 8},   {29, 24},   {23, 136},  {19, 200},  {17, 264},  {13, 520},
                          {11, 1000}, {9, 2048},  {8, 2056},  {7, 3000},  {6, 4096},  {6, 4104},
                          {5, 5120},  {5, 6000},  {5, 8192}};
  int runs = 0, k = 0;
  for (const Shape &sh : shapes) {
    for (bool wide_w : {false, true}) {
      const Inputs in = make_inputs(sh.rows, sh.d, (k++ % 2) * 16, wide_w);
      const Out want = cake_ng_general_serves(sh.d, 256) ? run<256>(in) : run<1024>(in);
      // The reference rows are the general program's; they are not all poison or NaN.
      assert_int_not_equal(want.y[0], 0xABAB);
      cake_ng_tile t;
      if (cake_ng_tile_of(sh.d, 128, 2, &t)) {
        expect_same(run<128, 2, 0>(in), want, in, "128 threads");
        ++runs;
      }
      if (cake_ng_tile_of(sh.d, 256, 2, &t)) {
        expect_same(run<256, 2, 3>(in), want, in, "256 threads");
        ++runs;
      }
      if (cake_ng_tile_of(sh.d, 320, 2, &t)) {
        expect_same(run<320, 2, 3>(in), want, in, "320 threads");
        ++runs;
      }
      expect_same(run<512, 2, 3>(in), want, in, "512 threads");
      ++runs;
    }
  }
  print_message("%d tile forward runs byte-identical to the general forward\n", runs);
  assert_true(runs >= 80);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_tile_forward_matches_general)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
