// The SwiGLU variant programs of every table (kernels/common/swiglu_variants.def: both families,
// every form, ungrouped and grouped) run on the CPU (tests/host/cuda_host_emulation.h) against
// the host model of the variants (tests/reference/swiglu_variant_ref.cc), byte for byte over
// poisoned buffers, dp bit for bit: the weighted, the clamped and the clamped weighted SwiGLU,
// and the plain call (which a variant program serves with the plain bytes). Inputs: normals
// times 4 (many gates and ups beyond the clamp limit), values exactly at +-limit, the non-finite
// specials, weights in [0, 1] with exact 0 and 1, a weight of 2.5 and one of -1.5 (the rows that
// take the wide refix); shapes with partial k-tiles and row tiles, grouped expert sizes 0, 1,
// 31, 33, 127, 129 among random ones; one CTA striding over every row tile and several CTAs.
#include "cuda_host_emulation.h"

#define CAKE_KERNEL_NAME(sym) emu_##sym
#define CAKE_OPEN 0
#define CAKE_ROUTE(...)
#include "swiglu_fp8_kernel.cuh"
#include "swiglu_mxfp8_kernel.cuh"
#include "swiglu_variants.def"

CAKE_EMULATION_GLOBALS

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

// Before cmocka.h, whose fail() macro would take the library's fail().
#include "api/swiglu_common.h"

extern "C" {
#include <cmocka.h>
}

#include "families/swiglu_fp8_launch.h"
#include "families/swiglu_grouped_launch.h"
#include "families/swiglu_mxfp8_launch.h"
#include "swiglu_emu_common.h"
#include "swiglu_fp8_ref.h"
#include "swiglu_grouped_ref.h"
#include "swiglu_mxfp8_ref.h"

namespace {

namespace mx = cake::mx;

// The table's programs, from the same lines.
struct Program {
  const char *name;
  void *fn;  // void (*)(the form's parameter struct)
  cake_program_desc desc;
};
#undef CAKE_SWIGLU_PROGRAM
#undef CAKE_SWIGLU_FP8_PROGRAM
#define CAKE_SWIGLU_PROGRAM(sym, form, threads, ctas, tr, tc, rpt, hint, sig, band, ...) \
  {#sym, (void *)emu_##sym,                                                             \
   {#sym, #sym, CAKE_FAMILY_SWIGLU_MXFP8, form, threads, ctas,                         \
    {tr, tc, rpt, hint, sig, band, __VA_ARGS__}}},
#define CAKE_SWIGLU_FP8_PROGRAM(sym, form, threads, ctas, tr, rpt, hint, sig, band, ...) \
  {#sym, (void *)emu_##sym,                                                             \
   {#sym, #sym, CAKE_FAMILY_SWIGLU_FP8, form, threads, ctas,                           \
    {tr, rpt, hint, sig, band, __VA_ARGS__}}},
const Program kPrograms[] = {
#include "swiglu_variants.def"
};

constexpr uint8_t kPoison = 0xA5;
constexpr uint32_t kDpPoison = 0x7FBADBADu;  // a NaN no model or kernel writes

// The variants a program runs: the plain call, weighted, clamped, clamped and weighted.
struct Variant {
  const char *name;
  bool clamped, weighted;
};
constexpr Variant kVariants[] = {
    {"plain", false, false}, {"weighted", false, true}, {"clamped", true, false},
    {"clamped weighted", true, true}};
constexpr float kLimit = 7.0f, kAlpha = 1.702f;

struct Inputs {
  std::vector<uint16_t> in, grad;
  std::vector<float> p;
};

Inputs make_inputs(int64_t M, int64_t K, uint32_t seed) {
  Inputs x;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  x.in.resize((size_t)(M * 2 * K));
  x.grad.resize((size_t)(M * K));
  for (auto &v : x.in) v = mx::bf16_rn(nd(rng));
  for (auto &v : x.grad) v = mx::bf16_rn(nd(rng) * 0.25f);
  // Exactly at the bounds: gates at +limit, ups at +-limit, every 7th element of row 5 on.
  const uint16_t lim = mx::bf16_rn(kLimit), nlim = mx::bf16_rn(-kLimit);
  for (int64_t m = 5; m < M; m += 3) {
    for (int64_t k = m % 7; k < K; k += 7) {
      x.in[(size_t)(m * 2 * K + k)] = lim;
      x.in[(size_t)(m * 2 * K + K + k)] = (k & 1) ? lim : nlim;
    }
  }
  if (M >= 5 && K >= 64) {
    cake_swiglu_emu::Inputs s{x.in, x.grad};
    cake_swiglu_emu::add_nonfinite(&s, K);
    x.in = s.in;
    x.grad = s.grad;
  }
  std::uniform_real_distribution<float> ud(0.0f, 1.0f);
  x.p.resize((size_t)M);
  for (auto &v : x.p) v = ud(rng);
  if (M > 8) {
    x.p[1] = 0.0f;
    x.p[2] = 1.0f;
    x.p[6] = 2.5f;
    x.p[8] = -1.5f;
  }
  return x;
}

cake_ref::SwigluVariant model_variant(const Variant &v, const float *p) {
  cake_ref::SwigluVariant m;
  m.clamped = v.clamped;
  m.alpha = kAlpha;
  m.limit = kLimit;
  m.p = v.weighted ? p : nullptr;
  return m;
}

// The kernels' variant, through the library's conversion of a descriptor's.
cake_swiglu_variant kernel_variant(const Variant &v, const float *p, float *dp, int backward) {
  cake_swiglu_variant_desc d;
  cake::swiglu_variant_defaults(&d);
  d.activation = v.clamped ? CAKE_SWIGLU_ACT_CLAMPED : CAKE_SWIGLU_ACT_SILU;
  d.alpha = kAlpha;
  d.limit = kLimit;
  d.weighted = v.weighted ? 1 : 0;
  d.p = p;
  d.dp = dp;
  return cake::swiglu_kernel_variant(d, backward);
}

const std::vector<uint32_t> &sigmoid_table(bool clamped) {
  static std::vector<uint32_t> t;
  if (!clamped) return cake_swiglu_emu::table();
  if (t.empty()) {
    cake_ref::SwigluVariant v;
    v.clamped = true;
    v.alpha = kAlpha;
    v.limit = kLimit;
    cake_ref::variant_sigmoid_table(v, &t);
  }
  return t;
}

bool same_dp(const std::vector<float> &got, const std::vector<float> &want, std::string *why) {
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t a, b;
    memcpy(&a, &got[i], 4);
    memcpy(&b, &want[i], 4);
    const bool nan_both = std::isnan(got[i]) && std::isnan(want[i]) && a != kDpPoison &&
                          b != kDpPoison;
    if (a != b && !nan_both) {
      char buf[128];
      snprintf(buf, sizeof buf, "dp[%zu] = %08x, model %08x\n", i, a, b);
      *why = buf;
      return false;
    }
  }
  return true;
}

bool bytes_equal(const std::vector<uint8_t> &a, const std::vector<uint8_t> &b, const char *what,
                 std::string *why) {
  if (a.size() != b.size()) {
    *why = std::string(what) + ": size differs\n";
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) {
      char buf[128];
      snprintf(buf, sizeof buf, "%s byte %zu = %02x, model %02x\n", what, i, a[i], b[i]);
      *why = buf;
      return false;
    }
  }
  return true;
}

// One ungrouped call of `prog` on M x K with variant v: outputs and dp against the model.
bool run_ungrouped(const Program &prog, int64_t M, int64_t K, const Variant &v, int sm, int rule) {
  const int form = prog.desc.op;
  const bool bwd = cake::sw_backward(form), mxfp8 = prog.desc.family == CAKE_FAMILY_SWIGLU_MXFP8;
  const Inputs x = make_inputs(M, K, (uint32_t)(M * 13 + K + form * 7 + v.clamped * 3));
  std::vector<float> dp((size_t)M), want_dp((size_t)M);
  for (size_t i = 0; i < dp.size(); ++i) memcpy(&dp[i], &kDpPoison, 4);
  want_dp = dp;
  const cake_ref::SwigluVariant mv = model_variant(v, x.p.data());
  const bool is_variant = v.clamped || v.weighted;
  const uint32_t *table = sigmoid_table(v.clamped).data();
  std::string why;
  bool ok = true;
  if (mxfp8) {
    cake::SwigluMxfp8Sizes sz;
    assert_true(cake::swiglu_mxfp8_sizes(form, M, K, &sz));
    std::vector<uint8_t> rq((size_t)sz.row_q_bytes, kPoison), rs((size_t)sz.row_s_bytes, kPoison);
    std::vector<uint8_t> cq((size_t)sz.col_q_bytes, kPoison), cs((size_t)sz.col_s_bytes, kPoison);
    cake_swiglu_mxfp8_params p;
    assert_true(cake::swiglu_mxfp8_fill_params(prog.desc, M, K, x.in.data(), x.grad.data(),
                                               rq.data(), rs.data(), cq.data(), cs.data(), &p));
    p.var = kernel_variant(v, x.p.data(), dp.data(), bwd);
    const cake::LaunchShape ls = cake::swiglu_mxfp8_launch_shape(prog.desc, M, K, sm);
    auto fn = reinterpret_cast<void (*)(cake_swiglu_mxfp8_params)>(prog.fn);
    cake_emu::launch([&] { fn(p); }, ls.grid[0], ls.block);
    cake_ref::Mxfp8Out want;
    cake_ref::swiglu_mxfp8_model(cake::sw_base_form(form), x.in.data(), x.grad.data(), M, K,
                                 table, &want, is_variant ? &mv : nullptr, want_dp.data());
    if (cake::sw_rowwise(form)) {
      ok = ok && bytes_equal(rq, want.row_q, "row_q", &why) &&
           bytes_equal(rs, want.row_s, "row_s", &why);
    }
    if (cake::sw_colwise(form)) {
      ok = ok && bytes_equal(cq, want.col_q, "col_q", &why) &&
           bytes_equal(cs, want.col_s, "col_s", &why);
    }
  } else {
    cake::SwigluFp8Sizes sz;
    assert_true(cake::swiglu_fp8_sizes(form, M, K, &sz));
    std::vector<uint8_t> rq((size_t)sz.row_q_bytes, kPoison), cq((size_t)sz.col_q_bytes, kPoison);
    std::vector<uint32_t> rs((size_t)sz.row_s_bytes / 4, 0xA5A5A5A5u);
    std::vector<uint32_t> cs((size_t)sz.col_s_bytes / 4, 0xA5A5A5A5u);
    cake_swiglu_fp8_params p;
    assert_true(cake::swiglu_fp8_fill_params(prog.desc, M, K, rule, x.in.data(), x.grad.data(),
                                             rq.data(), rs.data(), cq.data(), cs.data(), &p));
    p.var = kernel_variant(v, x.p.data(), dp.data(), bwd);
    const cake::LaunchShape ls = cake::swiglu_fp8_launch_shape(prog.desc, M, K, sm);
    auto fn = reinterpret_cast<void (*)(cake_swiglu_fp8_params)>(prog.fn);
    cake_emu::launch([&] { fn(p); }, ls.grid[0], ls.block);
    cake_ref::Fp8Out want;
    cake_ref::swiglu_fp8_model(cake::sw_base_form(form), x.in.data(), x.grad.data(), M, K, table,
                               rule, &want, is_variant ? &mv : nullptr, want_dp.data());
    const cake_ref::Fp8Compare r = cake_ref::fp8_compare(
        cake::sw_base_form(form), M, K, want, rq.data(), rs.data(), cq.data(), cs.data());
    if (!r.ok) {
      ok = false;
      why = r.detail;
    }
  }
  ok = ok && same_dp(dp, want_dp, &why);
  if (!ok) {
    fprintf(stderr, "%s M=%lld K=%lld %s rule %d sm %d: %s", prog.name, (long long)M,
            (long long)K, v.name, rule, sm, why.c_str());
  }
  return ok;
}

// One grouped call: whole poisoned buffers and dp [T] against the grouped model.
bool run_grouped(const Program &prog, int64_t T, int64_t K, const std::vector<int32_t> &offsets,
                 const Variant &v, int sm) {
  const int form = prog.desc.op, base = cake::sw_base_form(form);
  const bool bwd = cake::sw_backward(form), mxfp8 = prog.desc.family == CAKE_FAMILY_SWIGLU_MXFP8;
  const int64_t E = (int64_t)offsets.size();
  const Inputs x = make_inputs(T, K, (uint32_t)(T * 5 + K + form * 11 + E));
  cake::SwigluGroupedSizes sz;
  assert_true(mxfp8 ? cake::swiglu_mxfp8_grouped_sizes(form, T, K, E, &sz)
                    : cake::swiglu_fp8_grouped_sizes(form, T, K, E, &sz));
  std::vector<uint8_t> rq((size_t)sz.row_q_bytes, kPoison), rs((size_t)sz.row_s_bytes, kPoison);
  std::vector<uint8_t> cq((size_t)sz.col_q_bytes, kPoison), cs((size_t)sz.col_s_bytes, kPoison);
  std::vector<float> dp((size_t)T);
  for (size_t i = 0; i < dp.size(); ++i) memcpy(&dp[i], &kDpPoison, 4);
  std::vector<float> want_dp = dp;
  int32_t status = -1;
  const cake::SwigluGroupedTensors t = {x.in.data(), x.grad.data(), offsets.data(), rq.data(),
                                        rs.data(),   cq.data(),     cs.data(),      &status};
  const cake::LaunchShape ls = cake::swiglu_grouped_launch_shape(prog.desc, T, K, E, sm);
  const cake_ref::SwigluVariant mv = model_variant(v, x.p.data());
  const bool is_variant = v.clamped || v.weighted;
  const uint32_t *table = sigmoid_table(v.clamped).data();
  cake_ref::GroupedOut want;
  if (mxfp8) {
    cake_swiglu_mxfp8_grouped_params p;
    assert_true(cake::swiglu_mxfp8_grouped_fill_params(prog.desc, T, K, E, t, &p));
    p.base.var = kernel_variant(v, x.p.data(), dp.data(), bwd);
    auto fn = reinterpret_cast<void (*)(cake_swiglu_mxfp8_grouped_params)>(prog.fn);
    cake_emu::launch([&] { fn(p); }, ls.grid[0], ls.block);
    cake_ref::swiglu_mxfp8_grouped_model(base, x.in.data(), x.grad.data(), T, K, offsets, table,
                                         kPoison, &want, is_variant ? &mv : nullptr,
                                         want_dp.data());
  } else {
    cake_swiglu_fp8_grouped_params p;
    assert_true(cake::swiglu_fp8_grouped_fill_params(prog.desc, T, K, E, 0, t, &p));
    p.base.var = kernel_variant(v, x.p.data(), dp.data(), bwd);
    auto fn = reinterpret_cast<void (*)(cake_swiglu_fp8_grouped_params)>(prog.fn);
    cake_emu::launch([&] { fn(p); }, ls.grid[0], ls.block);
    cake_ref::swiglu_fp8_grouped_model(base, x.in.data(), x.grad.data(), T, K, offsets, table, 0,
                                       kPoison, &want, is_variant ? &mv : nullptr,
                                       want_dp.data());
  }
  const cake_ref::GroupedCompare r =
      cake_ref::grouped_compare(base, want, rq.data(), rs.data(), cq.data(), cs.data());
  std::string why = r.detail;
  const bool ok = r.ok && same_dp(dp, want_dp, &why) &&
                  status == cake_ref::grouped_rows(offsets, T).status;
  if (!ok) {
    fprintf(stderr, "%s T=%lld K=%lld E=%lld %s sm %d: status %d, %s", prog.name, (long long)T,
            (long long)K, (long long)E, v.name, sm, status, why.c_str());
  }
  return ok;
}

void test_model_dp_order(void **) {
  // dp's order is the spec's: a tree in each 32-column block, blocks in order from +0. Terms
  // chosen so that another order gives other bits: 1, then 2^-24 thirty-one times in block 0
  // (the tree keeps them: 31 * 2^-24 added as a sum), 2^24 and -2^24 in blocks 1 and 2.
  std::vector<float> t(96, 0.0f);
  t[0] = 1.0f;
  for (int i = 1; i < 32; ++i) t[i] = ldexpf(1.0f, -24);
  t[32] = ldexpf(1.0f, 24);
  t[64] = -ldexpf(1.0f, 24);
  float seq = 0.0f;
  for (float v : t) seq += v;
  const float got = cake_ref::variant_dp_sum(t.data(), 96);
  assert_true(got != seq);  // the tree is not the left-to-right sum
  // Block 0's tree: 1 + (15 * 2^-24 + ...) keeps the small terms; blocks 1, 2 cancel after it.
  float b0 = 0.0f;
  {
    std::vector<float> u(t.begin(), t.begin() + 32);
    for (int n = 32; n > 1; n /= 2) {
      for (int i = 0; i < n / 2; ++i) u[i] = u[2 * i] + u[2 * i + 1];
    }
    b0 = u[0];
  }
  assert_true(got == ((0.0f + b0) + ldexpf(1.0f, 24)) + -ldexpf(1.0f, 24));
}

void test_ungrouped(void **) {
  int n = 0;
  for (const Program &prog : kPrograms) {
    if (cake::sw_grouped(prog.desc.op)) continue;
    const bool mxfp8 = prog.desc.family == CAKE_FAMILY_SWIGLU_MXFP8;
    assert_true(mxfp8 ? cake::swiglu_mxfp8_program_ok(prog.desc)
                      : cake::swiglu_fp8_program_ok(prog.desc));
    assert_true(cake::swiglu_program_variant(prog.desc));
    // MXFP8: partial k-tiles (K = 96 on 64-column tiles, 320 on 256) and row tiles; FP8
    // blockwise: M not a multiple of 128 (the tail), several k-tiles.
    const int64_t shapes[2][2] = {{mxfp8 ? 64 : 129, mxfp8 ? 96 : 256},
                                  {mxfp8 ? 96 : 200, mxfp8 ? 320 : 384}};
    for (const auto &s : shapes) {
      for (const Variant &v : kVariants) {
        for (int sm : {1, 3}) {
          assert_true(run_ungrouped(prog, s[0], s[1], v, sm, sm == 3 ? 1 : 0));
          ++n;
        }
      }
    }
  }
  print_message("%d ungrouped variant cases\n", n);
}

void test_grouped(void **) {
  int n = 0;
  for (const Program &prog : kPrograms) {
    if (!cake::sw_grouped(prog.desc.op)) continue;
    const bool mxfp8 = prog.desc.family == CAKE_FAMILY_SWIGLU_MXFP8;
    assert_true(mxfp8 ? cake::swiglu_mxfp8_program_ok(prog.desc)
                      : cake::swiglu_fp8_program_ok(prog.desc));
    const int64_t T = 420, K = mxfp8 ? 96 : 256;
    for (const Variant &v : kVariants) {
      for (int sm : {1, 2}) {
        assert_true(run_grouped(prog, T, K, cake_ref::grouped_test_offsets(T, 7, 3 + sm), v, sm));
        ++n;
      }
    }
  }
  print_message("%d grouped variant cases\n", n);
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_model_dp_order),
      cmocka_unit_test(test_ungrouped),
      cmocka_unit_test(test_grouped),
  };
  return cmocka_run_group_tests_name("swiglu_variant_emulated", tests, NULL, NULL);
}
