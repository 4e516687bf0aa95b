// The norm-gate forward with quantized y (kernels/common/normgate_quant.cuh inside the tuned and
// general forward bodies) run on the CPU, one OS thread per CUDA thread (cuda_host_emulation.h):
// for the tuned widths and general widths inside a warp, across warps and not powers of two,
// both formats, both FP8 scale rules and several heads, the y it writes is the plain forward's
// (the same body without quantization) bit for bit, and its E4M3 bytes and scales are the host
// model's (tests/reference/normgate_quant_ref.h) of that y, byte for byte over the whole
// buffers (the MXFP8 padding included). Inputs span many binades per block (w scaled by 2^k per
// 128 columns), with all-zero rows, all-zero blocks, NaN and Inf rows.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_host_emulation.h"

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }

#include "cmocka_cxx.h"
#include "mxfp8_encode.h"
#include "normgate_fwd.cuh"
#include "normgate_general_fwd.cuh"
#include "normgate_quant_ref.h"

CAKE_EMULATION_GLOBALS

namespace {

std::mt19937_64 g_gen(33);

uint16_t bf16(float f) { return cake::mx::bf16_rn(f); }

struct Inputs {
  int64_t rows;
  int32_t d;
  std::vector<uint16_t> x, z, w;
};

// x, z normal; w normal times 2^k per 128 columns (k uniform in [-60, 60]), one 128-column
// block of w zero; row 1 all zero, row 2 with a NaN in x, row 3 with +Inf in z (y Inf there).
Inputs make_inputs(int64_t rows, int32_t d) {
  Inputs in{rows, d, {}, {}, {}};
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::uniform_int_distribution<int> k(-60, 60);
  in.x.resize(size_t(rows * d));
  in.z.resize(size_t(rows * d));
  in.w.resize(size_t(d));
  for (auto &v : in.x) v = bf16(n(g_gen));
  for (auto &v : in.z) v = bf16(2.0f * n(g_gen));
  for (int32_t c0 = 0; c0 < d; c0 += 128) {
    const float s = std::ldexp(1.0f, k(g_gen));
    for (int32_t c = c0; c < std::min(d, c0 + 128); ++c) in.w[size_t(c)] = bf16(s * n(g_gen));
  }
  if (d >= 256) {
    for (int32_t c = 128; c < 256; ++c) in.w[size_t(c)] = 0;
  }
  if (rows > 3) {
    for (int32_t c = 0; c < d; ++c) in.x[size_t(1 * d + c)] = 0;
    in.x[size_t(2 * d + d / 2)] = 0x7FC0;
    in.z[size_t(3 * d + 5)] = 0x7F80;
  }
  return in;
}

struct Quant {
  int format, rule;
  int64_t heads;
};

struct Out {
  std::vector<uint16_t> y;
  std::vector<uint8_t> q, scale;
};

// The launch of one program's body over a grid of half the blocks (CTAs stride over blocks).
template <class Cfg>
Out run(const Inputs &in, int64_t rows_per_block, const Quant *quant, bool write_y) {
  Out o;
  const int64_t rows = in.rows;
  o.y.assign(size_t(rows * in.d), 0xABAB);  // poisoned
  cake_normgate_params p;
  std::memset(&p, 0, sizeof p);
  p.x = in.x.data();
  p.z = in.z.data();
  p.w = in.w.data();
  p.y = write_y ? o.y.data() : nullptr;
  p.rows = rows;
  p.x_stride = p.z_stride = p.y_stride = in.d;
  p.d = in.d;
  p.eps = 1e-6f;
  p.rows_per_block = rows_per_block;
  int64_t walked = rows;
  if (quant != nullptr) {
    const int64_t T = rows / quant->heads, K = quant->heads * in.d;
    p.heads = static_cast<int32_t>(quant->heads);
    p.q_rows = T;
    p.scale_rule = quant->rule;
    int64_t sbytes = 0;
    if (quant->format == 1) {
      sbytes = 4 * T * (K / 128);
      p.s_cols_padded = static_cast<int32_t>(K / 128);
      p.cover_rows = rows;
    } else {
      cake::mx::scale_matrix_bytes(T, K / 32, &sbytes);
      p.s_cols_padded = static_cast<int32_t>(cake::mx::scale_cols_padded(K / 32));
      p.cover_rows = cake::mx::scale_rows_padded(T) * quant->heads;
    }
    walked = p.cover_rows;
    o.q.assign(size_t(rows * in.d), 0xAB);
    o.scale.assign(size_t(sbytes), 0xAB);
    p.q = o.q.data();
    p.q_scale = o.scale.data();
  }
  p.num_blocks = (walked + rows_per_block - 1) / rows_per_block;
  const unsigned grid = static_cast<unsigned>(std::max<int64_t>(1, (p.num_blocks + 1) / 2));
  cake_emu::launch(
      [&] {
        if constexpr (Cfg::kD == 0) {
          cake::ng::fwd_general<Cfg>(p);
        } else {
          cake::ng::fwd_tuned<Cfg>(p);
        }
      },
      grid, Cfg::kThreads);
  return o;
}

template <int kD, int kThreads, int kRpg, int kQuant>
using NgCfg = cake::NormgateCfg<CAKE_NG_OP_FWD, kD, kThreads, kRpg, 0, 0, 0, 0, kQuant>;

int64_t rows_per_block(int kD, int kThreads, int kRpg, int32_t d) {
  const int groups = kD != 0 ? kThreads / (kD / 8) : cake_ng_general_groups(d, kThreads);
  return int64_t(groups) * kRpg;
}

// One program (its width knob kD, threads, rows per group) on rows x d for the formats.
template <int kD, int kThreads, int kRpg>
void check_program(int64_t rows, int32_t d, const std::vector<Quant> &quants, int *runs) {
  const Inputs in = make_inputs(rows, d);
  const int64_t rpb = rows_per_block(kD, kThreads, kRpg, d);
  const Out plain = run<NgCfg<kD, kThreads, kRpg, 0>>(in, rpb, nullptr, true);
  for (const Quant &q : quants) {
    for (bool write_y : {true, false}) {
      const Out o = q.format == 1 ? run<NgCfg<kD, kThreads, kRpg, 1>>(in, rpb, &q, write_y)
                                  : run<NgCfg<kD, kThreads, kRpg, 2>>(in, rpb, &q, write_y);
      if (write_y && o.y != plain.y) {
        print_error("kD %d threads %d d %d format %d: y differs from the plain forward's\n", kD,
                    kThreads, d, q.format);
        fail();
      }
      if (!write_y) {
        for (uint16_t v : o.y) assert_int_equal(v, 0xABAB);  // y NULL: not written
      }
      cake_ref::NormgateQuantOut want;
      cake_ref::normgate_quant_model(plain.y.data(), rows, d, d, q.heads, q.format, q.rule, &want);
      assert_int_equal(want.q.size(), o.q.size());
      assert_int_equal(want.scale.size(), o.scale.size());
      const std::string diff = cake_ref::normgate_quant_compare(want, o.q.data(), o.scale.data(),
                                                                q.format, rows, d, q.heads);
      if (!diff.empty()) {
        print_error("kD %d threads %d rows %lld d %d format %d rule %d heads %lld y %d: %s\n", kD,
                    kThreads, (long long)rows, d, q.format, q.rule, (long long)q.heads,
                    (int)write_y, diff.c_str());
        fail();
      }
      ++*runs;
    }
  }
}

// The formats a width allows: FP8 blockwise (both rules) for multiples of 128, MXFP8 for
// multiples of 32; heads 1 and `heads` (MXFP8 with several heads only for multiples of 128).
std::vector<Quant> quants_for(int32_t d, int64_t heads) {
  std::vector<Quant> v;
  if (d % 128 == 0) {
    v.push_back({1, 0, 1});
    v.push_back({1, 1, heads});
    if (heads > 1) v.push_back({2, 0, heads});
  }
  if (d % 32 == 0) v.push_back({2, 0, 1});
  return v;
}

}  // namespace

static void test_tuned_programs(void **) {
  int runs = 0;
  // Short (128 threads) and long (256 threads) forms of each tuned width; rows not multiples of
  // the groups, of 128 or of 4 (MXFP8 padding rows, FP8 blockwise MN strides).
  check_program<64, 128, 1>(45, 64, quants_for(64, 1), &runs);
  check_program<64, 256, 1>(70, 64, quants_for(64, 1), &runs);
  check_program<128, 128, 1>(150, 128, quants_for(128, 3), &runs);
  check_program<128, 256, 1>(66, 128, quants_for(128, 2), &runs);
  check_program<256, 128, 1>(36, 256, quants_for(256, 4), &runs);
  check_program<256, 256, 1>(27, 256, quants_for(256, 3), &runs);
  assert_true(runs >= 30);
}

static void test_general_programs(void **) {
  int runs = 0;
  // 256 threads: widths inside a warp (32, 96, 160: MXFP8 only; 128) and across warps, not
  // powers of two (384, 640), and 2048.
  check_program<0, 256, 2>(21, 32, quants_for(32, 1), &runs);
  check_program<0, 256, 2>(19, 96, quants_for(96, 1), &runs);
  check_program<0, 256, 2>(13, 160, quants_for(160, 1), &runs);
  check_program<0, 256, 2>(30, 128, quants_for(128, 5), &runs);
  check_program<0, 256, 2>(12, 384, quants_for(384, 2), &runs);
  check_program<0, 256, 2>(9, 640, quants_for(640, 3), &runs);
  check_program<0, 256, 2>(6, 2048, quants_for(2048, 2), &runs);
  // 1024 threads: 2048 and Mamba2's 5120.
  check_program<0, 1024, 2>(5, 2048, quants_for(2048, 5), &runs);
  check_program<0, 1024, 2>(5, 5120, quants_for(5120, 1), &runs);
  assert_true(runs >= 40);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tuned_programs),
      cmocka_unit_test(test_general_programs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
