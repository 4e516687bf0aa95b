// The SwiGLU variants on the GPU (docs/spec/swiglu-mxfp8.md, "Variants"): the weighted, the
// clamped and the clamped weighted SwiGLU, and the plain call through the variant programs, for
// both families, every form, ungrouped and grouped: the routed call and every variant program of
// every table forced (the Blackwell and Rubin tables through their sm_90 cross-check images),
// byte-exact against the variants' host model on poisoned outputs, dp bit for bit (poisoned too:
// a grouped call leaves the tokens of no expert unwritten), the model driven by the device's
// sigmoid table of z(g) for the call's alpha and limit. Fresh random inputs each run (normals
// times 4: many gates and ups beyond the limit), values exactly at +-limit, weights in [0, 1]
// with exact 0 and 1, grouped expert sizes 0, 1, 31, 33, 127, 129 among random ones; for finite
// inputs no Y is NaN and every dp is finite. Skips without a GPU.
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_common.h"
#include "swiglu_fp8_ref.h"
#include "swiglu_gpu_common.h"
#include "swiglu_grouped_ref.h"
#include "swiglu_mxfp8_ref.h"
#include "swiglu_sigmoid_table.cuh"

using cake_test::DeviceBuffer;

namespace {

using cake_swiglu_gpu::g_cross;
using cake_swiglu_gpu::g_handle;
using cake_swiglu_gpu::g_table;
using cake_swiglu_gpu::setup;
using cake_swiglu_gpu::teardown;
using cake_swiglu_gpu::test_sigmoid_table;

constexpr float kAlpha = 1.702f, kLimit = 7.0f;
constexpr uint8_t kPoison = 0xa5;  // dp poison: 0xa5a5a5a5, a value no call writes here

struct Variant {
  const char *name;
  bool clamped, weighted;
};
constexpr Variant kVariants[] = {{"plain", false, false},
                                 {"weighted", false, true},
                                 {"clamped", true, false},
                                 {"clamped weighted", true, true}};

}  // namespace

// The exact sequence on z(g) = alpha * min(g, limit), per BF16 gate (the kernels' z).
__global__ void clamped_sigmoid_table(uint32_t *out, float alpha, float limit) {
  const uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= 65536u) return;
  const float g = __uint_as_float(b << 16);
  out[b] = __float_as_uint(cake::swiglu::sigmoid_exact(__fmul_rn(alpha, g > limit ? limit : g)));
}

namespace {

std::vector<uint32_t> g_clamped;

const uint32_t *table_of(const Variant &v) { return v.clamped ? g_clamped.data() : g_table.data(); }

void test_clamped_table(void **) {
  SKIP_WITHOUT_GPU();
  DeviceBuffer<uint32_t> t(65536);
  clamped_sigmoid_table<<<256, 256>>>(t.ptr, kAlpha, kLimit);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  g_clamped = t.download();
  // Finite and in [0, 1] for every non-NaN gate; above the limit every gate has the limit's.
  for (uint32_t b = 0; b < 65536; ++b) {
    float s, g;
    const uint32_t gb = b << 16;
    memcpy(&g, &gb, 4);
    memcpy(&s, &g_clamped[b], 4);
    if (std::isnan(g)) continue;
    assert_true(s >= 0.0f && s <= 1.0f);
    if (g > kLimit) assert_true(g_clamped[b] == g_clamped[cake_test::float_to_bf16_rne(kLimit)]);
  }
}

cake_ref::SwigluVariant model_variant(const Variant &v, const float *p) {
  cake_ref::SwigluVariant m;
  m.clamped = v.clamped;
  m.alpha = kAlpha;
  m.limit = kLimit;
  m.p = v.weighted ? p : nullptr;
  return m;
}

template <class Desc>
void set_variant(Desc *d, const Variant &v, const float *p, float *dp) {
  d->variant.activation = v.clamped ? CAKE_SWIGLU_ACT_CLAMPED : CAKE_SWIGLU_ACT_SILU;
  d->variant.alpha = kAlpha;
  d->variant.limit = kLimit;
  d->variant.weighted = v.weighted;
  d->variant.p = v.weighted ? p : nullptr;
  d->variant.dp = v.weighted ? dp : nullptr;
}

// Inputs of `rows` rows: in [rows, 2K], grad [rows, K], p [rows].
struct Inputs {
  std::vector<uint16_t> in, grad;
  std::vector<float> p;
};
Inputs make_inputs(int64_t rows, int64_t K) {
  Inputs x;
  x.in = cake_test::random_bf16(size_t(rows) * 2 * K, 4.0f);
  x.grad = cake_test::random_bf16(size_t(rows) * K, 1.0f);
  const uint16_t lim = cake_test::float_to_bf16_rne(kLimit);
  const uint16_t nlim = cake_test::float_to_bf16_rne(-kLimit);
  for (int64_t m = 0; m < rows; m += 2) {  // exactly at the bounds
    for (int64_t k = m % 5; k < K; k += 5) {
      x.in[size_t(m) * 2 * K + k] = lim;
      x.in[size_t(m) * 2 * K + K + k] = (k & 1) ? lim : nlim;
    }
  }
  std::uniform_real_distribution<float> ud(0.0f, 1.0f);
  x.p.resize(size_t(rows));
  for (auto &w : x.p) w = ud(cake_test::rng());
  x.p[0] = 0.0f;
  x.p[rows - 1] = 1.0f;
  return x;
}

std::vector<cake_handle_t> handles() {
  std::vector<cake_handle_t> h = {g_handle};
  h.insert(h.end(), g_cross.begin(), g_cross.end());
  return h;
}

bool is_variant_program(const char *name, bool grouped, bool mxfp8) {
  const char *tag = mxfp8 ? (grouped ? ".swvg_" : ".swv_") : (grouped ? ".sw8vg_" : ".sw8v_");
  return strstr(name, tag) != nullptr;
}

// one(handle, name) for the routed call (name NULL) and every variant program of every table
// that serves the form of `d` (a forced query says which).
template <class F, class Desc, class One>
void for_each_program(const Desc &d, bool bwd, bool grouped, bool mxfp8, One &&one) {
  one(g_handle, nullptr);
  for (cake_handle_t h : handles()) {
    for (int i = 0; i < cake_program_count(h); ++i) {
      const char *name = cake_program_name(h, i);
      if (!is_variant_program(name, grouped, mxfp8)) continue;
      Desc c = d;
      c.program = name;
      cake_program_info info;
      cake_program_info_init(&info);
      if (F::query(h, &c, bwd, &info) == CAKE_STATUS_SUCCESS) one(h, name);
    }
  }
}

// dp against the model's, NaN equal to NaN (its bits are not specified); poison kept where the
// model leaves it.
void expect_dp(const std::vector<float> &got, const std::vector<float> &want,
               const std::string &label) {
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t a, b;
    memcpy(&a, &got[i], 4);
    memcpy(&b, &want[i], 4);
    if (a == b || (std::isnan(got[i]) && std::isnan(want[i]) && b != 0xa5a5a5a5u)) continue;
    print_error("%s: dp[%zu] = %08x, model %08x\n", label.c_str(), i, a, b);
    fail();
  }
}

void expect_bytes(const std::vector<uint8_t> &got, const std::vector<uint8_t> &want,
                  const char *what, const std::string &label) {
  assert_int_equal(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    print_error("%s: %s byte %zu = %02x, model %02x\n", label.c_str(), what, i, got[i], want[i]);
    fail();
  }
}

// For finite inputs and weights in [0, 1]: no NaN in the model's Y, every dp finite (the model
// is what the device matches byte for byte).
void expect_no_nan(bool bwd, const Inputs &x, int64_t rows, int64_t K, const Variant &v) {
  std::vector<uint16_t> y;
  std::vector<float> dp(size_t(rows), 0.0f);
  const cake_ref::SwigluVariant mv = model_variant(v, x.p.data());
  cake_ref::swiglu_y(bwd, x.in.data(), x.grad.data(), rows, K, table_of(v), &y, &mv, dp.data());
  for (uint16_t h : y) assert_false((h & 0x7FFF) > 0x7F80);
  for (float d : dp) assert_true(std::isfinite(d));
}

// ---- ungrouped ----
template <bool kMx>
struct Ungrouped;
template <>
struct Ungrouped<true> {
  using Desc = cake_swiglu_mxfp8_desc;
  using Sizes = cake_swiglu_mxfp8_sizes;
  using Scale = uint8_t;
  static constexpr auto desc_init = cake_swiglu_mxfp8_desc_init;
  static constexpr auto sizes_init = cake_swiglu_mxfp8_sizes_init;
  static constexpr auto buffer_sizes = cake_swiglu_mxfp8_buffer_sizes;
  static constexpr auto forward = cake_swiglu_mxfp8_forward;
  static constexpr auto backward = cake_swiglu_mxfp8_backward;
  static constexpr auto query = cake_swiglu_mxfp8_query;
  static constexpr int64_t M = 256, K = 320;  // partial k-tiles of the 64- and 256-column tiles
};
template <>
struct Ungrouped<false> {
  using Desc = cake_swiglu_fp8_desc;
  using Sizes = cake_swiglu_fp8_sizes;
  using Scale = uint32_t;
  static constexpr auto desc_init = cake_swiglu_fp8_desc_init;
  static constexpr auto sizes_init = cake_swiglu_fp8_sizes_init;
  static constexpr auto buffer_sizes = cake_swiglu_fp8_buffer_sizes;
  static constexpr auto forward = cake_swiglu_fp8_forward;
  static constexpr auto backward = cake_swiglu_fp8_backward;
  static constexpr auto query = cake_swiglu_fp8_query;
  static constexpr int64_t M = 200, K = 384;  // M not a multiple of 128: the tail
};

template <bool kMx>
int check_ungrouped(int form, const Variant &v) {
  using F = Ungrouped<kMx>;
  const int64_t M = F::M, K = F::K;
  const bool bwd = form >= 3;
  typename F::Desc d;
  F::desc_init(&d);
  d.m = M;
  d.k = K;
  d.orientation = (cake_mxfp8_orientation_t)(form % 3 + 1);
  typename F::Sizes s;
  F::sizes_init(&s);
  CAKE_OK(F::buffer_sizes(&d, bwd, &s));  // the form's sizes: compared whole with the model's
  const Inputs x = make_inputs(M, K);
  expect_no_nan(bwd, x, M, K, v);
  cake_swiglu_gpu::Device<typename F::Scale, typename F::Sizes> dev(M, K, s);
  dev.in.upload(x.in);
  dev.grad.upload(x.grad);
  DeviceBuffer<float> p((size_t)M), dp((size_t)M);
  p.upload(x.p);
  std::vector<float> want_dp((size_t)M);
  memset(want_dp.data(), kPoison, want_dp.size() * 4);
  const cake_ref::SwigluVariant mv = model_variant(v, x.p.data());
  const bool is_v = v.clamped || v.weighted;
  // The model.
  cake_ref::Mxfp8Out wm;
  cake_ref::Fp8Out wf;
  if constexpr (kMx) {
    cake_ref::swiglu_mxfp8_model(form, x.in.data(), x.grad.data(), M, K, table_of(v), &wm,
                                 is_v ? &mv : nullptr, want_dp.data());
  } else {
    cake_ref::swiglu_fp8_model(form, x.in.data(), x.grad.data(), M, K, table_of(v), 0, &wf,
                               is_v ? &mv : nullptr, want_dp.data());
  }
  int runs = 0;
  auto one = [&](cake_handle_t h, const char *name) {
    typename F::Desc c = d;
    c.program = name;
    set_variant(&c, v, p.ptr, dp.ptr);
    dp.poison(kPoison);
    const auto got = cake_swiglu_gpu::run(h, dev, c, form, F::forward, F::backward, nullptr);
    const std::string label = std::string(name ? name : "routed") + " form " +
                              std::to_string(form) + " " + v.name;
    if constexpr (kMx) {
      if (form % 3 != 1) {
        expect_bytes(got.row_q, wm.row_q, "row_q", label);
        expect_bytes(got.row_s, wm.row_s, "row_s", label);
      }
      if (form % 3 != 0) {
        expect_bytes(got.col_q, wm.col_q, "col_q", label);
        expect_bytes(got.col_s, wm.col_s, "col_s", label);
      }
    } else {
      const cake_ref::Fp8Compare r =
          cake_ref::fp8_compare(form, M, K, wf, got.row_q.empty() ? nullptr : got.row_q.data(),
                                got.row_s.empty() ? nullptr : got.row_s.data(),
                                got.col_q.empty() ? nullptr : got.col_q.data(),
                                got.col_s.empty() ? nullptr : got.col_s.data());
      if (!r.ok) {
        print_error("%s: %lld of %lld bytes differ\n%s", label.c_str(), (long long)r.differing,
                    (long long)r.bytes, r.detail.c_str());
        fail();
      }
    }
    expect_dp(dp.download(), want_dp, label);
    ++runs;
  };
  for_each_program<F>(d, bwd, false, kMx, one);
  return runs;
}

void test_ungrouped(void **) {
  SKIP_WITHOUT_GPU();
  int runs = 0;
  for (int form = 0; form < 6; ++form) {
    for (const Variant &v : kVariants) runs += check_ungrouped<true>(form, v);
    for (const Variant &v : kVariants) runs += check_ungrouped<false>(form, v);
  }
  // Every form: the routed call and one variant program a table (4 tables), 4 variants, 2
  // families.
  assert_true(runs >= 6 * 4 * 2 * 5);
  print_message("%d ungrouped variant calls byte-exact\n", runs);
}

// ---- grouped ----
template <bool kMx>
struct Grouped;
template <>
struct Grouped<true> {
  using Desc = cake_swiglu_mxfp8_grouped_desc;
  static constexpr auto desc_init = cake_swiglu_mxfp8_grouped_desc_init;
  static constexpr auto buffer_sizes = cake_swiglu_mxfp8_grouped_buffer_sizes;
  static constexpr auto forward = cake_swiglu_mxfp8_grouped_forward;
  static constexpr auto backward = cake_swiglu_mxfp8_grouped_backward;
  static constexpr auto query = cake_swiglu_mxfp8_grouped_query;
  static constexpr int64_t K = 96;
};
template <>
struct Grouped<false> {
  using Desc = cake_swiglu_fp8_grouped_desc;
  static constexpr auto desc_init = cake_swiglu_fp8_grouped_desc_init;
  static constexpr auto buffer_sizes = cake_swiglu_fp8_grouped_buffer_sizes;
  static constexpr auto forward = cake_swiglu_fp8_grouped_forward;
  static constexpr auto backward = cake_swiglu_fp8_grouped_backward;
  static constexpr auto query = cake_swiglu_fp8_grouped_query;
  static constexpr int64_t K = 256;
};

template <bool kMx>
int check_grouped(int form, const Variant &v, const std::vector<int32_t> &offsets) {
  using F = Grouped<kMx>;
  const int64_t T = 1000, K = F::K, E = (int64_t)offsets.size();
  const bool bwd = form >= 3;
  typename F::Desc d;
  F::desc_init(&d);
  d.tokens = T;
  d.k = K;
  d.experts = (int32_t)E;
  d.orientation = (cake_mxfp8_orientation_t)(form % 3 + 1);
  cake_swiglu_grouped_sizes s;
  cake_swiglu_grouped_sizes_init(&s);
  CAKE_OK(F::buffer_sizes(&d, 1, &s));
  const Inputs x = make_inputs(T, K);
  DeviceBuffer<uint16_t> in(x.in.size()), grad(x.grad.size());
  DeviceBuffer<int32_t> off(offsets.size()), status(1);
  DeviceBuffer<uint8_t> rq(s.q_bytes), rs(s.row_s_bytes), cq(s.q_bytes), cs(s.col_s_bytes);
  DeviceBuffer<float> p((size_t)T), dp((size_t)T);
  in.upload(x.in);
  grad.upload(x.grad);
  off.upload(offsets);
  p.upload(x.p);
  std::vector<float> want_dp((size_t)T);
  memset(want_dp.data(), kPoison, want_dp.size() * 4);
  const cake_ref::SwigluVariant mv = model_variant(v, x.p.data());
  const bool is_v = v.clamped || v.weighted;
  cake_ref::GroupedOut want;
  if constexpr (kMx) {
    cake_ref::swiglu_mxfp8_grouped_model(form, x.in.data(), x.grad.data(), T, K, offsets,
                                         table_of(v), kPoison, &want, is_v ? &mv : nullptr,
                                         want_dp.data());
  } else {
    cake_ref::swiglu_fp8_grouped_model(form, x.in.data(), x.grad.data(), T, K, offsets,
                                       table_of(v), 0, kPoison, &want, is_v ? &mv : nullptr,
                                       want_dp.data());
  }
  // The model's buffers are sized for the form; the device's for the backward.
  auto sized = [](std::vector<uint8_t> v, const std::vector<uint8_t> &w) {
    v.resize(w.size());
    return v;
  };
  int runs = 0;
  auto one = [&](cake_handle_t h, const char *name) {
    typename F::Desc c = d;
    c.program = name;
    set_variant(&c, v, p.ptr, dp.ptr);
    for (auto *b : {&rq, &rs, &cq, &cs}) b->poison(kPoison);
    dp.poison(kPoison);
    if (bwd) {
      CAKE_OK(F::backward(h, &c, in.ptr, grad.ptr, off.ptr, rq.ptr, rs.ptr, cq.ptr, cs.ptr,
                          status.ptr, nullptr));
    } else {
      CAKE_OK(F::forward(h, &c, in.ptr, off.ptr, rq.ptr, rs.ptr, cq.ptr, cs.ptr, status.ptr,
                         nullptr));
    }
    CUDA_OK(cudaDeviceSynchronize());
    const bool row = form % 3 != 1, col = form % 3 != 0;
    const std::vector<uint8_t> grq = row ? sized(rq.download(), want.row_q) : std::vector<uint8_t>();
    const std::vector<uint8_t> grs = row ? sized(rs.download(), want.row_s) : std::vector<uint8_t>();
    const std::vector<uint8_t> gcq = col ? sized(cq.download(), want.col_q) : std::vector<uint8_t>();
    const std::vector<uint8_t> gcs = col ? sized(cs.download(), want.col_s) : std::vector<uint8_t>();
    const cake_ref::GroupedCompare r = cake_ref::grouped_compare(
        form, want, row ? grq.data() : nullptr, row ? grs.data() : nullptr,
        col ? gcq.data() : nullptr, col ? gcs.data() : nullptr);
    const std::string label = std::string(name ? name : "routed") + " grouped form " +
                              std::to_string(form) + " " + v.name;
    if (!r.ok) {
      print_error("%s: %lld of %lld bytes differ\n%s", label.c_str(), (long long)r.differing,
                  (long long)r.bytes, r.detail.c_str());
      fail();
    }
    expect_dp(dp.download(), want_dp, label);
    ++runs;
  };
  for_each_program<F>(d, bwd, true, kMx, one);
  return runs;
}

void test_grouped(void **) {
  SKIP_WITHOUT_GPU();
  int runs = 0;
  std::uniform_int_distribution<uint32_t> seed;
  for (int form = 0; form < 6; ++form) {
    for (const Variant &v : kVariants) {
      // Fresh uneven splits (0, 1, 31, 33, 127, 129 among them), the last experts short of T.
      runs += check_grouped<true>(form, v, cake_ref::grouped_test_offsets(1000, 9, seed(cake_test::rng())));
      runs += check_grouped<false>(form, v, cake_ref::grouped_test_offsets(1000, 9, seed(cake_test::rng())));
    }
  }
  assert_true(runs >= 6 * 4 * 2 * 5);
  print_message("%d grouped variant calls byte-exact\n", runs);
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sigmoid_table),
      cmocka_unit_test(test_clamped_table),
      cmocka_unit_test(test_ungrouped),
      cmocka_unit_test(test_grouped),
  };
  return cmocka_run_group_tests_name("swiglu_variants", tests, setup, teardown);
}
