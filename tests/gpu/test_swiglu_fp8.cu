// SwiGLU + FP8 blockwise 1x128 on the GPU (docs/spec/fp8-blockwise.md): the hardware E4M3
// conversion of FP32 pairs against the software encoding on all 2^32 FP32 inputs; all six forms
// and both scale rules, every program of every table forced (the Blackwell and Rubin tables
// through their sm_90 cross-check images), byte-exact (data and scales) against the host model
// driven by the device's measured sigmoid table, on shapes with M and K not multiples of 512,
// block-scaled inputs over [-100, 100], NaN/Inf blocks, all-zero blocks and blocks below the
// floor; any M through the tail programs; both == rowwise + colwise; the format's semantics on
// the device's bytes; a large shape; validation writes nothing. Skips without a GPU.
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_common.h"
#include "mxfp8_encode.h"
#include "swiglu_gpu_common.h"
#include "swiglu_fp8_ref.h"
#include "swiglu_mxfp8_ref.h"
#include "swiglu_sigmoid_table.cuh"

using cake_test::DeviceBuffer;

namespace {

using cake_swiglu_gpu::g_cross;
using cake_swiglu_gpu::g_handle;
using cake_swiglu_gpu::g_table;
using cake_swiglu_gpu::setup;
using cake_swiglu_gpu::teardown;

uint16_t bf16(float f) { return cake_test::float_to_bf16_rne(f); }

// Normals times 2^k per 128-column block (k uniform in [-kmax, kmax]) with a jitter of +-4
// binades every 16 columns when kmax > 0.
std::vector<uint16_t> random_input(int64_t rows, int64_t cols, int kmax) {
  return cake_swiglu_gpu::random_input(rows, cols, kmax, 128, true);
}

cake_swiglu_fp8_desc make_desc(int64_t M, int64_t K, int form, int rule, const char *program) {
  cake_swiglu_fp8_desc d;
  cake_swiglu_fp8_desc_init(&d);
  d.m = M;
  d.k = K;
  d.orientation = static_cast<cake_mxfp8_orientation_t>(form % 3 + 1);
  d.scale_rule = static_cast<cake_fp8_scale_rule_t>(rule);
  d.program = program;
  return d;
}

cake_swiglu_fp8_sizes sizes_of(int64_t M, int64_t K, bool backward) {
  cake_swiglu_fp8_desc d = make_desc(M, K, 0, 0, nullptr);
  cake_swiglu_fp8_sizes s;
  cake_swiglu_fp8_sizes_init(&s);
  CAKE_OK(cake_swiglu_fp8_buffer_sizes(&d, backward ? 1 : 0, &s));
  return s;
}

using Device = cake_swiglu_gpu::Device<uint32_t, cake_swiglu_fp8_sizes>;
using Host = cake_swiglu_gpu::Host<uint32_t>;

Host run(cake_handle_t h, Device &dev, int64_t M, int64_t K, int form, int rule,
         const char *program) {
  return cake_swiglu_gpu::run(h, dev, make_desc(M, K, form, rule, program), form,
                              &cake_swiglu_fp8_forward, &cake_swiglu_fp8_backward, nullptr);
}

template <class T>
const T *ptr(const std::vector<T> &v) {
  return v.empty() ? nullptr : v.data();
}

void expect_model(int form, int rule, int64_t M, int64_t K, const cake_ref::Fp8Out &want,
                  const Host &got, const std::string &label) {
  const cake_ref::Fp8Compare r = cake_ref::fp8_compare(form, M, K, want, ptr(got.row_q),
                                                       ptr(got.row_s), ptr(got.col_q),
                                                       ptr(got.col_s));
  if (!r.ok) {
    print_error("%s form %d rule %d M=%lld K=%lld: %lld of %lld bytes differ\n%s", label.c_str(),
                form, rule, (long long)M, (long long)K, (long long)r.differing,
                (long long)r.bytes, r.detail.c_str());
    fail();
  }
}

int every_program(cake_handle_t h, Device &dev, int64_t M, int64_t K, int form, int rule,
                  const cake_ref::Fp8Out &want) {
  int n = 0;
  for (int i = 0; i < cake_program_count(h); ++i) {
    const char *name = cake_program_name(h, i);
    const cake_swiglu_fp8_desc d = make_desc(M, K, form, rule, name);
    cake_program_info info;
    cake_program_info_init(&info);
    if (cake_swiglu_fp8_query(h, &d, form >= 3, &info) != CAKE_STATUS_SUCCESS) continue;
    expect_model(form, rule, M, K, want, run(h, dev, M, K, form, rule, name), name);
    ++n;
  }
  return n;
}

// The format's semantics on the device's bytes (independent of the rule's arithmetic).
void expect_semantics(int form, int rule, int64_t M, int64_t K, const std::vector<uint16_t> &y,
                      const Host &got) {
  const int64_t O = form >= 3 ? 2 * K : K;
  if (form % 3 != 1) {
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t j = 0; j < O / 128; ++j) {
        const std::string e = cake_ref::fp8_block_semantics(
            y.data() + m * O + j * 128, 128, 1, got.row_q.data() + m * O + j * 128, 1,
            got.row_s[j * M + m], rule);
        if (!e.empty()) {
          print_error("form %d rule %d row block (%lld, %lld): %s\n", form, rule, (long long)m,
                      (long long)j, e.c_str());
          fail();
        }
      }
    }
  }
  if (form % 3 != 0) {
    for (int64_t o = 0; o < O; ++o) {
      for (int64_t i = 0; i < M / 128; ++i) {
        const std::string e = cake_ref::fp8_block_semantics(
            y.data() + i * 128 * O + o, 128, O, got.col_q.data() + o * M + i * 128, 1,
            got.col_s[i * O + o], rule);
        if (!e.empty()) {
          print_error("form %d rule %d col block (%lld, %lld): %s\n", form, rule, (long long)o,
                      (long long)i, e.c_str());
          fail();
        }
      }
    }
  }
}

// All six forms and both rules on one input: model, routed, every program of every table,
// both == rowwise + colwise, semantics.
int check_all_forms(int64_t M, int64_t K, const std::vector<uint16_t> &in,
                    const std::vector<uint16_t> &grad, bool cross, bool semantics) {
  Device dev(M, K, sizes_of(M, K, true));
  dev.in.upload(in);
  dev.grad.upload(grad);
  int programs = 0;
  for (int rule = 0; rule < 2; ++rule) {
    for (int dir = 0; dir < 2; ++dir) {
      Host parts[3];
      std::vector<uint16_t> y;
      if (semantics) {
        cake_ref::swiglu_y(dir == 1, in.data(), grad.data(), M, K, g_table.data(), &y);
      }
      for (int o = 0; o < 3; ++o) {
        const int form = dir * 3 + o;
        cake_ref::Fp8Out want;
        cake_ref::swiglu_fp8_model(form, in.data(), dir ? grad.data() : nullptr, M, K,
                                   g_table.data(), rule, &want);
        parts[o] = run(g_handle, dev, M, K, form, rule, nullptr);
        expect_model(form, rule, M, K, want, parts[o], "routed");
        if (semantics) expect_semantics(form, rule, M, K, y, parts[o]);
        programs += every_program(g_handle, dev, M, K, form, rule, want);
        if (cross) {
          for (cake_handle_t h : g_cross) programs += every_program(h, dev, M, K, form, rule, want);
        }
      }
      if (parts[2].row_q != parts[0].row_q || parts[2].row_s != parts[0].row_s ||
          parts[2].col_q != parts[1].col_q || parts[2].col_s != parts[1].col_s) {
        print_error("rule %d dir %d: both != rowwise + colwise\n", rule, dir);
        fail();
      }
    }
  }
  return programs;
}

__global__ void fp8_cvt_all_f32(unsigned long long *mismatches, uint32_t *first) {
  // Every FP32 bit pattern once, as the pairs (2i, 2i + 1), through the
  // hardware conversion, against the software encoding compiled for the device.
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  unsigned long long bad = 0;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (uint64_t(1) << 31);
       i += stride) {
    const uint32_t a = uint32_t(2 * i), b = uint32_t(2 * i + 1);
    const float fa = __uint_as_float(a), fb = __uint_as_float(b);
    const uint16_t hw = cake::mx::e4m3x2_rn_satfinite(fa, fb);
    const uint16_t sw = uint16_t(cake::mx::e4m3_rn_satfinite(fa) |
                                 (uint32_t(cake::mx::e4m3_rn_satfinite(fb)) << 8));
    if (hw != sw) {
      ++bad;
      atomicCAS(first, 0u, a | 1u);
    }
  }
  if (bad) atomicAdd(mismatches, bad);
}

}  // namespace

// Must run first: the model of every later test uses the measured table.
static void test_sigmoid_table_and_cvt(void **) {
  SKIP_WITHOUT_GPU();
  cake_swiglu_gpu::require_sigmoid_table(cake_swiglu_gpu::measure_sigmoid_table());
  DeviceBuffer<unsigned long long> bad(1, 0);
  DeviceBuffer<uint32_t> first(1, 0);
  fp8_cvt_all_f32<<<4096, 256>>>(bad.ptr, first.ptr);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  const unsigned long long n = bad.download()[0];
  print_message("e4m3 cvt of FP32 pairs: %llu of 2^32 inputs differ from the software encoding\n", n);
  if (n != 0) {
    print_error("first differing pair near FP32 bits 0x%08x\n", first.download()[0] & ~1u);
    fail();
  }
}

static void test_shapes_every_program(void **) {
  SKIP_WITHOUT_GPU();
  assert_int_equal(g_table.size(), 65536);
  const int64_t sizes[][2] = {{128, 128}, {384, 640}, {640, 384}, {1152, 256}, {256, 1152}};
  int programs = 0, shapes = 0;
  for (const auto &s : sizes) {
    const int64_t M = s[0], K = s[1];
    const std::vector<uint16_t> in = random_input(M, 2 * K, shapes % 2 ? 100 : 0);
    const std::vector<uint16_t> grad = random_input(M, K, shapes % 2 ? 30 : 0);
    programs += check_all_forms(M, K, in, grad, true, shapes < 3);
    ++shapes;
  }
  print_message("%d shapes x 6 forms x 2 rules: %d forced program runs byte-exact\n", shapes,
                programs);
}

// Any M (a partial last row tile, col_q columns not 16-byte aligned, a partial last colwise
// block): the tail programs of every table byte-exact; the aligned programs refuse the shapes.
static void test_tail_shapes(void **) {
  SKIP_WITHOUT_GPU();
  assert_int_equal(g_table.size(), 65536);
  const int64_t sizes[][2] = {{1, 128}, {33, 256}, {127, 128}, {129, 384}, {200, 256}, {1000, 640}};
  int programs = 0, shapes = 0;
  for (const auto &s : sizes) {
    const int64_t M = s[0], K = s[1];
    const std::vector<uint16_t> in = random_input(M, 2 * K, shapes % 2 ? 100 : 0);
    const std::vector<uint16_t> grad = random_input(M, K, shapes % 2 ? 30 : 0);
    programs += check_all_forms(M, K, in, grad, true, false);
    ++shapes;
  }
  print_message("%d tail shapes x 6 forms x 2 rules: %d forced program runs byte-exact\n",
                shapes, programs);
  // Per table, per form, per rule: exactly two programs serve, its tail program (routed and
  // forced) and its variant program, which serves every shape (forced).
  assert_int_equal(programs, shapes * 6 * 2 * 2 * (1 + (int)g_cross.size()));
}

static void test_special_blocks(void **) {
  SKIP_WITHOUT_GPU();
  const int64_t M = 384, K = 384;
  std::vector<uint16_t> in = random_input(M, 2 * K, 100);
  std::vector<uint16_t> grad = random_input(M, K, 20);
  auto G = [&](int64_t m, int64_t k) -> uint16_t & { return in[size_t(m) * 2 * K + k]; };
  auto U = [&](int64_t m, int64_t k) -> uint16_t & { return in[size_t(m) * 2 * K + K + k]; };
  for (int64_t k = 0; k < 128; ++k) {
    G(0, k) = 0;                                       // an all-zero row block
    G(1, 128 + k) = uint16_t(0x0001 + k);              // BF16 subnormal gates
    U(1, 128 + k) = uint16_t(0x0040 + k);              // and subnormal ups
    G(2, k) = bf16(1.0f + k / 256.0f);                 // a block below the amax floor
    U(2, k) = bf16(std::ldexp(1.0f + k / 128.0f, -124 - int(k % 9)));
    G(3, 256 + k) = (k & 1) ? 0x7f7f : 0xff7f;         // |g| = BF16 max
    G(4, k) = bf16(-90.0f - k);                        // gates on the band path
    G(5, 128 + k) = bf16(-200.0f * (k + 1));
  }
  for (int64_t m = 128; m < 256; ++m) G(m, 300) = 0;    // an all-zero column block
  for (int64_t m = 128; m < 256; ++m) U(m, 301) = 0x7f7f;  // a huge column block (saturation)
  G(6, 7) = 0x7fc0;    // NaN gate
  U(7, 40) = 0x7f80;   // +Inf up
  U(8, 300) = 0xff80;  // -Inf up
  G(9, 200) = 0x7f80;  // +Inf gate
  grad[size_t(10) * K + 5] = 0xffc0;  // NaN grad
  const int n = check_all_forms(M, K, in, grad, true, true);
  print_message("special blocks: %d program runs byte-exact\n", n);
}

static void test_large_shape(void **) {
  SKIP_WITHOUT_GPU();
  const int64_t M = 4096, K = 7168;
  const std::vector<uint16_t> in = random_input(M, 2 * K, 8);
  const std::vector<uint16_t> grad = random_input(M, K, 0);
  const int n = check_all_forms(M, K, in, grad, false, false);
  print_message("4096x7168: %d program runs byte-exact\n", n);
}

// A refused call writes nothing.
static void test_validation_writes_nothing(void **) {
  SKIP_WITHOUT_GPU();
  const int64_t M = 128, K = 128;
  Device dev(M, K, sizes_of(M, K, true));
  dev.poison();
  cake_swiglu_fp8_desc d = make_desc(M, K, 2, 0, nullptr);
  d.scale_rule = static_cast<cake_fp8_scale_rule_t>(7);
  assert_int_equal(cake_swiglu_fp8_forward(g_handle, &d, dev.in.ptr, dev.row_q.ptr, dev.row_s.ptr,
                                           dev.col_q.ptr, dev.col_s.ptr, nullptr),
                   CAKE_STATUS_INVALID_ARGUMENT);
  d = make_desc(M, K, 2, 0, nullptr);
  std::vector<uint8_t> host(64);
  assert_int_equal(cake_swiglu_fp8_forward(g_handle, &d, dev.in.ptr, host.data(), dev.row_s.ptr,
                                           dev.col_q.ptr, dev.col_s.ptr, nullptr),
                   CAKE_STATUS_INVALID_ARGUMENT);
  CUDA_OK(cudaDeviceSynchronize());
  for (uint8_t b : dev.row_q.download()) assert_int_equal(b, 0xa5);
  for (uint8_t b : dev.col_q.download()) assert_int_equal(b, 0xa5);
  for (uint32_t s : dev.col_s.download()) assert_int_equal(s, 0xa5a5a5a5u);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sigmoid_table_and_cvt),
      cmocka_unit_test(test_shapes_every_program),
      cmocka_unit_test(test_tail_shapes),
      cmocka_unit_test(test_special_blocks),
      cmocka_unit_test(test_large_shape),
      cmocka_unit_test(test_validation_writes_nothing),
  };
  return cmocka_run_group_tests_name("swiglu_fp8", tests, setup, teardown);
}
