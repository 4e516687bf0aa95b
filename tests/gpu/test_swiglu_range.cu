// The SwiGLU range rows on the GPU (docs/spec/swiglu-mxfp8.md, "Range"): every finite BF16 gate
// against every pair of BF16 max, -max, the smallest normal and 0 as up and grad, in two
// layouts (tests/reference/swiglu_range_ref.h), through every program of every form of both
// SwiGLU families (MXFP8; FP8 blockwise with both scale rules) of every table (the Blackwell
// and Rubin tables through their sm_90 cross-check images), forced by name: the bytes of the
// host model driven by the device's sigmoid table (its wide dgate included), no NaN byte or
// scale outside a block that holds an Inf, and the model's Y free of NaN and within its
// tolerance of float64 wherever that is finite. Skips without a GPU.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "gpu_common.h"
#include "swiglu_fp8_ref.h"
#include "swiglu_gpu_common.h"
#include "swiglu_mxfp8_gpu_checks.h"
#include "swiglu_mxfp8_ref.h"
#include "swiglu_range_ref.h"
#include "swiglu_sigmoid_table.cuh"

namespace {

using cake_swiglu_gpu::g_cross;
using cake_swiglu_gpu::g_handle;
using cake_swiglu_gpu::g_table;
using cake_swiglu_gpu::setup;
using cake_swiglu_gpu::teardown;
using cake_swiglu_gpu::test_sigmoid_table;

constexpr int64_t kM = 1024, kK = 1024;  // 16 x 65,280 values and a few more

template <class T>
const T *ptr(const std::vector<T> &v) {
  return v.empty() ? nullptr : v.data();
}

std::vector<cake_handle_t> handles() {
  std::vector<cake_handle_t> h = {g_handle};
  h.insert(h.end(), g_cross.begin(), g_cross.end());
  return h;
}

void expect_range(const cake_ref::RangeReport &r, const std::string &label) {
  if (!r.ok) {
    print_error("%s: %lld NaN, %lld wrong Inf, %lld missing Inf, %lld far of %lld\n%s",
                label.c_str(), (long long)r.nan, (long long)r.wrong_inf, (long long)r.missing_inf,
                (long long)r.far, (long long)r.checked, r.detail.c_str());
    fail();
  }
}

// The range rows of one layout: inputs, and the model's Y of each direction checked.
struct Rows {
  std::vector<uint16_t> in, grad, y[2];
  explicit Rows(int layout) {
    cake_ref::swiglu_range_inputs(layout, cake_ref::finite_bf16_values(), kM, kK, &in, &grad);
    for (int bwd = 0; bwd < 2; ++bwd) {
      cake_ref::swiglu_y(bwd == 1, in.data(), grad.data(), kM, kK, g_table.data(), &y[bwd]);
      const cake_ref::RangeReport r =
          cake_ref::check_range_y(bwd == 1, in.data(), grad.data(), kM, kK, g_table.data(), y[bwd]);
      expect_range(r, "model Y layout " + std::to_string(layout) + " backward " +
                          std::to_string(bwd));
      if (bwd == 1 && r.wide == 0) {
        print_error("layout %d: no dact * grad overflows FP32 with the device's table\n", layout);
        fail();
      }
    }
  }
};

// ---- MXFP8 ----
using MxDevice = cake_swiglu_gpu::Device<uint8_t, cake_swiglu_mxfp8_sizes>;

cake_swiglu_mxfp8_desc mx_desc(int form, const char *program) {
  cake_swiglu_mxfp8_desc d;
  cake_swiglu_mxfp8_desc_init(&d);
  d.m = kM;
  d.k = kK;
  d.orientation = static_cast<cake_mxfp8_orientation_t>(form % 3 + 1);
  d.program = program;
  return d;
}

int mx_every_program(MxDevice &dev, const Rows &rows, int form, int layout) {
  cake_ref::Mxfp8Out want;
  cake_ref::swiglu_mxfp8_model(form, rows.in.data(), form >= 3 ? rows.grad.data() : nullptr, kM,
                               kK, g_table.data(), &want);
  int n = 0;
  for (cake_handle_t h : handles()) {
    for (int i = 0; i < cake_program_count(h); ++i) {
      const char *name = cake_program_name(h, i);
      const cake_swiglu_mxfp8_desc d = mx_desc(form, name);
      cake_program_info info;
      cake_program_info_init(&info);
      if (cake_swiglu_mxfp8_query(h, &d, form >= 3, &info) != CAKE_STATUS_SUCCESS) continue;
      const cake_swiglu_gpu::Host<uint8_t> got =
          cake_swiglu_gpu::run(h, dev, d, form, &cake_swiglu_mxfp8_forward,
                               &cake_swiglu_mxfp8_backward, nullptr);
      const std::string label =
          std::string(name) + " form " + std::to_string(form) + " layout " + std::to_string(layout);
      const cake_gpu_checks::CompareReport r = cake_gpu_checks::compare_outputs(
          form, kM, kK, want, ptr(got.row_q), ptr(got.row_s), ptr(got.col_q), ptr(got.col_s));
      if (!r.ok) {
        print_error("%s: %s\n", label.c_str(), r.summary().c_str());
        fail();
      }
      expect_range(cake_ref::check_range_mxfp8(form, kM, kK, rows.y[form >= 3], ptr(got.row_q),
                                               ptr(got.row_s), ptr(got.col_q), ptr(got.col_s)),
                   label);
      ++n;
    }
  }
  return n;
}

// ---- FP8 blockwise ----
using F8Device = cake_swiglu_gpu::Device<uint32_t, cake_swiglu_fp8_sizes>;

cake_swiglu_fp8_desc f8_desc(int form, int rule, const char *program) {
  cake_swiglu_fp8_desc d;
  cake_swiglu_fp8_desc_init(&d);
  d.m = kM;
  d.k = kK;
  d.orientation = static_cast<cake_mxfp8_orientation_t>(form % 3 + 1);
  d.scale_rule = static_cast<cake_fp8_scale_rule_t>(rule);
  d.program = program;
  return d;
}

int f8_every_program(F8Device &dev, const Rows &rows, int form, int rule, int layout) {
  cake_ref::Fp8Out want;
  cake_ref::swiglu_fp8_model(form, rows.in.data(), form >= 3 ? rows.grad.data() : nullptr, kM, kK,
                             g_table.data(), rule, &want);
  int n = 0;
  for (cake_handle_t h : handles()) {
    for (int i = 0; i < cake_program_count(h); ++i) {
      const char *name = cake_program_name(h, i);
      const cake_swiglu_fp8_desc d = f8_desc(form, rule, name);
      cake_program_info info;
      cake_program_info_init(&info);
      if (cake_swiglu_fp8_query(h, &d, form >= 3, &info) != CAKE_STATUS_SUCCESS) continue;
      const cake_swiglu_gpu::Host<uint32_t> got = cake_swiglu_gpu::run(
          h, dev, d, form, &cake_swiglu_fp8_forward, &cake_swiglu_fp8_backward, nullptr);
      const std::string label = std::string(name) + " form " + std::to_string(form) + " rule " +
                                std::to_string(rule) + " layout " + std::to_string(layout);
      const cake_ref::Fp8Compare r = cake_ref::fp8_compare(
          form, kM, kK, want, ptr(got.row_q), ptr(got.row_s), ptr(got.col_q), ptr(got.col_s));
      if (!r.ok) {
        print_error("%s: %lld of %lld bytes differ\n%s", label.c_str(), (long long)r.differing,
                    (long long)r.bytes, r.detail.c_str());
        fail();
      }
      expect_range(cake_ref::check_range_fp8(form, kM, kK, rows.y[form >= 3], ptr(got.row_q),
                                             ptr(got.row_s), ptr(got.col_q), ptr(got.col_s)),
                   label);
      ++n;
    }
  }
  return n;
}

// Buffers for the backward (the larger outputs), which every form then fits.
cake_swiglu_mxfp8_sizes mx_sizes() {
  const cake_swiglu_mxfp8_desc d = mx_desc(0, nullptr);
  cake_swiglu_mxfp8_sizes s;
  cake_swiglu_mxfp8_sizes_init(&s);
  CAKE_OK(cake_swiglu_mxfp8_buffer_sizes(&d, 1, &s));
  return s;
}

cake_swiglu_fp8_sizes f8_sizes() {
  const cake_swiglu_fp8_desc d = f8_desc(0, 0, nullptr);
  cake_swiglu_fp8_sizes s;
  cake_swiglu_fp8_sizes_init(&s);
  CAKE_OK(cake_swiglu_fp8_buffer_sizes(&d, 1, &s));
  return s;
}

}  // namespace

static void test_mxfp8_range_rows(void **) {
  SKIP_WITHOUT_GPU();
  assert_int_equal(g_table.size(), 65536);
  MxDevice dev(kM, kK, mx_sizes());
  int runs = 0;
  for (int layout = 0; layout < 2; ++layout) {
    const Rows rows(layout);
    dev.in.upload(rows.in);
    dev.grad.upload(rows.grad);
    for (int form = 0; form < 6; ++form) runs += mx_every_program(dev, rows, form, layout);
  }
  print_message("MXFP8 range rows: %d forced program runs (2 layouts x 6 forms)\n", runs);
  assert_true(runs >= 2 * 6 * (1 + (int)g_cross.size()));
}

static void test_fp8_range_rows(void **) {
  SKIP_WITHOUT_GPU();
  assert_int_equal(g_table.size(), 65536);
  F8Device dev(kM, kK, f8_sizes());
  int runs = 0;
  for (int layout = 0; layout < 2; ++layout) {
    const Rows rows(layout);
    dev.in.upload(rows.in);
    dev.grad.upload(rows.grad);
    for (int rule = 0; rule < 2; ++rule) {
      for (int form = 0; form < 6; ++form) runs += f8_every_program(dev, rows, form, rule, layout);
    }
  }
  print_message("FP8 blockwise range rows: %d forced program runs (2 layouts x 2 rules x 6 "
                "forms)\n",
                runs);
  assert_true(runs >= 2 * 2 * 6 * (1 + (int)g_cross.size()));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sigmoid_table),
      cmocka_unit_test(test_mxfp8_range_rows),
      cmocka_unit_test(test_fp8_range_rows),
  };
  return cmocka_run_group_tests_name("swiglu_range", tests, setup, teardown);
}
